package types

import (
	"bytes"
	"math"
	"math/rand/v2"
	"slices"
	"sort"
	"strconv"
)

const (
	encIntset uint8 = iota
	encListpack
	encHT
)

// Set is a Redis set: an intset (sorted []int64) while every member is an
// integer and there are at most set-max-intset-entries of them, a listpack
// while small, then a hashtable (a pointer-free table over an arena).
type Set struct {
	ints []int64 // intset
	lp   []byte  // listpack of members
	n    int     // members in lp
	t    *table  // hashtable
	enc  uint8
}

// newSet returns an empty set (intset encoding, as Redis's SADD of integers
// creates; the first non-integer member converts it to listpack).
func newSet() *Set { return &Set{} }

// newSetSized mirrors Redis 7.2's setTypeCreate: the encoding for a new set
// whose first member is first and which is expected to receive hint members.
// Without listpack sets (SetMaxListpackEntries 0, Redis 7.0) it is 7.0's:
// an integer first member makes an intset whatever the hint, and Add
// converts it only when the distinct members exceed the limit (SADD s 0 10
// 10 with set-max-intset-entries 2 stays an intset).
func newSetSized(first []byte, hint int, l *Limits) *Set {
	lm := lim(l)
	if _, ok := parseStrictInt(first); ok && (hint <= lm.SetMaxIntsetEntries || lm.SetMaxListpackEntries == 0) {
		return &Set{}
	}
	if hint <= lm.SetMaxListpackEntries {
		return &Set{enc: encListpack}
	}
	return &Set{enc: encHT, t: newTable(kindSet, hint)}
}

// Encoding returns "intset", "listpack" or "hashtable".
func (s *Set) Encoding() string {
	switch s.enc {
	case encIntset:
		return "intset"
	case encListpack:
		return "listpack"
	}
	return "hashtable"
}

// Len returns the number of members.
func (s *Set) Len() int {
	switch s.enc {
	case encIntset:
		return len(s.ints)
	case encListpack:
		return s.n
	}
	return s.t.n
}

func (s *Set) intsetFind(v int64) (int, bool) {
	return slices.BinarySearch(s.ints, v)
}

func (s *Set) lpFind(m []byte) (off, end int, ok bool) {
	for off = 0; off < len(s.lp); {
		v, e := lpNext(s.lp, off)
		if bytes.Equal(v, m) {
			return off, e, true
		}
		off = e
	}
	return 0, 0, false
}

// Contains reports whether m is a member.
func (s *Set) Contains(m []byte) bool {
	switch s.enc {
	case encIntset:
		v, ok := parseStrictInt(m)
		if !ok {
			return false
		}
		_, ok = s.intsetFind(v)
		return ok
	case encListpack:
		_, _, ok := s.lpFind(m)
		return ok
	}
	_, ok := s.t.lookup(m)
	return ok
}

func (s *Set) toHT(extra int) {
	t := newTable(kindSet, s.Len()+extra)
	s.Iterate(func(m []byte) bool { t.add(m); return true })
	s.t, s.ints, s.lp, s.n, s.enc = t, nil, nil, 0, encHT
}

func (s *Set) toListpack() {
	var buf [24]byte
	size := 0
	for _, v := range s.ints {
		size += lpEntrySize(len(strconv.AppendInt(buf[:0], v, 10)))
	}
	lp := make([]byte, 0, size+size/8+16)
	for _, v := range s.ints {
		lp = lpAppend(lp, strconv.AppendInt(buf[:0], v, 10))
	}
	s.lp, s.n, s.ints, s.enc = lp, len(s.ints), nil, encListpack
}

func digits10(v int64) int {
	var buf [24]byte
	return len(strconv.AppendInt(buf[:0], v, 10))
}

