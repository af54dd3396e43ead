package dash

import (
	"strconv"
	"testing"
)

// countingKeys records which refs PrefetchLookups read.
type countingKeys struct {
	*strKeys
	read []Ref
}

func (k *countingKeys) Key(r Ref) []byte {
	k.read = append(k.read, r)
	return k.strKeys.Key(r)
}

// PrefetchLookups reads at most one stored key per hash, only refs that
// are stored, and changes nothing, with colliding hashes too.
func TestPrefetchLookups(t *testing.T) {
	for name, hash := range map[string]func([]byte) uint64{"good": goodHash, "badBucket": badBucketHash, "badFP": badFPHash} {
		h := newHarness(t, hash)
		for i := 0; i < 3000; i++ {
			h.insert("k" + strconv.Itoa(i))
		}
		ck := &countingKeys{strKeys: h.keys}
		h.tab.keys = ck
		var hs []uint64
		for i := 0; i < 6000; i += 7 { // present and absent keys
			hs = append(hs, hash(b("k"+strconv.Itoa(i))))
		}
		h.tab.PrefetchLookups(hs)
		if len(ck.read) > len(hs) {
			t.Fatalf("%s: read %d keys for %d hashes", name, len(ck.read), len(hs))
		}
		stored := map[Ref]bool{}
		for _, r := range h.model {
			stored[r] = true
		}
		for _, r := range ck.read {
			if !stored[r] {
				t.Fatalf("%s: read ref %d, not stored", name, r)
			}
		}
		h.tab.keys = h.keys
		h.check()
	}
}
