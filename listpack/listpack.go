// Package listpack is Redis's listpack format, the one implementation of it
// in Damselfly: the shard's stream nodes keep their entries in it
// (shard/types), and the RDB writer and reader use it for the LISTPACK
// encodings of hashes, sets, sorted sets, quicklist nodes and stream nodes
// (snapshot/rdb; snapshot decodes loaded hash and set listpacks with it
// straight into the shard's objects). It is a leaf package: it imports only the standard library.
//
// A listpack is
//
//	total-bytes (uint32 LE) | num-elements (uint16 LE) | elements | 0xFF
//
// where num-elements is UnknownCount (65535) once the count no longer fits.
// An element is its encoding and data followed by its backlen: the size of
// encoding+data, written big-endian in 7-bit groups with the high bit set on
// every byte but the first, so that it can be read backwards from the
// element's last byte. Integers take 1 to 9 bytes (7-bit unsigned; 13, 16,
// 24, 32 or 64-bit signed); strings carry a 6, 12 or 32-bit length. A string
// that is a canonical decimal integer (ParseInt) is stored as an integer, as
// Redis's lpAppend does, so the bytes are Redis's byte for byte.
//
// Invariants:
//   - Everything this package writes is byte-identical to what Redis 7
//     writes for the same sequence of elements (the RDB interop tests load
//     our dumps into redis-server and Redis's into us).
//   - The readers Elem, Skip, Prev, Bytes and ReplaceInt trust their input:
//     they are for listpacks this package built or that Validate accepted.
//     Validate never panics on any input; whatever it accepts, those
//     readers walk without going out of bounds, forwards and backwards.
//   - Corrupt input is reported as an error wrapping ErrCorrupt that says
//     what is wrong and at which offset.
package listpack

import (
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"strconv"
)

const (
	// HeaderSize is total-bytes (4) plus num-elements (2).
	HeaderSize = 6
	// EOF terminates every listpack.
	EOF = 0xff
	// UnknownCount in num-elements means "count them".
	UnknownCount = 65535
	// EmptySize is the size of a listpack with no elements.
	EmptySize = HeaderSize + 1
)

// ErrCorrupt is wrapped by every error Validate returns.
var ErrCorrupt = errors.New("listpack: corrupt")

func corrupt(off int, format string, args ...any) error {
	return fmt.Errorf("%w: %s at offset %d", ErrCorrupt, fmt.Sprintf(format, args...), off)
}

// ParseInt reports whether s is a canonical decimal int64 (no sign but a
// leading '-', no leading zeros, not "-0"), which Redis stores as an
// integer element, and its value.
func ParseInt(s []byte) (int64, bool) {
	n := len(s)
	if n == 0 || n > 20 {
		return 0, false
	}
	if n == 1 && s[0] == '0' {
		return 0, true
	}
	i := 0
	neg := s[0] == '-'
	if neg {
		if n == 1 {
			return 0, false
		}
		i = 1
	}
	if s[i] < '1' || s[i] > '9' || n-i > 19 { // 19 digits cannot wrap a uint64
		return 0, false
	}
	var v uint64
	for ; i < n; i++ {
		c := s[i]
		if c < '0' || c > '9' {
			return 0, false
		}
		v = v*10 + uint64(c-'0')
	}
	if neg {
		if v > 1<<63 {
			return 0, false
		}
		return -int64(v), true
	}
	if v > 1<<63-1 {
		return 0, false
	}
	return int64(v), true
}

// --- sizes -----------------------------------------------------------------

// IntEncSize is the encoding+data size of integer v.
func IntEncSize(v int64) int {
	switch {
	case v >= 0 && v <= 127:
		return 1
	case v >= -4096 && v <= 4095:
		return 2
	case v >= -32768 && v <= 32767:
		return 3
	case v >= -8388608 && v <= 8388607:
		return 4
	case v >= -2147483648 && v <= 2147483647:
		return 5
	}
	return 9
}

// StrEncSize is the encoding+data size of a string of n bytes.
func StrEncSize(n int) int {
	switch {
	case n < 64:
		return 1 + n
	case n < 4096:
		return 2 + n
	}
	return 5 + n
}

