package dash

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

// TestReserve fills reserved tables to exactly the reserved size and
// compares them with tables grown one insert at a time: never more
// segments, and no splits at all when n/2^d stays below 75% of a segment.
func TestReserve(t *testing.T) {
	f := getFixture(200000)
	for _, n := range []int{1, 2*reserveLoad - 1, 2 * reserveLoad, 5000, 60000, 110000, 140000, 200000} {
		tab := New(f.log, goodHash)
		tab.Reserve(n)
		segs := tab.Segments()
		checkInvariants(t, tab)
		grown := New(f.log, goodHash)
		for i := 0; i < n; i++ {
			h := goodHash(f.query.at(i))
			tab.Insert(h, f.qref[i])
			grown.Insert(h, f.qref[i])
		}
		checkInvariants(t, tab)
		split := tab.Segments() - segs
		t.Logf("n=%d: reserved %d segments (%.0f entries each), %d split while filling; grown one by one: %d",
			n, segs, float64(n)/float64(segs), split, grown.Segments())
		if segs > grown.Segments() {
			t.Errorf("n=%d: %d segments reserved, more than the %d of a grown table", n, segs, grown.Segments())
		}
		if n/segs < reserveLoad*3/2 && split > 0 {
			t.Errorf("n=%d: %d segments split after Reserve", n, split)
		}
	}
}

// TestReserveNonEmpty reserves on a table that already holds entries, with
// a hash that crowds buckets, and checks the invariants and the contents.
func TestReserveNonEmpty(t *testing.T) {
	for name, hf := range map[string]func([]byte) uint64{"good": goodHash, "bucket": badBucketHash} {
		t.Run(name, func(t *testing.T) {
			h := newHarness(t, hf)
			rng := rand.New(rand.NewPCG(7, 8))
			for i := 0; i < 3000; i++ {
				h.insert(fmt.Sprint(rng.IntN(1 << 20)))
			}
			h.tab.Reserve(20000)
			h.check()
			h.tab.Reserve(10) // never shrinks
			h.check()
			for i := 0; i < 20000; i++ {
				h.insert(fmt.Sprint(rng.IntN(1 << 20)))
			}
			h.check()
		})
	}
}

// TestReserveHookAndVersions: Reserve on a table with a hook shows every
// non-empty bucket to the hook before its entries move, like any split.
func TestReserveHookAndVersions(t *testing.T) {
	h := newHarness(t, goodHash)
	for i := 0; i < 2000; i++ {
		h.insert(fmt.Sprint(i))
	}
	seen := map[Ref]bool{}
	h.tab.OnBeforeChange(func(b Bucket) { b.Refs(func(r Ref) { seen[r] = true }) })
	h.tab.SetVersion(9)
	h.tab.Reserve(50000)
	h.tab.OnBeforeChange(nil)
	if len(seen) != len(h.model) {
		t.Fatalf("hook saw %d entries, table has %d", len(seen), len(h.model))
	}
	h.tab.TraverseBuckets(0, func(b Bucket) {})
	h.tab.forEachSegment(func(s *segment) {
		for j := range s.versions {
			if s.versions[j] != 9 {
				t.Fatalf("bucket version %d after Reserve, want 9", s.versions[j])
			}
		}
	})
	h.check()
}

// TestPrefetch: Prefetch changes nothing a lookup or insert can see.
func TestPrefetch(t *testing.T) {
	h := newHarness(t, goodHash)
	for i := 0; i < 5000; i++ {
		key := fmt.Sprint(i)
		h.tab.Prefetch(goodHash(b(key)))
		h.insert(key)
	}
	h.check()
}
