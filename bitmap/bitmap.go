// Package bitmap holds the pure algorithms behind Redis's bit commands
// (SETBIT, GETBIT, BITCOUNT, BITPOS, BITOP, BITFIELD) over a string's bytes.
//
// Invariants:
//   - Bit numbering is Redis's: bit 0 is the most significant bit of byte 0,
//     bit 7 its least significant, bit 8 the most significant of byte 1.
//   - Functions never grow or allocate the slice they are given: callers
//     size the string first (bits beyond the end read as zero); only Op
//     returns a new slice.
//   - Overflow handling (Unsigned, Signed) reproduces Redis 7.0 exactly,
//     including its wrapping arithmetic on extreme SET values, so replies
//     are byte-identical.
package bitmap

import (
	"encoding/binary"
	"math"
	"math/bits"
)

// Get returns bit off of p (0 beyond the end).
func Get(p []byte, off uint64) int {
	i := off >> 3
	if i >= uint64(len(p)) {
		return 0
	}
	return int(p[i]>>(7-off&7)) & 1
}

// Set sets bit off of p (which must hold it) to v and returns the old bit.
func Set(p []byte, off uint64, v int) int {
	i := off >> 3
	sh := 7 - off&7
	old := int(p[i]>>sh) & 1
	p[i] = p[i]&^(1<<sh) | byte(v&1)<<sh
	return old
}

// popcount counts the set bits of p.
func popcount(p []byte) int64 {
	var n int
	for len(p) >= 8 {
		n += bits.OnesCount64(binary.LittleEndian.Uint64(p))
		p = p[8:]
	}
	for _, b := range p {
		n += bits.OnesCount8(b)
	}
	return int64(n)
}

// Count counts the set bits of p between bit start and bit end inclusive
// (0 <= start, end < 8*len(p); an empty range counts 0).
func Count(p []byte, start, end int64) int64 {
	if start > end {
		return 0
	}
	sb, eb := start>>3, end>>3
	n := popcount(p[sb : eb+1])
	// Take away the bits of the edge bytes outside the range.
	if lead := start & 7; lead != 0 {
		n -= int64(bits.OnesCount8(p[sb] >> (8 - lead)))
	}
	if trail := 7 - end&7; trail != 0 {
		n -= int64(bits.OnesCount8(p[eb] & (1<<trail - 1)))
	}
	return n
}

// Pos returns the first bit equal to bit (0 or 1) between bit start and
// bit end inclusive (0 <= start, end < 8*len(p)), or -1.
func Pos(p []byte, start, end int64, bit int) int64 {
	if start > end {
		return -1
	}
	var skip byte // a byte made only of bits we are not looking for
	if bit == 0 {
		skip = 0xff
	}
	for i := start; i <= end; {
		if i&7 == 0 && i+7 <= end {
			b := p[i>>3]
			if b == skip {
				i += 8
				continue
			}
			if bit == 0 {
				b = ^b
			}
			return i + int64(bits.LeadingZeros8(b))
		}
		if Get(p, uint64(i)) == bit {
			return i
		}
		i++
	}
	return -1
}

// Op kinds for Op.
const (
	And = iota
	Or
	Xor
	Not
)

// Op computes BITOP op over srcs (a missing key is an empty string):
// the result is as long as the longest source, shorter sources padded
// with zero bytes. NOT takes exactly one source.
func Op(op int, srcs [][]byte) []byte {
	maxlen := 0
	for _, s := range srcs {
		maxlen = max(maxlen, len(s))
	}
	if maxlen == 0 {
		return nil
	}
	res := make([]byte, maxlen)
	copy(res, srcs[0])
	if op == Not {
		for i := range res {
			res[i] = ^res[i]
		}
		return res
	}
	for _, s := range srcs[1:] {
		switch op {
		case And:
			for i := range res {
				if i < len(s) {
					res[i] &= s[i]
				} else {
					res[i] = 0
				}
			}
		case Or:
			for i := range s {
				res[i] |= s[i]
			}
		case Xor:
			for i := range s {
				res[i] ^= s[i]
			}
		}
	}
	return res
}

// GetUnsigned reads the n-bit (1..64) unsigned integer at bit off of p,
// most significant bit first; bits beyond the end read as zero.
func GetUnsigned(p []byte, off uint64, n int) uint64 {
	var v uint64
	for i := 0; i < n; i++ {
		v = v<<1 | uint64(Get(p, off+uint64(i)))
	}
	return v
}

// GetSigned reads the n-bit (1..64) two's complement integer at bit off.
func GetSigned(p []byte, off uint64, n int) int64 {
	v := GetUnsigned(p, off, n)
	if n < 64 && v&(1<<(n-1)) != 0 {
		v |= math.MaxUint64 << n // sign extension
	}
	return int64(v)
}

// SetInt writes the low n bits of v at bit off of p (which must hold them).
func SetInt(p []byte, off uint64, n int, v uint64) {
	for i := 0; i < n; i++ {
		Set(p, off+uint64(i), int(v>>(n-1-i))&1)
	}
}

// Overflow behaviours of BITFIELD.
const (
	Wrap = iota
	Sat
	Fail
)

// Unsigned adds incr to the n-bit (1..63) unsigned value (for SET, value
// is the new value and incr 0). It returns the result under overflow mode
// ow and whether the result overflowed (under Fail the result is unused).
func Unsigned(value uint64, incr int64, n int, ow int) (uint64, bool) {
	maxv := uint64(1)<<n - 1
	switch {
	case value > maxv || (incr > 0 && uint64(incr) > maxv-value):
		if ow == Sat {
			return maxv, true
		}
	case incr < 0 && incr < -int64(value):
		if ow == Sat {
			return 0, true
		}
	default:
		return value + uint64(incr), false
	}
	return (value + uint64(incr)) & maxv, true
}

// Signed is Unsigned for an n-bit (1..64) two's complement value. The
// range checks use wrapping arithmetic exactly as Redis does, so extreme
// SET values saturate the way Redis's do.
func Signed(value, incr int64, n int, ow int) (int64, bool) {
	maxv := int64(math.MaxInt64)
	if n < 64 {
		maxv = 1<<(n-1) - 1
	}
	minv := -maxv - 1
	maxincr := int64(uint64(maxv) - uint64(value))
	minincr := int64(uint64(minv) - uint64(value))
	switch {
	case value > maxv || (n != 64 && incr > maxincr) || (value >= 0 && incr > 0 && incr > maxincr):
		if ow == Sat {
			return maxv, true
		}
	case value < minv || (n != 64 && incr < minincr) || (value < 0 && incr < 0 && incr < minincr):
		if ow == Sat {
			return minv, true
		}
	default:
		return value + incr, false
	}
	r := uint64(value) + uint64(incr)
	if n < 64 {
		if r&(1<<(n-1)) != 0 {
			r |= math.MaxUint64 << n
		} else {
			r &^= math.MaxUint64 << n
		}
	}
	return int64(r), true
}
