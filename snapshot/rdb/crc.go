package rdb

import (
	"hash"
	stdcrc "hash/crc64"
)

// Redis's checksum is CRC-64/Jones (reflected, poly 0xad93d23594c935a9,
// init and xor-out 0 as Redis uses it). hdt3213/rdb's crc64jones computes
// the same value but compares its 2 KiB table on every call of 64 bytes or
// more and goes byte by byte below that, which made the checksum 8-9% of a
// save's and a load's CPU (RDB records are written in small pieces). This
// one always runs slicing-by-8 on tables built once.

// jonesTables are the slicing-by-8 tables of the reflected Jones polynomial.
var jonesTables = func() *[8]stdcrc.Table {
	var t [8]stdcrc.Table
	t[0] = *stdcrc.MakeTable(0x95ac9329ac4bc9b5) // 0xad93d23594c935a9 bit-reversed
	for i := 0; i < 256; i++ {
		crc := t[0][i]
		for j := 1; j < 8; j++ {
			crc = t[0][crc&0xff] ^ (crc >> 8)
			t[j][i] = crc
		}
	}
	return &t
}()

// crcUpdate adds p to crc.
func crcUpdate(crc uint64, p []byte) uint64 {
	t := jonesTables
	for len(p) >= 8 {
		crc ^= uint64(p[0]) | uint64(p[1])<<8 | uint64(p[2])<<16 | uint64(p[3])<<24 |
			uint64(p[4])<<32 | uint64(p[5])<<40 | uint64(p[6])<<48 | uint64(p[7])<<56
		crc = t[7][crc&0xff] ^ t[6][(crc>>8)&0xff] ^ t[5][(crc>>16)&0xff] ^ t[4][(crc>>24)&0xff] ^
			t[3][(crc>>32)&0xff] ^ t[2][(crc>>40)&0xff] ^ t[1][(crc>>48)&0xff] ^ t[0][crc>>56]
		p = p[8:]
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
