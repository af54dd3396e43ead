package listpack

import "encoding/binary"

// Builder builds one listpack in a buffer it reuses: Reset, append the
// elements, Finish. The zero Builder is ready after Reset.
type Builder struct {
	buf []byte
	n   int
}

// Reset empties the builder (keeping its buffer).
func (b *Builder) Reset() {
	b.buf = append(b.buf[:0], 0, 0, 0, 0, 0, 0)
	b.n = 0
}

// Size is the listpack's size once finished (with the terminator).
func (b *Builder) Size() int { return len(b.buf) + 1 }

// Len is the number of elements appended.
func (b *Builder) Len() int { return b.n }

// AppendInt appends integer element v.
func (b *Builder) AppendInt(v int64) {
	b.buf = AppendInt(b.buf, v)
	b.n++
}

// AppendString appends s, as an integer when it is a canonical one (as
// Redis's lpAppend).
func (b *Builder) AppendString(s []byte) {
	if v, ok := ParseInt(s); ok {
		b.AppendInt(v)
		return
	}
	b.buf = AppendStr(b.buf, s)
	b.n++
}

// Finish terminates the listpack, fills in its header and returns its
// bytes, valid until the next Reset.
func (b *Builder) Finish() []byte {
	b.buf = append(b.buf, EOF)
	binary.LittleEndian.PutUint32(b.buf[0:4], uint32(len(b.buf)))
	binary.LittleEndian.PutUint16(b.buf[4:6], uint16(min(b.n, UnknownCount)))
	return b.buf
}