// BacklenSize is the size of the backlen of an element whose encoding+data
// takes l bytes (Redis's thresholds, 16383 and not 16384 included).
func BacklenSize(l int) int {
	switch {
	case l <= 127:
		return 1
	case l < 16383:
		return 2
	case l < 2097151:
		return 3
	case l < 268435455:
		return 4
	}
	return 5
}

// IntSize is the full size (with backlen) of integer element v.
func IntSize(v int64) int { return IntEncSize(v) + 1 } // l <= 9: one backlen byte

// StrSize is the full size of a string element of n bytes.
func StrSize(n int) int { l := StrEncSize(n); return l + BacklenSize(l) }

// EntrySize is the full size of s as Push and Builder.AppendString store it
// (as an integer when it is a canonical one).
func EntrySize(s []byte) int {
	if v, ok := ParseInt(s); ok {
		return IntSize(v)
	}
	return StrSize(len(s))
}

// --- writing elements --------------------------------------------------------

// PutBacklen writes the backlen of l at dst and returns its size.
func PutBacklen(dst []byte, l int) int {
	n := BacklenSize(l)
	for i := n - 1; i >= 0; i-- {
		dst[i] = byte(l & 127)
		l >>= 7
	}
	for i := 1; i < n; i++ { // every byte after the first has the continuation bit
		dst[i] |= 128
	}
	return n
}

// PutInt writes integer element v at dst (IntSize(v) bytes) and returns its
// size.
func PutInt(dst []byte, v int64) int {
	l := IntEncSize(v)
	switch l {
	case 1:
		dst[0] = byte(v)
	case 2:
		u := uint64(v) & 0x1fff
		dst[0], dst[1] = 0xc0|byte(u>>8), byte(u)
	case 3:
		dst[0] = 0xf1
		binary.LittleEndian.PutUint16(dst[1:], uint16(v))
	case 4:
		u := uint32(v)
		dst[0], dst[1], dst[2], dst[3] = 0xf2, byte(u), byte(u>>8), byte(u>>16)
	case 5:
		dst[0] = 0xf3
		binary.LittleEndian.PutUint32(dst[1:], uint32(v))
	default:
		dst[0] = 0xf4
		binary.LittleEndian.PutUint64(dst[1:], uint64(v))
	}
	dst[l] = byte(l) // backlen, l <= 9
	return l + 1
}

// PutStr writes s as a string element at dst (StrSize(len(s)) bytes) and
// returns its size.
func PutStr(dst []byte, s []byte) int {
	n := len(s)
	var h int
	switch {
	case n < 64:
		dst[0] = 0x80 | byte(n)
		h = 1
	case n < 4096:
		dst[0], dst[1] = 0xe0|byte(n>>8), byte(n)
		h = 2
	default:
		dst[0] = 0xf0
		binary.LittleEndian.PutUint32(dst[1:], uint32(n))
		h = 5
	}
	copy(dst[h:], s)
	l := h + n
	return l + PutBacklen(dst[l:], l)
}

// PutEntry writes s at dst as Push stores it and returns its size
// (EntrySize(s) bytes).
func PutEntry(dst []byte, s []byte) int {
	if v, ok := ParseInt(s); ok {
		return PutInt(dst, v)
	}
	return PutStr(dst, s)
}

func extend(b []byte, n int) ([]byte, []byte) {
	l := len(b)
	if cap(b)-l < n {
		nb := make([]byte, l, 2*cap(b)+n)
		copy(nb, b)
		b = nb
	}
	return b[:l+n], b[l : l+n]
}

// AppendInt appends integer element v (no header or terminator: for
// building element sequences).
func AppendInt(b []byte, v int64) []byte {
	b, dst := extend(b, IntSize(v))
	PutInt(dst, v)
	return b
}

// AppendStr appends s as a string element.
func AppendStr(b []byte, s []byte) []byte {
	b, dst := extend(b, StrSize(len(s)))
	PutStr(dst, s)
	return b
}

// --- whole listpacks -----------------------------------------------------------

// New returns an empty listpack with capacity for at least capHint bytes
// (rounded up to the allocator's size class).
func New(capHint int) []byte {
	// rounded up to the allocator's size class: the slack is free
	b := slices.Grow([]byte(nil), max(capHint, EmptySize))[:EmptySize]
	binary.LittleEndian.PutUint32(b, EmptySize)
	b[HeaderSize] = EOF
	return b
}

