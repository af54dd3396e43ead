package types

import (
	"encoding/binary"
	"errors"

	"github.com/damselflydb/damselfly/listpack"
)

// The compact encoding ("listpack" in OBJECT ENCODING terms) is one flat,
// pointer-free []byte holding a sequence of byte strings. Each entry is
//
//	uvarint(len) | data | reversed uvarint(len)
//
// The trailing reversed length (Redis calls it backlen) makes the sequence
// walkable from both ends. Integers are stored as their decimal strings.

// errBadListpack is returned by DecodeListpack for malformed input.
var errBadListpack = errors.New("types: malformed listpack")

func uvarintLen(n int) int {
	s := 1
	for n >= 0x80 {
		n >>= 7
		s++
	}
	return s
}

// lpEntrySize is the encoded size of a string of n bytes.
func lpEntrySize(n int) int { return 2*uvarintLen(n) + n }

// grow makes room for extra bytes with a modest slack (1/8) so that small
// collections do not waste the 2x of append's growth.
func grow(b []byte, extra int) []byte {
	if cap(b)-len(b) >= extra {
		return b
	}
	n := len(b) + extra
	nb := make([]byte, len(b), n+n/8+8)
	copy(nb, b)
	return nb
}

// lpPut writes the entry for v at dst[0:] and returns its size.
func lpPut(dst []byte, v []byte) int {
	s := binary.PutUvarint(dst, uint64(len(v)))
	copy(dst[s:], v)
	p := s + len(v)
	for i := s - 1; i >= 0; i-- {
		dst[p] = dst[i]
		p++
	}
	return p
}

// lpAppend appends the entries for vs to b.
func lpAppend(b []byte, vs ...[]byte) []byte {
	need := 0
	for _, v := range vs {
		need += lpEntrySize(len(v))
	}
	b = grow(b, need)
	for _, v := range vs {
		off := len(b)
		b = b[:off+lpEntrySize(len(v))]
		lpPut(b[off:], v)
	}
	return b
}

// lpNext decodes the entry at off of a valid listpack.
func lpNext(b []byte, off int) (v []byte, next int) {
	n, s := binary.Uvarint(b[off:])
	start := off + s
	end := start + int(n)
	return b[start:end:end], end + s
}

// lpPrev decodes the entry ending at end of a valid listpack.
func lpPrev(b []byte, end int) (v []byte, start int) {
	var n uint64
	var shift uint
	i := end - 1
	for {
		c := b[i]
		n |= uint64(c&0x7f) << shift
		shift += 7
		if c&0x80 == 0 {
			break
		}
		i--
	}
	s := end - i
	dend := i
	dstart := dend - int(n)
	return b[dstart:dend:dend], dstart - s
}

// lpInsert inserts the entries vs at byte offset off.
func lpInsert(b []byte, off int, vs ...[]byte) []byte {
	need := 0
	for _, v := range vs {
		need += lpEntrySize(len(v))
	}
	b = grow(b, need)
	old := len(b)
	b = b[:old+need]
	copy(b[off+need:], b[off:old])
	p := off
	for _, v := range vs {
		p += lpPut(b[p:], v)
	}
	return b
}

// lpDelete removes bytes [off, end).
func lpDelete(b []byte, off, end int) []byte {
	n := copy(b[off:], b[end:])
	return b[:off+n]
}

// lpReplace replaces the bytes [off, end) with the entry for v.
func lpReplace(b []byte, off, end int, v []byte) []byte {
	sz := lpEntrySize(len(v))
	old := end - off
	switch {
	case sz > old:
		b = grow(b, sz-old)
		l := len(b)
		b = b[:l+sz-old]
		copy(b[end+sz-old:], b[end:l])
	case sz < old:
		copy(b[off+sz:], b[end:])
		b = b[:len(b)-(old-sz)]
	}
	lpPut(b[off:], v)
	return b
}

// lpCheck validates a whole listpack and returns its entry count.
func lpCheck(b []byte) (int, error) {
	off, cnt := 0, 0
	for off < len(b) {
		n, s := binary.Uvarint(b[off:])
		if s <= 0 || n > uint64(len(b)) {
			return 0, errBadListpack
		}
		if s != uvarintLen(int(n)) { // non-minimal varint
			return 0, errBadListpack
		}
		end := off + s + int(n) + s
		if end > len(b) {
			return 0, errBadListpack
		}
		for i := 0; i < s; i++ {
			if b[end-1-i] != b[off+i] {
				return 0, errBadListpack
			}
		}
		off = end
		cnt++
	}
	return cnt, nil
}

// EncodeListpack encodes vals in the compact encoding.
func EncodeListpack(vals [][]byte) []byte {
	need := 0
	for _, v := range vals {
		need += lpEntrySize(len(v))
	}
	b := make([]byte, 0, need)
	return lpAppend(b, vals...)
}

// DecodeListpack decodes b; it never panics on malformed input and returns
// an error instead. The returned slices alias b.
func DecodeListpack(b []byte) ([][]byte, error) {
	n, err := lpCheck(b)
	if err != nil {
		return nil, err
	}
	out := make([][]byte, 0, n)
	for off := 0; off < len(b); {
		var v []byte
		v, off = lpNext(b, off)
		out = append(out, v)
	}
	return out, nil
}

// redisLPEntrySize is the size in bytes Redis's listpack gives the element
// v (used to convert lists at exactly Redis's thresholds).
func redisLPEntrySize(v []byte) int { return listpack.EntrySize(v) }

const redisLPHeader = listpack.EmptySize // 6-byte header + end byte
