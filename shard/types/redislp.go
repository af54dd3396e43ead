package types

import (
	"encoding/binary"
	"errors"
	"slices"
	"strconv"
)

// Redis's own listpack format ("rlp" here, to tell it from the compact
// encoding in lp.go), used as is by stream nodes so that their memory, their
// node boundaries and their RDB serialization are exactly Redis's:
//
//	total-bytes (uint32 LE) | num-elements (uint16 LE, 65535 = unknown) | elements | 0xFF
//
// An element is encoding+data followed by its backlen (the size of
// encoding+data, written so that it can be read from its last byte
// backwards). Integers take 1 to 9 bytes (7-bit unsigned, 13, 16, 24, 32 or
// 64-bit signed); strings have a 6, 12 or 32-bit length. Strings that are
// canonical integers are stored as integers (Redis's lpAppend).

const (
	rlpHeader   = 6
	rlpEOF      = 0xff
	rlpMaxCount = 65535
)

var errBadRLP = errors.New("malformed listpack")

// rlpNew returns an empty listpack with room for capHint bytes, rounded up
// to the allocator's size class (the slack is free).
func rlpNew(capHint int) []byte {
	b := slices.Grow([]byte(nil), max(capHint, rlpHeader+1))[:rlpHeader+1]
	binary.LittleEndian.PutUint32(b, rlpHeader+1)
	b[rlpHeader] = rlpEOF
	return b
}