// SetHeader updates total-bytes to len(lp) and num-elements by delta
// (negative: removed); a count that reaches UnknownCount stays there.
func SetHeader(lp []byte, delta int) {
	binary.LittleEndian.PutUint32(lp, uint32(len(lp)))
	if n := int(binary.LittleEndian.Uint16(lp[4:])); n != UnknownCount {
		n += delta
		if n >= UnknownCount {
			n = UnknownCount
		}
		binary.LittleEndian.PutUint16(lp[4:], uint16(n))
	}
}

// Grow makes room for extra more bytes in lp, with amortized (1.5x) growth.
func Grow(lp []byte, extra int) []byte {
	if cap(lp)-len(lp) >= extra {
		return lp
	}
	n := len(lp) + extra
	nb := make([]byte, len(lp), n+n/2)
	copy(nb, lp)
	return nb
}

// PushInt appends integer v to listpack lp (header updated) and returns
// the listpack, which may have moved.
func PushInt(lp []byte, v int64) []byte {
	sz := IntSize(v)
	lp = Grow(lp, sz)
	end := len(lp) - 1
	lp = lp[:len(lp)+sz]
	PutInt(lp[end:], v)
	lp[len(lp)-1] = EOF
	SetHeader(lp, 1)
	return lp
}

// Push appends s to listpack lp as Redis's lpAppend does (as an integer
// when it is a canonical one) and returns the listpack.
func Push(lp []byte, s []byte) []byte {
	if v, ok := ParseInt(s); ok {
		return PushInt(lp, v)
	}
	sz := StrSize(len(s))
	lp = Grow(lp, sz)
	end := len(lp) - 1
	lp = lp[:len(lp)+sz]
	PutStr(lp[end:], s)
	lp[len(lp)-1] = EOF
	SetHeader(lp, 1)
	return lp
}

// ReplaceInt replaces the element at off with integer v and returns the
// listpack (which may have moved).
func ReplaceInt(lp []byte, off int, v int64) []byte {
	old := Skip(lp, off) - off
	sz := IntSize(v)
	if sz != old {
		if sz > old {
			lp = Grow(lp, sz-old)
		}
		n := len(lp)
		lp = lp[:n+sz-old]
		copy(lp[off+sz:], lp[off+old:n])
	}
	PutInt(lp[off:], v)
	SetHeader(lp, 0)
	return lp
}

// --- reading (trusted input) ------------------------------------------------

// First is the offset of the first element (equal to len(lp)-1 when empty).
const First = HeaderSize

// End is the offset of lp's terminator: the walk forward stops there.
func End(lp []byte) int { return len(lp) - 1 }

// Elem decodes the element at off of a valid listpack: a string (s, a view
// of lp) or an integer (v, isInt), and the offset of the next element.
func Elem(lp []byte, off int) (s []byte, v int64, isInt bool, next int) {
	h := lp[off]
	var l int
	switch {
	case h < 0x80:
		v, isInt, l = int64(h), true, 1
	case h&0xc0 == 0x80:
		n := int(h & 0x3f)
		s, l = lp[off+1:off+1+n:off+1+n], 1+n
	case h&0xe0 == 0xc0:
		u := int64(h&0x1f)<<8 | int64(lp[off+1])
		if u >= 1<<12 {
			u -= 1 << 13
		}
		v, isInt, l = u, true, 2
	case h&0xf0 == 0xe0:
		n := int(h&0x0f)<<8 | int(lp[off+1])
		s, l = lp[off+2:off+2+n:off+2+n], 2+n
	case h == 0xf0:
		n := int(binary.LittleEndian.Uint32(lp[off+1:]))
		s, l = lp[off+5:off+5+n:off+5+n], 5+n
	case h == 0xf1:
		v, isInt, l = int64(int16(binary.LittleEndian.Uint16(lp[off+1:]))), true, 3
	case h == 0xf2:
		u := uint32(lp[off+1]) | uint32(lp[off+2])<<8 | uint32(lp[off+3])<<16
		v, isInt, l = int64(int32(u<<8)>>8), true, 4
	case h == 0xf3:
		v, isInt, l = int64(int32(binary.LittleEndian.Uint32(lp[off+1:]))), true, 5
	default: // 0xf4
		v, isInt, l = int64(binary.LittleEndian.Uint64(lp[off+1:])), true, 9
	}
	return s, v, isInt, off + l + BacklenSize(l)
}

