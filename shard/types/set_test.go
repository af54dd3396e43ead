package types

import (
	"fmt"
	"math"
	"sort"
	"strconv"
	"testing"
)

type setModel struct {
	m   map[string]bool
	enc string
}

func (sm *setModel) add(lm *Limits, v []byte) {
	if sm.m[string(v)] {
		return
	}
	_, isInt := parseStrictInt(v)
	switch sm.enc {
	case "intset":
		if isInt {
			sm.m[string(v)] = true
			if len(sm.m) > lm.SetMaxIntsetEntries {
				sm.enc = "hashtable"
			}
			return
		}
		maxlen := 0
		for k := range sm.m {
			maxlen = max(maxlen, len(k))
		}
		if len(sm.m) < lm.SetMaxListpackEntries && len(v) <= lm.SetMaxListpackValue && maxlen <= lm.SetMaxListpackValue {
			sm.enc = "listpack"
		} else {
			sm.enc = "hashtable"
		}
	case "listpack":
		if len(sm.m) >= lm.SetMaxListpackEntries || len(v) > lm.SetMaxListpackValue {
			sm.enc = "hashtable"
		}
	}
	sm.m[string(v)] = true
}

func checkSet(t *testing.T, s *Set, sm *setModel) {
	t.Helper()
	mustEq(t, "len", s.Len(), len(sm.m))
	mustEq(t, "encoding", s.Encoding(), sm.enc)
	n := 0
	s.Iterate(func(m []byte) bool {
		n++
		if !sm.m[string(m)] {
			t.Fatalf("extra member %q", m)
		}
		return true
	})
	mustEq(t, "iterated", n, len(sm.m))
	if s.enc == encIntset && !sort.SliceIsSorted(s.ints, func(i, j int) bool { return s.ints[i] < s.ints[j] }) {
		t.Fatal("intset not sorted")
	}
}

func TestSetModel(t *testing.T) {
	for seed := uint64(1); seed <= 6; seed++ {
		lm := &DefaultLimits
		switch seed % 3 {
		case 1:
			lm = &Limits{SetMaxIntsetEntries: 20, SetMaxListpackEntries: 10, SetMaxListpackValue: 8}
		case 2:
			lm = &Limits{SetMaxIntsetEntries: 512, SetMaxListpackEntries: 0, SetMaxListpackValue: 64} // Redis 7.0
		}
		r := newRand(seed)
		s := newSet()
		sm := &setModel{m: map[string]bool{}, enc: "intset"}
		intsOnly := seed <= 3
		for step := 0; step < 15000; step++ {
			var v []byte
			if intsOnly && step < 8000 {
				v = []byte(strconv.Itoa(r.IntN(700) - 100))
			} else {
				v = randStr(r, 12)
			}
			switch op := r.IntN(10); {
			case op < 5:
				_, had := sm.m[string(v)]
				sm.add(lm, v)
				mustEq(t, "add", s.Add(wOf(s), v, lm), !had)
			case op < 7:
				had := sm.m[string(v)]
				delete(sm.m, string(v))
				mustEq(t, "remove", s.Remove(wOf(s), v), had)
			case op < 8:
				mustEq(t, "contains", s.Contains(v), sm.m[string(v)])
			case op < 9:
				n := int64(r.IntN(4))
				got := s.Pop(wOf(s), r, n)
				mustEq(t, "pop n", int64(len(got)), min(n, int64(len(sm.m))))
				for _, g := range got {
					if !sm.m[string(g)] {
						t.Fatalf("popped non-member %q", g)
					}
					delete(sm.m, string(g))
				}
			default:
				count := int64(r.IntN(30) - 10)
				seen := map[string]bool{}
				calls := 0
				s.RandomMembers(r, count, func(m []byte) {
					calls++
					if !sm.m[string(m)] {
						t.Fatalf("random non-member %q", m)
					}
					seen[string(m)] = true
				})
				want := int(count)
				if count < 0 {
					want = int(-count)
				} else {
					want = min(want, len(sm.m))
					mustEq(t, "distinct", len(seen), calls)
				}
				if len(sm.m) == 0 {
					want = 0
				}
				mustEq(t, "random calls", calls, want)
			}
			if step%300 == 0 {
				checkSet(t, s, sm)
			}
			if len(sm.m) == 0 {
				s = newSet()
				sm.enc = "intset"
			}
		}
		checkSet(t, s, sm)
		checkSet(t, s.Clone(), sm)
	}
}

