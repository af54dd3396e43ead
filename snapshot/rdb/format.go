// Package rdb reads and writes Redis RDB files and DUMP/RESTORE payloads.
//
// The Writer is our own streaming encoder: it writes RDB 10 by default (the
// newest version Redis 7.0 reads) and RDB 11 or 12 on request, with the same
// compact encodings Redis chooses (integer and LZF strings, intsets, listpacks,
// quicklist 2 nodes), and a real CRC64 (Jones) trailer.
//
// The reader (Load, Restore) frames every record itself (offsets, lengths,
// checksum, limits on allocations) and hands the validated record bytes to
// github.com/hdt3213/rdb's decoder, which decodes the values (ziplists,
// listpacks, intsets, quicklists, ...). Streams are parsed here instead and
// their node listpacks passed on as they are (stream.go). Plain string
// records and AUX fields, the bulk of most files, it decodes itself too
// (fast.go: in place in the input buffer when a record lies in it whole;
// lzf.go), so loading strings allocates nothing per key with Options.Reuse.
// Invariants: every byte of the file but the trailing checksum enters the
// CRC exactly once, whichever path consumes it (sumRec/cut); the in-place
// path never reports an error of its own: whatever it does not take, the
// checked path reads again and reports with its offset.
package rdb

import (
	"encoding/binary"
	"hash"
	"math"
	"strconv"
)

// Opcodes and value types (Redis rdb.h).
const (
	op243          = 243 // Redis 8.2 RDB_OPCODE_KEY_META; Valkey 9 RDB_OPCODE_SLOT_IMPORT
	opSlotInfo     = 244 // Redis 7.4 and Valkey 9 cluster: slot info, safe to skip
	opFunction2    = 245
	opFunctionPre  = 246
	opModuleAux    = 247
	opIdle         = 248
	opFreq         = 249
	opAux          = 250
	opResizeDB     = 251
	opExpireTimeMs = 252
	opExpireTime   = 253
	opSelectDB     = 254
	opEOF          = 255

	typeString           = 0
	typeList             = 1
	typeSet              = 2
	typeZSet             = 3
	typeHash             = 4
	typeZSet2            = 5
	typeModule           = 6
	typeModule2          = 7
	typeHashZipmap       = 9
	typeListZiplist      = 10
	typeSetIntset        = 11
	typeZSetZiplist      = 12
	typeHashZiplist      = 13
	typeListQuicklist    = 14
	typeStreamListpacks  = 15
	typeHashListpack     = 16
	typeZSetListpack     = 17
	typeListQuicklist2   = 18
	typeStreamListpacks2 = 19
	typeSetListpack      = 20
	typeStreamListpacks3 = 21
	typeHashMetaPreGA    = 22
	typeHashLpExPreGA    = 23
	typeHashMeta         = 24
	typeHashLpEx         = 25

	encInt8  = 0
	encInt16 = 1
	encInt32 = 2
	encLZF   = 3

	quicklistNodePlain  = 1
	quicklistNodePacked = 2

	// MaxVersion is the newest RDB version (with the "REDIS" magic) Load
	// and Restore accept: Redis 7.4's and 8.0's.
	MaxVersion = 12
	// ValkeyMinVersion..ValkeyMaxVersion are the versions accepted with
	// Valkey 9's "VALKEY" magic (Valkey writes "REDIS0011" up to 8.x).
	ValkeyMinVersion = 80
	ValkeyMaxVersion = 80
	// DefaultVersion is the version NewWriter writes when given 0: Redis 7.0's.
	DefaultVersion = 10
)

func newCRC() hash.Hash64 { return &jonesDigest{} }

// crc64 returns Redis's CRC64 of p.
func crc64(p []byte) uint64 { return crcUpdate(0, p) }

// appendLength appends an RDB length encoding.
func appendLength(b []byte, n uint64) []byte {
	switch {
	case n < 1<<6:
		return append(b, byte(n))
	case n < 1<<14:
		return append(b, byte(n>>8)|0x40, byte(n))
	case n <= math.MaxUint32:
		b = append(b, 0x80)
		return binary.BigEndian.AppendUint32(b, uint32(n))
	default:
		b = append(b, 0x81)
		return binary.BigEndian.AppendUint64(b, n)
	}
}

// parseCanonicalInt reports whether s is the canonical decimal form of an
// int64 (what Redis's string2ll + ll2string round trip accepts: no leading
// zeros, no '+', no "-0", no spaces).
func parseCanonicalInt(s []byte) (int64, bool) {
	if len(s) == 0 || len(s) > 20 {
		return 0, false
	}
	c := s[0]
	if c != '-' && (c < '0' || c > '9') {
		return 0, false
	}
	v, err := strconv.ParseInt(string(s), 10, 64)
	if err != nil {
		return 0, false
	}
	var buf [24]byte
	if string(strconv.AppendInt(buf[:0], v, 10)) != string(s) {
		return 0, false
	}
	return v, true
}

// --- listpack -------------------------------------------------------------

// lpHeaderSize is total-bytes (4) + num-elements (2).
const lpHeaderSize = 6

// lpEntrySize returns the encoded size (encoding+data+backlen) of s in a listpack.
func lpEntrySize(s []byte) int {
	if v, ok := parseCanonicalInt(s); ok {
		return lpIntSize(v) + 1
	}
	n := len(s)
	var l int
	switch {
	case n < 64:
		l = 1 + n
	case n < 4096:
		l = 2 + n
	default:
		l = 5 + n
	}
	return l + backlenSize(l)
}

