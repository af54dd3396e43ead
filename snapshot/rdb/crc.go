package rdb

import (
	"encoding/binary"
	"hash"
	stdcrc "hash/crc64"
)

// Redis's checksum is CRC-64/Jones (reflected, poly 0xad93d23594c935a9,
// init and xor-out 0 as Redis uses it). hdt3213/rdb's crc64jones computes
// the same value but compares its 2 KiB table on every call of 64 bytes or
// more and goes byte by byte below that, which made the checksum 8-9% of a
// save's and a load's CPU (RDB records are written in small pieces). This
// one runs slicing-by-16 on tables built once: two independent 8-byte
// halves per step, so the CPU overlaps their table lookups (slicing-by-8
// waits for each step's result before the next). That still tops out near
// 1.5 GB/s, so on amd64 with PCLMULQDQ long inputs are folded with carry-
// less multiplication instead (crcfold.go, crcfold_amd64.s).

// jonesTables are the slicing-by-16 tables of the reflected Jones
// polynomial: jonesTables[j][b] is the CRC of byte b followed by j zero bytes.
var jonesTables = func() *[16]stdcrc.Table {
	var t [16]stdcrc.Table
	t[0] = *stdcrc.MakeTable(0x95ac9329ac4bc9b5) // 0xad93d23594c935a9 bit-reversed
	for i := 0; i < 256; i++ {
		crc := t[0][i]
		for j := 1; j < 16; j++ {
			crc = t[0][crc&0xff] ^ (crc >> 8)
			t[j][i] = crc
		}
	}
	return &t
}()

// crcTable adds p to crc with the slicing-by-16 tables: the whole CRC on
// machines without carry-less multiplication, and the short inputs and the
// last few bytes of long ones where folding does not pay (crcUpdate).
func crcTable(crc uint64, p []byte) uint64 {
	t := jonesTables
	for len(p) >= 16 {
		a := crc ^ binary.LittleEndian.Uint64(p)
		b := binary.LittleEndian.Uint64(p[8:])
		crc = t[15][a&0xff] ^ t[14][(a>>8)&0xff] ^ t[13][(a>>16)&0xff] ^ t[12][(a>>24)&0xff] ^
			t[11][(a>>32)&0xff] ^ t[10][(a>>40)&0xff] ^ t[9][(a>>48)&0xff] ^ t[8][a>>56] ^
			t[7][b&0xff] ^ t[6][(b>>8)&0xff] ^ t[5][(b>>16)&0xff] ^ t[4][(b>>24)&0xff] ^
			t[3][(b>>32)&0xff] ^ t[2][(b>>40)&0xff] ^ t[1][(b>>48)&0xff] ^ t[0][b>>56]
		p = p[16:]
	}
	for _, v := range p {
		crc = t[0][byte(crc)^v] ^ (crc >> 8)
	}
	return crc
}

// jonesDigest is a hash.Hash64 of Redis's CRC64.
type jonesDigest struct{ crc uint64 }

func (d *jonesDigest) Write(p []byte) (int, error) { d.crc = crcUpdate(d.crc, p); return len(p), nil }
func (d *jonesDigest) Sum64() uint64               { return d.crc }
func (d *jonesDigest) Reset()                      { d.crc = 0 }
func (d *jonesDigest) Size() int                   { return 8 }
func (d *jonesDigest) BlockSize() int              { return 8 }
func (d *jonesDigest) Sum(in []byte) []byte {
	s := d.crc
	return append(in, byte(s), byte(s>>8), byte(s>>16), byte(s>>24), byte(s>>32), byte(s>>40), byte(s>>48), byte(s>>56))
}

var _ hash.Hash64 = (*jonesDigest)(nil)