func TestSetThresholds(t *testing.T) {
	s := newSet()
	for i := 0; i < 512; i++ {
		s.Add(wOf(s), []byte(strconv.Itoa(i*7-1000)), nil)
	}
	mustEq(t, "512 ints", s.Encoding(), "intset")
	s.Add(wOf(s), []byte("100000"), nil)
	mustEq(t, "513 ints", s.Encoding(), "hashtable")

	s = newSet()
	for i := 0; i < 127; i++ {
		s.Add(wOf(s), []byte(strconv.Itoa(i)), nil)
	}
	s.Add(wOf(s), []byte("x"), nil)
	mustEq(t, "127 ints + x", s.Encoding(), "listpack")
	s = newSet()
	for i := 0; i < 128; i++ {
		s.Add(wOf(s), []byte(strconv.Itoa(i)), nil)
	}
	s.Add(wOf(s), []byte("x"), nil)
	mustEq(t, "128 ints + x", s.Encoding(), "hashtable")

	s = newSet()
	for i := 0; i < 128; i++ {
		s.Add(wOf(s), []byte(fmt.Sprint("m", i)), nil)
	}
	mustEq(t, "128 strings", s.Encoding(), "listpack")
	s.Add(wOf(s), []byte("m-one-more"), nil)
	mustEq(t, "129 strings", s.Encoding(), "hashtable")
	s.Pop(wOf(s), newRand(1), 128)
	mustEq(t, "never back", s.Encoding(), "hashtable")

	s = newSet()
	s.Add(wOf(s), []byte("01"), nil) // not a canonical integer
	mustEq(t, "01", s.Encoding(), "listpack")
	if err := s.RandomMembers(newRand(1), math.MinInt64, func([]byte) {}); err != ErrOutOfRange {
		t.Fatal(err)
	}
}

func TestSetAlgebra(t *testing.T) {
	mk := func(ms ...string) *Set {
		s := newSet()
		for _, m := range ms {
			s.Add(wOf(s), []byte(m), nil)
		}
		return s
	}
	names := func(s *Set) []string {
		var out []string
		s.Iterate(func(m []byte) bool { out = append(out, string(m)); return true })
		sort.Strings(out)
		return out
	}
	a := mk("1", "2", "3", "a", "b")
	b := mk("2", "3", "4", "b")
	c := mk("3", "b", "z")
	mustEq(t, "inter", fmt.Sprint(names(SetInterNew([]*Set{a, b, c}, nil))), "[3 b]")
	mustEq(t, "inter nil", SetInterNew([]*Set{a, nil}, nil).Len(), 0)
	mustEq(t, "intercard", SetInterCard([]*Set{a, b}, 0), 3)
	mustEq(t, "intercard limit", SetInterCard([]*Set{a, b}, 2), 2)
	mustEq(t, "union", fmt.Sprint(names(SetUnion([]*Set{a, nil, c}, nil))), "[1 2 3 a b z]")
	mustEq(t, "diff", fmt.Sprint(names(SetDiff([]*Set{a, b, nil}, nil))), "[1 a]")
	mustEq(t, "diff self", SetDiff([]*Set{a, a}, nil).Len(), 0)
	ints := SetUnion([]*Set{mk("1", "2"), mk("3")}, nil)
	mustEq(t, "union enc", ints.Encoding(), "intset")
}

// PrefetchFields is a hint: on sets and sorted sets in either encoding,
// for present, absent and more than prefetchMax members, it changes
// nothing.
func TestSetZSetPrefetchFields(t *testing.T) {
	s, z := newSet(), newZSet()
	for i := 0; i < 400; i++ {
		var ms [][]byte
		for j := 0; j < 40; j++ {
			ms = append(ms, []byte(fmt.Sprint("m", (i*7+j*13)%700)))
		}
		for _, p := range [][][]byte{ms, ms[:1], nil} {
			s.PrefetchFields(p)
			z.PrefetchFields(p)
		}
		if s.Len() != i || z.Len() != i {
			t.Fatalf("lengths %d %d, want %d", s.Len(), z.Len(), i)
		}
		for j := 0; j < i; j += 37 {
			m := []byte(fmt.Sprint("m", j))
			if sc, ok := z.Score(m); !s.Contains(m) || !ok || sc != float64(j) {
				t.Fatalf("member %s lost", m)
			}
		}
		m := []byte(fmt.Sprint("m", i))
		s.add(m, nil)
		z.add(m, float64(i), 0, nil)
	}
	if s.Encoding() != "hashtable" || z.Encoding() != "skiplist" {
		t.Fatalf("encodings %s %s", s.Encoding(), z.Encoding())
	}
}
