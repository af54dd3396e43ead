package slab

// GrowLarge lengthens the large chunk ref (Alloc gave it more than MaxSmall
// bytes) to n bytes, keeping its Ref and its contents; the new bytes are
// zero. Spare capacity grows as Redis's sds strings do (double below 1 MiB,
// 1 MiB more above), so a value grown a little at a time (SETBIT, APPEND)
// costs amortised O(1) per byte instead of a copy of the whole value. It
// reports false, changing nothing, for small chunks and for n below the
// chunk's size.
//
// Unlike Alloc'd bytes, a grown chunk's bytes may move to a new buffer: a
// caller must not keep the old slice (the shard re-reads Bytes after).
func (s *Slab) GrowLarge(ref Ref, n int) ([]byte, bool) {
	p := &s.pages[ref>>chunkBits]
	old := len(p.mem)
	if p.class != -1 || n < old {
		return nil, false
	}
	s.noteLarge(old, -1)
	s.noteLarge(n, 1)
	if n <= cap(p.mem) {
		p.mem = p.mem[:n]
		clear(p.mem[old:])
	} else {
		c := 2 * n
		if n >= 1<<20 {
			c = n + 1<<20
		}
		m := make([]byte, n, c)
		copy(m, p.mem)
		p.mem = m
	}
	s.inUse += int64(n - old)
	s.mapped += int64(n - old)
	return p.mem, true
}

// IsLarge reports whether ref names a large chunk (see GrowLarge).
func (s *Slab) IsLarge(ref Ref) bool { return s.pages[ref>>chunkBits].class == -1 }
