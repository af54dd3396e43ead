package replication

// backlog is the replication backlog: a ring holding the last size bytes of
// the replication stream, so that a replica that lost its link can continue
// from its offset (+CONTINUE) instead of a full sync.
//
// Offsets are those of the stream: the byte at offset o (1-based, as in
// Redis: master_repl_offset is the offset of the last byte written) is kept
// while o > end-histlen.
type backlog struct {
	buf     []byte
	pos     int   // where the next byte goes
	histlen int   // bytes held
	end     int64 // stream offset of the last byte written
}

func newBacklog(size int, end int64) *backlog {
	if size < 16<<10 {
		size = 16 << 10
	}
	return &backlog{buf: make([]byte, size), end: end}
}

func (b *backlog) write(p []byte) {
	b.end += int64(len(p))
	if len(p) >= len(b.buf) {
		p = p[len(p)-len(b.buf):]
		copy(b.buf, p)
		b.pos = 0
		b.histlen = len(b.buf)
		return
	}
	n := copy(b.buf[b.pos:], p)
	if n < len(p) {
		copy(b.buf, p[n:])
	}
	b.pos = (b.pos + len(p)) % len(b.buf)
	b.histlen = min(b.histlen+len(p), len(b.buf))
}

// firstByte is the offset of the oldest byte held (end+1 when empty).
func (b *backlog) firstByte() int64 { return b.end - int64(b.histlen) + 1 }

// has reports whether a replica that wants to continue at offset off (the
// first byte it has not seen) can be served from the backlog.
func (b *backlog) has(off int64) bool {
	return off >= b.firstByte() && off <= b.end+1
}

// since appends the bytes from offset off (held: see has) to dst.
func (b *backlog) since(dst []byte, off int64) []byte {
	n := int(b.end - off + 1)
	if n <= 0 {
		return dst
	}
	start := (b.pos - n + len(b.buf)) % len(b.buf)
	if start+n <= len(b.buf) {
		return append(dst, b.buf[start:start+n]...)
	}
	dst = append(dst, b.buf[start:]...)
	return append(dst, b.buf[:n-(len(b.buf)-start)]...)
}

// resize keeps the newest bytes that fit in size.
func (b *backlog) resize(size int) {
	if size < 16<<10 {
		size = 16 << 10
	}
	keep := b.since(nil, b.end-int64(min(b.histlen, size))+1)
	nb := &backlog{buf: make([]byte, size), end: b.end - int64(len(keep))}
	nb.write(keep)
	*b = *nb
}
