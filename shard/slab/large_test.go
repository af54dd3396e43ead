package slab

import (
	"maps"
	"math/rand/v2"
	"testing"
)

// TestLargeSizes: the counts of live large chunks by length follow a
// model through random Alloc, AllocLarge, GrowLarge and Free, small
// chunks never counted.
func TestLargeSizes(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	s := New(false)
	defer s.Release()
	type live struct {
		ref   Ref
		large bool
		n     int
	}
	var refs []live
	model := map[int]int{}
	sizes := []int{100, MaxSmall, MaxSmall + 1, 20000, 1 << 20, 3<<20 + 5}
	for i := 0; i < 5000; i++ {
		switch op := r.IntN(10); {
		case op < 4 || len(refs) == 0:
			n := sizes[r.IntN(len(sizes))]
			var ref Ref
			if n > MaxSmall && r.IntN(2) == 0 {
				ref, _ = s.AllocLarge(make([]byte, n))
			} else {
				ref, _ = s.Alloc(n)
			}
			refs = append(refs, live{ref, n > MaxSmall, n})
			if n > MaxSmall {
				model[n]++
			}
		case op < 6:
			k := r.IntN(len(refs))
			if l := refs[k]; l.large {
				n := l.n + r.IntN(3)*1000
				if _, ok := s.GrowLarge(l.ref, n); !ok {
					t.Fatalf("GrowLarge %d -> %d refused", l.n, n)
				}
				if model[l.n]--; model[l.n] == 0 {
					delete(model, l.n)
				}
				model[n]++
				refs[k].n = n
			}
		default:
			k := r.IntN(len(refs))
			l := refs[k]
			s.Free(l.ref, l.n)
			if l.large {
				if model[l.n]--; model[l.n] == 0 {
					delete(model, l.n)
				}
			}
			refs[k] = refs[len(refs)-1]
			refs = refs[:len(refs)-1]
		}
		got := map[int]int{}
		s.LargeSizes(func(n, c int) { got[n] = c })
		if !maps.Equal(got, model) {
			t.Fatalf("step %d: counts %v, model %v", i, got, model)
		}
	}
}
