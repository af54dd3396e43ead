package types

// Loading a collection whose size is known (an RDB file, a RESTORE
// payload) adds its elements one by one; Reserve sizes the compact
// encoding's memory for them first, so that the appends do not reallocate
// it element after element. It changes no content and no encoding.

// CompactEntrySize is the bytes one element of n bytes takes in a hash's or
// set's compact encoding: what Reserve's sizes add up.
func CompactEntrySize(n int) int { return lpEntrySize(n) }

// Reserve makes room in h's listpack for size more bytes (a sum of
// CompactEntrySize over the fields and values to come); nothing in the
// hashtable encoding.
func (h *Hash) Reserve(w W, size int) {
	w.Check(h)
	if h.t == nil {
		h.lp = reserveBytes(h.lp, size)
	}
}

// Reserve makes room in s's listpack for size more bytes (a sum of
// CompactEntrySize over the members to come), or in its intset for ints
// more members; nothing in the hashtable encoding.
func (s *Set) Reserve(w W, size, ints int) {
	w.Check(s)
	switch s.enc {
	case encListpack:
		s.lp = reserveBytes(s.lp, size)
	case encIntset:
		if cap(s.ints)-len(s.ints) < ints {
			nb := make([]int64, len(s.ints), len(s.ints)+ints)
			copy(nb, s.ints)
			s.ints = nb
		}
	}
}

func reserveBytes(b []byte, extra int) []byte {
	if cap(b)-len(b) >= extra {
		return b
	}
	nb := make([]byte, len(b), len(b)+extra)
	copy(nb, b)
	return nb
}

// ZSetEntrySize is the bytes one member of n bytes (with its score) takes
// in a sorted set's compact encoding.
func ZSetEntrySize(n int) int { return lpEntrySize(n) + lpEntrySize(8) }

// Reserve makes room in z's listpack for size more bytes (a sum of
// ZSetEntrySize over the members to come); nothing in the skiplist
// encoding.
func (z *ZSet) Reserve(w W, size int) {
	w.Check(z)
	if z.t == nil {
		z.lp = reserveBytes(z.lp, size)
	}
}