func lpIntSize(v int64) int {
	switch {
	case v >= 0 && v <= 127:
		return 1
	case v >= -4096 && v <= 4095:
		return 2
	case v >= math.MinInt16 && v <= math.MaxInt16:
		return 3
	case v >= -(1<<23) && v < 1<<23:
		return 4
	case v >= math.MinInt32 && v <= math.MaxInt32:
		return 5
	default:
		return 9
	}
}

func backlenSize(l int) int {
	switch {
	case l <= 127:
		return 1
	case l < 16383:
		return 2
	case l < 2097151:
		return 3
	case l < 268435455:
		return 4
	default:
		return 5
	}
}

func appendBacklen(b []byte, l int) []byte {
	switch {
	case l <= 127:
		return append(b, byte(l))
	case l < 16383:
		return append(b, byte(l>>7), byte(l&127)|128)
	case l < 2097151:
		return append(b, byte(l>>14), byte((l>>7)&127)|128, byte(l&127)|128)
	case l < 268435455:
		return append(b, byte(l>>21), byte((l>>14)&127)|128, byte((l>>7)&127)|128, byte(l&127)|128)
	default:
		return append(b, byte(l>>28), byte((l>>21)&127)|128, byte((l>>14)&127)|128, byte((l>>7)&127)|128, byte(l&127)|128)
	}
}

// listpack builds one listpack in memory.
type listpack struct {
	buf []byte
	n   int
}

func (lp *listpack) reset() {
	lp.buf = append(lp.buf[:0], 0, 0, 0, 0, 0, 0)
	lp.n = 0
}

// size is the listpack's size once finished (with the end byte).
func (lp *listpack) size() int { return len(lp.buf) + 1 }

func (lp *listpack) appendInt(v int64) {
	b := lp.buf
	start := len(b)
	switch lpIntSize(v) {
	case 1:
		b = append(b, byte(v))
	case 2:
		u := uint64(v) & 0x1fff
		b = append(b, 0xc0|byte(u>>8), byte(u))
	case 3:
		b = append(b, 0xf1)
		b = binary.LittleEndian.AppendUint16(b, uint16(v))
	case 4:
		u := uint32(v)
		b = append(b, 0xf2, byte(u), byte(u>>8), byte(u>>16))
	case 5:
		b = append(b, 0xf3)
		b = binary.LittleEndian.AppendUint32(b, uint32(v))
	default:
		b = append(b, 0xf4)
		b = binary.LittleEndian.AppendUint64(b, uint64(v))
	}
	lp.buf = appendBacklen(b, len(b)-start)
	lp.n++
}

// appendString appends s, as an integer when s is one (like lpAppend).
func (lp *listpack) appendString(s []byte) {
	if v, ok := parseCanonicalInt(s); ok {
		lp.appendInt(v)
		return
	}
	b := lp.buf
	start := len(b)
	n := len(s)
	switch {
	case n < 64:
		b = append(b, 0x80|byte(n))
	case n < 4096:
		b = append(b, 0xe0|byte(n>>8), byte(n))
	default:
		b = append(b, 0xf0)
		b = binary.LittleEndian.AppendUint32(b, uint32(n))
	}
	b = append(b, s...)
	lp.buf = appendBacklen(b, len(b)-start)
	lp.n++
}

// finish terminates the listpack and returns its bytes (valid until reset).
func (lp *listpack) finish() []byte {
	lp.buf = append(lp.buf, 0xff)
	binary.LittleEndian.PutUint32(lp.buf[0:4], uint32(len(lp.buf)))
	cnt := lp.n
	if cnt > 65535 {
		cnt = 65535
	}
	binary.LittleEndian.PutUint16(lp.buf[4:6], uint16(cnt))
	return lp.buf
}

// lpReadInt decodes the listpack entry at b[pos:] when it is an integer.
// ok is false for strings or malformed input. next is the position after
// the entry's backlen.
func lpReadInt(b []byte, pos int) (v int64, next int, isInt, ok bool) {
	if pos >= len(b) {
		return 0, 0, false, false
	}
	h := b[pos]
	var l int
	switch {
	case h < 0x80:
		v, l, isInt = int64(h), 1, true
	case h&0xc0 == 0x80:
		l = 1 + int(h&0x3f)
	case h&0xe0 == 0xc0:
		if pos+2 > len(b) {
			return 0, 0, false, false
		}
		u := int64(h&0x1f)<<8 | int64(b[pos+1])
		if u >= 1<<12 {
			u -= 1 << 13
		}
		v, l, isInt = u, 2, true
	case h&0xf0 == 0xe0:
		if pos+2 > len(b) {
			return 0, 0, false, false
		}
		l = 2 + (int(h&0x0f)<<8 | int(b[pos+1]))
	default:
		switch h {
		case 0xf0:
			if pos+5 > len(b) {
				return 0, 0, false, false
			}
			l = 5 + int(binary.LittleEndian.Uint32(b[pos+1:]))
		case 0xf1, 0xf2, 0xf3, 0xf4:
			w := map[byte]int{0xf1: 2, 0xf2: 3, 0xf3: 4, 0xf4: 8}[h]
			if pos+1+w > len(b) {
				return 0, 0, false, false
			}
			var u uint64
			for i := w - 1; i >= 0; i-- {
				u = u<<8 | uint64(b[pos+1+i])
			}
			shift := 64 - 8*uint(w)
			v, l, isInt = int64(u<<shift)>>shift, 1+w, true
		default:
			return 0, 0, false, false
		}
	}
	next = pos + l + backlenSize(l)
	if l < 0 || next > len(b) || next < pos {
		return 0, 0, false, false
	}
	return v, next, isInt, true
}
