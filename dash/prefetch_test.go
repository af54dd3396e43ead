package dash

import (
	"strconv"
	"testing"
)

// PrefetchLookups names at most one entry per hash, only stored ones, and
// changes nothing, with colliding hashes too.
func TestPrefetchLookups(t *testing.T) {
	for name, hash := range map[string]func([]byte) uint64{"good": goodHash, "badBucket": badBucketHash, "badFP": badFPHash} {
		h := newHarness(t, hash)
		for i := 0; i < 3000; i++ {
			h.insert("k" + strconv.Itoa(i))
		}
		var hs []uint64
		for i := 0; i < 6000; i += 7 { // present and absent keys
			hs = append(hs, hash(b("k"+strconv.Itoa(i))))
		}
		refs := h.tab.PrefetchLookups(hs, nil)
		// Half the keys are stored; with a good hash few sit in a stash.
		if len(refs) > len(hs) || name == "good" && len(refs) < len(hs)/4 || len(refs) == 0 {
			t.Fatalf("%s: %d refs for %d hashes", name, len(refs), len(hs))
		}
		stored := map[Ref]bool{}
		for _, r := range h.model {
			stored[r] = true
		}
		for _, r := range refs {
			if !stored[r] {
				t.Fatalf("%s: read ref %d, not stored", name, r)
			}
		}
		h.check()
	}
}

// Every stored key gets a ref to prefetch, a key kept in a stash bucket
// too (Find reads that bucket and compares that key after its home and
// neighbour buckets).
func TestPrefetchLookupsStash(t *testing.T) {
	h := newHarness(t, goodHash)
	for i := 0; i < 20000; i++ {
		h.insert("k" + strconv.Itoa(i))
	}
	stored := map[Ref]bool{}
	for _, r := range h.model {
		stored[r] = true
	}
	inStash := 0
	for key, ref := range h.model {
		hash := goodHash(b(key))
		p, ok := h.tab.Find(hash, b(key))
		if !ok {
			t.Fatalf("%q not found", key)
		}
		refs := h.tab.PrefetchLookups([]uint64{hash}, nil)
		if len(refs) != 1 {
			t.Fatalf("%q (bucket %d): %d refs, want 1", key, p.b, len(refs))
		}
		if p.b >= nRegular {
			inStash++
			if refs[0] != ref && !stored[refs[0]] {
				t.Fatalf("%q in a stash: prefetch names ref %d, not stored", key, refs[0])
			}
		}
	}
	if inStash == 0 {
		t.Fatal("no key in a stash bucket: the test covers nothing")
	}
	t.Logf("%d of %d keys in stash buckets", inStash, len(h.model))
}