// add adds m and reports whether it was new.
func (s *Set) add(m []byte, l *Limits) bool {
	lm := lim(l)
	if s.enc == encIntset {
		if v, ok := parseStrictInt(m); ok {
			i, found := s.intsetFind(v)
			if found {
				return false
			}
			s.ints = slices.Insert(s.ints, i, v)
			if len(s.ints) > lm.SetMaxIntsetEntries {
				s.toHT(0)
			}
			return true
		}
		maxlen := 0
		if len(s.ints) > 0 {
			maxlen = max(digits10(s.ints[0]), digits10(s.ints[len(s.ints)-1]))
		}
		if len(s.ints) < lm.SetMaxListpackEntries && len(m) <= lm.SetMaxListpackValue && maxlen <= lm.SetMaxListpackValue {
			s.toListpack()
		} else {
			s.toHT(1)
		}
	}
	if s.enc == encListpack {
		if _, _, ok := s.lpFind(m); ok {
			return false
		}
		if s.n < lm.SetMaxListpackEntries && len(m) <= lm.SetMaxListpackValue {
			s.lp = lpAppend(s.lp, m)
			s.n++
			return true
		}
		s.toHT(1)
	}
	return s.t.add(m)
}

// remove removes m and reports whether it was a member.
func (s *Set) remove(m []byte) bool {
	switch s.enc {
	case encIntset:
		v, ok := parseStrictInt(m)
		if !ok {
			return false
		}
		i, ok := s.intsetFind(v)
		if ok {
			s.ints = slices.Delete(s.ints, i, i+1)
		}
		return ok
	case encListpack:
		off, end, ok := s.lpFind(m)
		if ok {
			s.lp = lpDelete(s.lp, off, end)
			s.n--
		}
		return ok
	}
	return s.t.remove(m)
}

// Iterate calls fn for each member until fn returns false.
func (s *Set) Iterate(fn func(m []byte) bool) {
	switch s.enc {
	case encIntset:
		var buf [24]byte
		for _, v := range s.ints {
			if !fn(strconv.AppendInt(buf[:0], v, 10)) {
				return
			}
		}
	case encListpack:
		for off := 0; off < len(s.lp); {
			var v []byte
			v, off = lpNext(s.lp, off)
			if !fn(v) {
				return
			}
		}
	default:
		s.t.each(func(ref uint64) bool { return fn(s.t.keyAt(ref)) })
	}
}

// Members returns copies of all members.
func (s *Set) Members() [][]byte {
	out := make([][]byte, 0, s.Len())
	s.Iterate(func(m []byte) bool { out = append(out, bytes.Clone(m)); return true })
	return out
}

// Ints returns the intset members (nil unless Encoding() == "intset"); the
// slice must not be modified.
func (s *Set) Ints() []int64 { return s.ints }

// ListpackBytes returns the listpack encoding (nil unless "listpack").
func (s *Set) ListpackBytes() []byte { return s.lp }

// Scan is SSCAN; small encodings return everything with cursor 0.
func (s *Set) Scan(cursor uint64, count int, fn func(m []byte)) uint64 {
	if s.enc == encHT {
		return s.t.scan(cursor, count, func(ref uint64) { fn(s.t.keyAt(ref)) })
	}
	s.Iterate(func(m []byte) bool { fn(m); return true })
	return 0
}

// memberAt returns member i of a small encoding (offs from lpOffsets).
func (s *Set) memberAt(buf []byte, i int, offs []int) []byte {
	if s.enc == encIntset {
		return strconv.AppendInt(buf[:0], s.ints[i], 10)
	}
	v, _ := lpNext(s.lp, offs[i])
	return v
}

// RandomMembers implements SRANDMEMBER's count semantics (see
// Hash.RandomFields): math.MinInt64 gives ErrOutOfRange; huge negative
// counts must be bounded by the caller, the structure allocates nothing
// proportional to count.
func (s *Set) RandomMembers(r *rand.Rand, count int64, fn func(m []byte)) error {
	if count == math.MinInt64 {
		return ErrOutOfRange
	}
	n := s.Len()
	if n == 0 || count == 0 {
		return nil
	}
	if s.enc == encHT {
		randomRefs(r, s.t, count, func(ref uint64) { fn(s.t.keyAt(ref)) })
		return nil
	}
	var offs []int
	if s.enc == encListpack {
		offs = lpOffsets(s.lp, 1)
	}
	var buf [24]byte
	randomIdx(r, n, count, func(i int) { fn(s.memberAt(buf[:], i, offs)) })
	return nil
}