func rlpBacklenSize(l int) int {
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

func rlpPutBacklen(dst []byte, l int) int {
	n := rlpBacklenSize(l)
	for i := n - 1; i >= 0; i-- {
		dst[i] = byte(l & 127)
		l >>= 7
	}
	// bytes after the first carry the continuation bit
	for i := 1; i < n; i++ {
		dst[i] |= 128
	}
	return n
}

// rlpIntEncSize is the encoding+data size of integer v.
func rlpIntEncSize(v int64) int {
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

func rlpStrEncSize(n int) int {
	switch {
	case n < 64:
		return 1 + n
	case n < 4096:
		return 2 + n
	}
	return 5 + n
}

// rlpIntSize / rlpStrSize are the full element sizes (with backlen).
func rlpIntSize(v int64) int { l := rlpIntEncSize(v); return l + rlpBacklenSize(l) }

// rlpElemSize is the full element size of s as lpAppend would store it.
func rlpElemSize(s []byte) int {
	if v, ok := parseStrictInt(s); ok {
		return rlpIntSize(v)
	}
	l := rlpStrEncSize(len(s))
	return l + rlpBacklenSize(l)
}

// rlpPutInt writes integer element v at dst and returns its size.
func rlpPutInt(dst []byte, v int64) int {
	l := rlpIntEncSize(v)
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
	return l + rlpPutBacklen(dst[l:], l)
}

// rlpPutStr writes s as a string element at dst and returns its size.
func rlpPutStr(dst []byte, s []byte) int {
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
	return l + rlpPutBacklen(dst[l:], l)
}

// rlpSetHeader updates the total-bytes and num-elements fields after delta
// elements were added (negative: removed).
func rlpSetHeader(lp []byte, delta int) {
	binary.LittleEndian.PutUint32(lp, uint32(len(lp)))
	if n := int(binary.LittleEndian.Uint16(lp[4:])); n != rlpMaxCount {
		n += delta
		if n >= rlpMaxCount {
			n = rlpMaxCount
		}
		binary.LittleEndian.PutUint16(lp[4:], uint16(n))
	}
}

// rlpGrow makes room for extra bytes (amortized growth).
func rlpGrow(lp []byte, extra int) []byte {
	if cap(lp)-len(lp) >= extra {
		return lp
	}
	n := len(lp) + extra
	nb := make([]byte, len(lp), n+n/2)
	copy(nb, lp)
	return nb
}

// rlpAppendInt appends integer v.
func rlpAppendInt(lp []byte, v int64) []byte {
	sz := rlpIntSize(v)
	lp = rlpGrow(lp, sz)
	end := len(lp) - 1
	lp = lp[:len(lp)+sz]
	rlpPutInt(lp[end:], v)
	lp[len(lp)-1] = rlpEOF
	rlpSetHeader(lp, 1)
	return lp
}

// rlpAppend appends s (as an integer when it is a canonical one).
func rlpAppend(lp []byte, s []byte) []byte {
	if v, ok := parseStrictInt(s); ok {
		return rlpAppendInt(lp, v)
	}
	l := rlpStrEncSize(len(s))
	sz := l + rlpBacklenSize(l)
	lp = rlpGrow(lp, sz)
	end := len(lp) - 1
	lp = lp[:len(lp)+sz]
	rlpPutStr(lp[end:], s)
	lp[len(lp)-1] = rlpEOF
	rlpSetHeader(lp, 1)
	return lp
}

// rlpElem decodes the element at off of a valid listpack: a string (s) or
// an integer (v, isInt), and the offset of the next element.
func rlpElem(lp []byte, off int) (s []byte, v int64, isInt bool, next int) {
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
	return s, v, isInt, off + l + rlpBacklenSize(l)
}

// rlpInt returns the integer at off (0 for a string: never in valid stream
// metadata) and the next offset.
func rlpInt(lp []byte, off int) (int64, int) {
	_, v, _, next := rlpElem(lp, off)
	return v, next
}

// rlpSkip returns the offset after the element at off.
func rlpSkip(lp []byte, off int) int {
	_, _, _, next := rlpElem(lp, off)
	return next
}

// rlpPrev returns the offset of the element that ends at end.
func rlpPrev(lp []byte, end int) int {
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

// rlpBytes returns the element at off as bytes: a view for strings, the
// decimal form appended to *scratch for integers.
func rlpBytes(lp []byte, off int, scratch *[]byte) ([]byte, int) {
	s, v, isInt, next := rlpElem(lp, off)
	if !isInt {
		return s, next
	}
	start := len(*scratch)
	*scratch = strconv.AppendInt(*scratch, v, 10)
	return (*scratch)[start:len(*scratch):len(*scratch)], next
}

// rlpReplaceInt replaces the element at off with integer v and returns the
// listpack (which may have moved).
func rlpReplaceInt(lp []byte, off int, v int64) []byte {
	old := rlpSkip(lp, off) - off
	sz := rlpIntSize(v)
	if sz != old {
		if sz > old {
			lp = rlpGrow(lp, sz-old)
		}
		n := len(lp)
		lp = lp[:n+sz-old]
		copy(lp[off+sz:], lp[off+old:n])
	}
	rlpPutInt(lp[off:], v)
	rlpSetHeader(lp, 0)
	return lp
}

// rlpValidate checks the whole structure of lp (header, every element's
// encoding and backlen, the terminator) so that the unchecked readers above
// never go out of bounds on it. It returns the number of elements.
func rlpValidate(lp []byte) (int, error) {
	if len(lp) < rlpHeader+1 || int(binary.LittleEndian.Uint32(lp)) != len(lp) || lp[len(lp)-1] != rlpEOF {
		return 0, errBadRLP
	}
	end := len(lp) - 1
	n := 0
	for off := rlpHeader; off < end; n++ {
		h := lp[off]
		var l int
		need := func(k int) bool { return off+k <= end }
		switch {
		case h < 0x80:
			l = 1
		case h&0xc0 == 0x80:
			l = 1 + int(h&0x3f)
		case h&0xe0 == 0xc0:
			l = 2
		case h&0xf0 == 0xe0:
			if !need(2) {
				return 0, errBadRLP
			}
			l = 2 + (int(h&0x0f)<<8 | int(lp[off+1]))
		case h == 0xf0:
			if !need(5) {
				return 0, errBadRLP
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
			return 0, errBadRLP
		}
		if l < 0 || l > end || !need(l+rlpBacklenSize(l)) {
			return 0, errBadRLP
		}
		var bl [5]byte
		k := rlpPutBacklen(bl[:], l)
		next := off + l + k
		if string(lp[off+l:next]) != string(bl[:k]) {
			return 0, errBadRLP
		}
		off = next
		if off > end {
			return 0, errBadRLP
		}
	}
	if c := int(binary.LittleEndian.Uint16(lp[4:])); c != rlpMaxCount && c != n {
		return 0, errBadRLP
	}
	return n, nil
}
