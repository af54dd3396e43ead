package types

import (
	"fmt"
	"math"
	"testing"

	"github.com/damselflydb/damselfly/shard/internal/writegate"
)

// wOf grants the right to change x, as shard.DB.Modify does after the
// pre-change hook (tests of the data structures alone need no hook).
func wOf(x any) W { return writegate.Grant(x) }

// TestWriteGate: a mutating method refuses the zero W and a W granted for
// another object.
func TestWriteGate(t *testing.T) {
	l, w := NewList()
	l.PushBack(w, nil, []byte("a"))
	other, _ := NewList()
	for name, bad := range map[string]W{"zero": {}, "other": wOf(other)} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("%s W: no panic", name)
				}
			}()
			l.PushBack(bad, nil, []byte("b"))
		}()
	}
	if l.Len() != 1 {
		t.Fatalf("len %d", l.Len())
	}
}

// TestZSetPlanPredictsAdd: Plan returns what Add returns, and Add changes
// nothing when Plan says ZNop (ZADD answers from Plan without a W then).
func TestZSetPlanPredictsAdd(t *testing.T) {
	r := newRand(5)
	z := newZSet()
	flagSets := []ZAddFlags{0, ZAddNX, ZAddXX, ZAddGT, ZAddLT, ZAddIncr, ZAddIncr | ZAddXX, ZAddIncr | ZAddGT, ZAddNX | ZAddXX}
	scores := []float64{0, 1, -1, 2.5, math.Inf(1), math.Inf(-1), math.NaN()}
	for range 5000 {
		m := []byte(fmt.Sprint("m", r.IntN(20)))
		sc := scores[r.IntN(len(scores))]
		fl := flagSets[r.IntN(len(flagSets))]
		ps, pr, perr := z.Plan(m, sc, fl)
		before := z.Clone()
		as, ar, aerr := z.Add(wOf(z), m, sc, fl, nil)
		if perr != aerr || pr != ar || (ps != as && !(math.IsNaN(ps) && math.IsNaN(as))) {
			t.Fatalf("%s %v %v: Plan %v %v %v, Add %v %v %v", m, sc, fl, ps, pr, perr, as, ar, aerr)
		}
		if ar == ZNop && !zsetEqual(before, z) {
			t.Fatalf("%s %v %v: ZNop changed the set", m, sc, fl)
		}
	}
}

func zsetEqual(a, b *ZSet) bool {
	if a.Len() != b.Len() {
		return false
	}
	eq := true
	a.Iterate(func(m []byte, s float64) bool {
		t, ok := b.Score(m)
		eq = ok && t == s
		return eq
	})
	return eq
}