// pop removes and returns up to count random members (SPOP). count <= 0
// returns nil.
func (s *Set) pop(r *rand.Rand, count int64) [][]byte {
	n := s.Len()
	if count <= 0 || n == 0 {
		return nil
	}
	if count >= int64(n) {
		out := s.Members()
		*s = Set{enc: s.enc}
		if s.enc == encHT {
			s.t = newTable(kindSet, 0)
		}
		return out
	}
	out := make([][]byte, 0, count)
	for ; count > 0; count-- {
		var m []byte
		switch s.enc {
		case encIntset:
			i := r.IntN(len(s.ints))
			m = strconv.AppendInt(nil, s.ints[i], 10)
			s.ints = slices.Delete(s.ints, i, i+1)
		case encListpack:
			i := r.IntN(s.n)
			off := 0
			for ; i > 0; i-- {
				_, off = lpNext(s.lp, off)
			}
			v, end := lpNext(s.lp, off)
			m = bytes.Clone(v)
			s.lp = lpDelete(s.lp, off, end)
			s.n--
		default:
			i := s.t.randomSlot(r)
			m = bytes.Clone(s.t.keyAt(s.t.slots[i] & refMask))
			s.t.deleteAt(i)
		}
		out = append(out, m)
	}
	return out
}

// Clone returns an independent deep copy.
func (s *Set) Clone() *Set {
	c := &Set{n: s.n, enc: s.enc}
	if s.ints != nil {
		c.ints = slices.Clone(s.ints)
	}
	if s.lp != nil {
		c.lp = bytes.Clone(s.lp)
	}
	if s.t != nil {
		c.t = s.t.clone()
	}
	return c
}

// PrefetchFields reads into the CPU caches what SADD, SISMEMBER or SREM of
// members will read: in the hashtable encoding their index slots and
// entries. It changes nothing and returns a byte of what it read, as
// Hash.PrefetchFields.
func (s *Set) PrefetchFields(members [][]byte) byte {
	if s.t == nil {
		return 0
	}
	return s.t.prefetch(members, 512)
}

// MemoryUsage estimates the bytes used by the set.
func (s *Set) MemoryUsage() int {
	m := 72 + 8*cap(s.ints) + cap(s.lp)
	if s.t != nil {
		m += s.t.memoryUsage()
	}
	return m
}

// sortedByLen returns the non-nil sets ordered by ascending size and
// whether any was nil or empty.
func sortedByLen(sets []*Set) ([]*Set, bool) {
	out := make([]*Set, 0, len(sets))
	empty := false
	for _, s := range sets {
		if s == nil || s.Len() == 0 {
			empty = true
			continue
		}
		out = append(out, s)
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Len() < out[j].Len() })
	return out, empty
}

// SetInter calls fn for every member of the intersection (SINTER); a nil
// set stands for a missing key (empty set). fn returning false stops.
func SetInter(sets []*Set, fn func(m []byte) bool) {
	ss, empty := sortedByLen(sets)
	if empty || len(ss) == 0 {
		return
	}
	ss[0].Iterate(func(m []byte) bool {
		for _, o := range ss[1:] {
			if o != ss[0] && !o.Contains(m) {
				return true
			}
		}
		return fn(m)
	})
}

// SetInterCard is SINTERCARD: the intersection size, stopping at limit
// when limit > 0.
func SetInterCard(sets []*Set, limit int) int {
	n := 0
	SetInter(sets, func([]byte) bool {
		n++
		return limit <= 0 || n < limit
	})
	return n
}

// SetInterNew returns the intersection as a new set (SINTERSTORE).
func SetInterNew(sets []*Set, l *Limits) *Set {
	d := newSet()
	SetInter(sets, func(m []byte) bool { d.add(m, l); return true })
	return d
}

// SetUnion returns the union as a new set (SUNION, SUNIONSTORE).
func SetUnion(sets []*Set, l *Limits) *Set {
	d := newSet()
	for _, s := range sets {
		if s != nil {
			s.Iterate(func(m []byte) bool { d.add(m, l); return true })
		}
	}
	return d
}

// SetDiff returns sets[0] minus the others as a new set (SDIFF,
// SDIFFSTORE).
func SetDiff(sets []*Set, l *Limits) *Set {
	d := newSet()
	if len(sets) == 0 || sets[0] == nil {
		return d
	}
	sets[0].Iterate(func(m []byte) bool {
		for _, o := range sets[1:] {
			if o != nil && (o == sets[0] || o.Contains(m)) {
				return true
			}
		}
		d.add(m, l)
		return true
	})
	return d
}