// Int returns the integer at off (0 for a string) and the next offset.
func Int(lp []byte, off int) (int64, int) {
	_, v, _, next := Elem(lp, off)
	return v, next
}

// Skip returns the offset after the element at off.
func Skip(lp []byte, off int) int {
	_, _, _, next := Elem(lp, off)
	return next
}

// Prev returns the offset of the element that ends at end (an element's
// start, or End(lp)).
func Prev(lp []byte, end int) int {
	var l, shift int
	i := end - 1
	for {
		c := lp[i]
		l |= int(c&127) << shift
		if c&128 == 0 {
			break
		}
		shift += 7
		i--
	}
	return i - l
}

// Bytes returns the element at off as bytes and the next offset: a view of
// lp for strings, the decimal form appended to *scratch for integers.
func Bytes(lp []byte, off int, scratch *[]byte) ([]byte, int) {
	s, v, isInt, next := Elem(lp, off)
	if !isInt {
		return s, next
	}
	start := len(*scratch)
	*scratch = strconv.AppendInt(*scratch, v, 10)
	return (*scratch)[start:len(*scratch):len(*scratch)], next
}

// --- validation ---------------------------------------------------------------

// Validate checks the whole structure of lp (header, every element's
// encoding, length and backlen, the count, the terminator) and returns the
// number of elements. It never panics; after it accepts lp the trusted
// readers above are safe on it.
func Validate(lp []byte) (int, error) {
	if len(lp) < EmptySize {
		return 0, corrupt(0, "%d bytes, shorter than a header and terminator", len(lp))
	}
	if tot := binary.LittleEndian.Uint32(lp); int64(tot) != int64(len(lp)) {
		return 0, corrupt(0, "total-bytes %d, but %d bytes", tot, len(lp))
	}
	end := len(lp) - 1
	if lp[end] != EOF {
		return 0, corrupt(end, "no terminator")
	}
	n := 0
	for off := HeaderSize; off < end; n++ {
		h := lp[off]
		var l int
		switch {
		case h < 0x80:
			l = 1
		case h&0xc0 == 0x80:
			l = 1 + int(h&0x3f)
		case h&0xe0 == 0xc0:
			l = 2
		case h&0xf0 == 0xe0:
			if off+2 > end {
				return 0, corrupt(off, "truncated string length")
			}
			l = 2 + (int(h&0x0f)<<8 | int(lp[off+1]))
		case h == 0xf0:
			if off+5 > end {
				return 0, corrupt(off, "truncated string length")
			}
			l = 5 + int(binary.LittleEndian.Uint32(lp[off+1:]))
		case h == 0xf1:
			l = 3
		case h == 0xf2:
			l = 4
		case h == 0xf3:
			l = 5
		case h == 0xf4:
			l = 9
		default:
			return 0, corrupt(off, "invalid encoding byte 0x%02x", h)
		}
		if l > end-off {
			return 0, corrupt(off, "element of %d bytes overruns the listpack", l)
		}
		var bl [5]byte
		k := PutBacklen(bl[:], l)
		next := off + l + k
		if next > end {
			return 0, corrupt(off, "element's backlen overruns the listpack")
		}
		if string(lp[off+l:next]) != string(bl[:k]) {
			return 0, corrupt(off+l, "backlen does not match the element's %d bytes", l)
		}
		off = next
	}
	if c := int(binary.LittleEndian.Uint16(lp[4:])); c != UnknownCount && c != n {
		return 0, corrupt(4, "num-elements %d, but %d elements", c, n)
	}
	return n, nil
}

// ValidateHeader checks only the header and terminator (the cheap check a
// reader does before it hands the listpack on to one that validates it
// whole).
func ValidateHeader(lp []byte) error {
	if len(lp) < EmptySize || int64(binary.LittleEndian.Uint32(lp)) != int64(len(lp)) || lp[len(lp)-1] != EOF {
		return corrupt(0, "bad header")
	}
	return nil
}
