package dash

import (
	"encoding/binary"
	"fmt"
	"hash/maphash"
	"math/bits"
	"math/rand/v2"
	"testing"
	"unsafe"
)

var seed = maphash.MakeSeed()

func goodHash(k []byte) uint64 { return maphash.Bytes(seed, k) }

// badBucketHash sends every key to buckets 0 or 1 (stash, displacement and
// splits with few entries per segment).
func badBucketHash(k []byte) uint64 { return goodHash(k) &^ 0x3e }

// badFPHash gives every key the same fingerprint and only 4 home buckets.
func badFPHash(k []byte) uint64 { return goodHash(k)&^0xff3c | 0x4200 }

// strKeys is a test Keys: refs index a slice of strings.
type strKeys struct{ s []string }

func (k *strKeys) Key(r Ref) []byte { return unsafe.Slice(unsafe.StringData(k.s[r]), len(k.s[r])) }

func (k *strKeys) add(s string) Ref {
	k.s = append(k.s, s)
	return Ref(len(k.s) - 1)
}

func b(s string) []byte { return []byte(s) }

// harness couples a table with a map model.
type harness struct {
	t     testing.TB
	tab   *Table
	keys  *strKeys
	hash  func([]byte) uint64
	model map[string]Ref
}

func newHarness(t testing.TB, hash func([]byte) uint64) *harness {
	k := &strKeys{}
	return &harness{t: t, tab: New(k, hash), keys: k, hash: hash, model: map[string]Ref{}}
}

func (h *harness) insert(key string) {
	if _, ok := h.model[key]; ok {
		return
	}
	r := h.keys.add(key)
	p := h.tab.Insert(h.hash(b(key)), r)
	if h.tab.Ref(p) != r {
		h.t.Fatalf("Insert(%q) returned pos with ref %d, want %d", key, h.tab.Ref(p), r)
	}
	h.model[key] = r
}

func (h *harness) replace(key string) {
	p, ok := h.tab.Find(h.hash(b(key)), b(key))
	if _, mok := h.model[key]; ok != mok {
		h.t.Fatalf("Find(%q) = %v, model %v", key, ok, mok)
	}
	if !ok {
		return
	}
	r := h.keys.add(key)
	h.tab.Replace(p, r)
	h.model[key] = r
}

func (h *harness) find(key string) {
	p, ok := h.tab.Find(h.hash(b(key)), b(key))
	r, mok := h.model[key]
	if ok != mok {
		h.t.Fatalf("Find(%q) = %v, model %v (len %d)", key, ok, mok, h.tab.Len())
	}
	if ok && h.tab.Ref(p) != r {
		h.t.Fatalf("Find(%q) ref %d, model %d", key, h.tab.Ref(p), r)
	}
}

func (h *harness) remove(key string) {
	p, ok := h.tab.Find(h.hash(b(key)), b(key))
	if _, mok := h.model[key]; ok != mok {
		h.t.Fatalf("Find(%q) = %v, model %v", key, ok, mok)
	}
	if ok {
		h.tab.Remove(p)
		delete(h.model, key)
	}
}

func (h *harness) clear() {
	h.tab.Clear()
	clear(h.model)
}

// check verifies structural invariants and full equality with the model.
func (h *harness) check() {
	h.t.Helper()
	checkInvariants(h.t, h.tab)
	if h.tab.Len() != len(h.model) {
		h.t.Fatalf("Len %d, model %d", h.tab.Len(), len(h.model))
	}
	for k := range h.model {
		h.find(k)
	}
	seen := map[Ref]int{}
	var c uint64
	for {
		c = h.tab.Scan(c, func(r Ref) { seen[r]++ })
		if c == 0 {
			break
		}
	}
	if len(seen) != len(h.model) {
		h.t.Fatalf("full scan saw %d refs, model %d", len(seen), len(h.model))
	}
	for k, r := range h.model {
		if seen[r] != 1 {
			h.t.Fatalf("full scan saw %q %d times", k, seen[r])
		}
	}
}

func checkInvariants(t testing.TB, tab *Table) {
	t.Helper()
	if len(tab.dir) != 1<<tab.depth || tab.shift != 64-tab.depth {
		t.Fatalf("directory len %d depth %d shift %d", len(tab.dir), tab.depth, tab.shift)
	}
	total, segs := 0, 0
	tab.forEachSegment(func(s *segment) {
		segs++
		var ovf [nRegular]uint8
		var stashes [nRegular]uint8
		for j := range s.buckets {
			bk := &s.buckets[j]
			if bk.probe&^bk.occ != 0 {
				t.Fatalf("probe bits on free slots")
			}
			for m := bk.occ; m != 0; m &= m - 1 {
				k := uint(bits.TrailingZeros8(m))
				total++
				h := tab.hash(tab.keys.Key(bk.refs[k]))
				if tab.dir[h>>tab.shift] != s {
					t.Fatalf("entry in wrong segment")
				}
				if bk.fp(k) != fpOf(h) {
					t.Fatalf("fingerprint mismatch")
				}
				home := homeOf(h)
				probe := bk.probe&(1<<k) != 0
				switch {
				case j < nRegular && uint(j) == home:
					if probe {
						t.Fatalf("home entry with probe bit")
					}
				case j < nRegular && uint(j) == neighbour(home):
					if !probe {
						t.Fatalf("neighbour entry without probe bit")
					}
				case j >= nRegular:
					ovf[home]++
					stashes[home] |= 1 << (j - nRegular)
				default:
					t.Fatalf("entry with home %d in bucket %d", home, j)
				}
			}
		}
		for j := 0; j < nRegular; j++ {
			if s.buckets[j].ovf != ovf[j] || s.buckets[j].stashes&stashes[j] != stashes[j] {
				t.Fatalf("bucket %d ovf %d/%d stashes %b/%b", j, s.buckets[j].ovf, ovf[j], s.buckets[j].stashes, stashes[j])
			}
		}
	})
	if total != tab.Len() || segs != tab.segs {
		t.Fatalf("entries %d (Len %d), segments %d (count %d)", total, tab.Len(), segs, tab.segs)
	}
}

func TestMatch(t *testing.T) {
	var bk bucket
	for k := uint(0); k < 8; k++ {
		bk.put(k, uint8(k*37), Ref(k), false)
	}
	for k := uint(0); k < 8; k++ {
		if m := bk.match(uint8(k * 37)); m != 1<<k {
			t.Fatalf("match(%d) = %08b", k*37, m)
		}
	}
	bk.occ = 0
	bk.fps = 0
	bk.put(3, 0, 1, false)
	if m := bk.match(0); m != 1<<3 {
		t.Fatalf("match(0) = %08b", m)
	}
	bk.put(4, 1, 1, false)
	bk.put(5, 0x80, 1, false)
	if m := bk.match(1); m != 1<<4 {
		t.Fatalf("match(1) = %08b", m)
	}
	if m := bk.match(0x80); m != 1<<5 {
		t.Fatalf("match(0x80) = %08b", m)
	}
}

func TestSegmentSize(t *testing.T) {
	if segmentSize > 4096 {
		t.Fatalf("segment is %d bytes, want <= 4096", segmentSize)
	}
	if unsafe.Sizeof(bucket{}) != 48 {
		t.Fatalf("bucket is %d bytes", unsafe.Sizeof(bucket{}))
	}
}

func runModel(t *testing.T, hash func([]byte) uint64, ops, keyspace int, clearEvery int, rng *rand.Rand) {
	h := newHarness(t, hash)
	for i := 0; i < ops; i++ {
		key := fmt.Sprintf("k%d", rng.IntN(keyspace))
		switch r := rng.IntN(100); {
		case r < 50:
			h.insert(key)
		case r < 60:
			h.replace(key)
		case r < 85:
			h.find(key)
		default:
			h.remove(key)
		}
		if clearEvery > 0 && rng.IntN(clearEvery) == 0 {
			h.clear()
		}
		if i%(ops/8) == 0 {
			h.check()
		}
	}
	h.check()
	// Drain everything.
	for k := range h.model {
		h.remove(k)
	}
	h.check()
}

func TestModel(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	ops := 300000
	if testing.Short() {
		ops = 60000
	}
	runModel(t, goodHash, ops, 100000, 0, rng)
}

func TestModelWithClear(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	runModel(t, goodHash, 100000, 20000, 30000, rng)
}

func TestBadHash(t *testing.T) {
	for name, hf := range map[string]func([]byte) uint64{"bucket": badBucketHash, "fingerprint": badFPHash} {
		t.Run(name, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(5, 6))
			runModel(t, hf, 60000, 20000, 0, rng)
		})
	}
}

func TestGrowShrink(t *testing.T) {
	h := newHarness(t, goodHash)
	const n = 200000
	for i := 0; i < n; i++ {
		h.insert(fmt.Sprint(i))
	}
	h.check()
	lf := float64(h.tab.Len()) / float64(h.tab.Segments()*nBuckets*slotsPerBucket)
	t.Logf("n=%d segments=%d depth=%d load=%.3f mem=%.2f B/entry", n, h.tab.Segments(), h.tab.depth, lf,
		float64(h.tab.MemUsage())/float64(n))
	for i := 0; i < n; i += 2 {
		h.remove(fmt.Sprint(i))
	}
	h.check()
	for i := 0; i < n; i++ {
		h.insert(fmt.Sprint(i))
	}
	h.check()
}

func TestNoAlloc(t *testing.T) {
	k := &strKeys{}
	tab := New(k, goodHash)
	for i := 0; i < 10000; i++ {
		s := fmt.Sprint(i)
		tab.Insert(goodHash(b(s)), k.add(s))
	}
	key := b("5000")
	miss := b("nope")
	hk, hm := goodHash(key), goodHash(miss)
	allocs := testing.AllocsPerRun(1000, func() {
		p, ok := tab.Find(hk, key)
		if !ok {
			panic("missing")
		}
		r := tab.Ref(p)
		tab.Replace(p, r)
		tab.Remove(p)
		tab.Insert(hk, r)
		tab.Find(hm, miss)
	})
	if allocs != 0 {
		t.Fatalf("hot path allocates %.1f times", allocs)
	}
}

func TestSample(t *testing.T) {
	h := newHarness(t, goodHash)
	h.tab.Sample(1, func(Ref) bool { t.Fatal("sample on empty"); return false })
	for i := 0; i < 5000; i++ {
		h.insert(fmt.Sprint(i))
	}
	for _, rnd := range []uint64{0, 1, 12345, 1 << 40, ^uint64(0), 71 << 32} {
		seen := map[Ref]bool{}
		h.tab.Sample(rnd, func(r Ref) bool {
			if seen[r] {
				t.Fatalf("rnd %d: ref %d sampled twice", rnd, r)
			}
			seen[r] = true
			return true
		})
		if len(seen) != len(h.model) {
			t.Fatalf("rnd %d: full sample saw %d of %d", rnd, len(seen), len(h.model))
		}
		n := 0
		h.tab.Sample(rnd, func(Ref) bool { n++; return n < 10 })
		if n != 10 {
			t.Fatalf("sample did not stop: %d", n)
		}
	}
}

// TestScanAcrossSplits: keys present during the whole scan are returned at
// least once while inserts between Scan calls split segments and double the
// directory.
func TestScanAcrossSplits(t *testing.T) {
	for _, hf := range []func([]byte) uint64{goodHash, badBucketHash} {
		for round := 0; round < 5; round++ {
			h := newHarness(t, hf)
			rng := rand.New(rand.NewPCG(uint64(round), 9))
			base := 2000 + rng.IntN(20000)
			for i := 0; i < base; i++ {
				h.insert(fmt.Sprint("base", i))
			}
			stable := map[Ref]string{}
			for k, r := range h.model {
				stable[r] = k
			}
			// Some base keys are deleted during the scan: not stable.
			seen := map[Ref]bool{}
			var c uint64
			extra := 0
			startDepth := h.tab.depth
			for {
				c = h.tab.Scan(c, func(r Ref) { seen[r] = true })
				for j := rng.IntN(100); j > 0 && extra < 3*base; j-- {
					h.insert(fmt.Sprint("new", extra))
					extra++
				}
				if rng.IntN(4) == 0 {
					k := fmt.Sprint("base", rng.IntN(base))
					if r, ok := h.model[k]; ok {
						delete(stable, r)
						h.remove(k)
					}
				}
				if c == 0 {
					break
				}
			}
			for r, k := range stable {
				if !seen[r] {
					t.Fatalf("round %d: stable key %q missed by scan", round, k)
				}
			}
			if h.tab.depth == startDepth {
				t.Fatalf("no directory doubling during scan")
			}
			h.check()
		}
	}
}

func TestTraverseAcrossSplits(t *testing.T) {
	for round := 0; round < 5; round++ {
		h := newHarness(t, goodHash)
		rng := rand.New(rand.NewPCG(uint64(round), 11))
		base := 5000 + rng.IntN(20000)
		for i := 0; i < base; i++ {
			h.insert(fmt.Sprint("base", i))
		}
		stable := map[Ref]bool{}
		for _, r := range h.model {
			stable[r] = true
		}
		seen := map[Ref]bool{}
		var c uint64
		extra := 0
		calls := 0
		for {
			c = h.tab.TraverseBuckets(c, func(bk Bucket) { bk.Refs(func(r Ref) { seen[r] = true }) })
			calls++
			for j := rng.IntN(100); j > 0 && extra < 3*base; j-- {
				h.insert(fmt.Sprint("new", extra))
				extra++
			}
			if c == 0 {
				break
			}
		}
		for r := range stable {
			if !seen[r] {
				t.Fatalf("round %d: stable ref %d not traversed", round, r)
			}
		}
		if h.tab.Len() < 2*base {
			t.Fatalf("round %d: only grew to %d from %d", round, h.tab.Len(), base)
		}
	}
}

// TestCursorGarbage: arbitrary cursors must not panic.
func TestCursorGarbage(t *testing.T) {
	h := newHarness(t, goodHash)
	for i := 0; i < 3000; i++ {
		h.insert(fmt.Sprint(i))
	}
	rng := rand.New(rand.NewPCG(7, 7))
	for i := 0; i < 1000; i++ {
		c := rng.Uint64()
		h.tab.Scan(c, func(Ref) {})
		h.tab.TraverseBuckets(c, func(Bucket) {})
	}
	h.tab.Scan(^uint64(0), func(Ref) {})
}

// hookChecker records, per bucket, the refs last seen, and verifies after
// every operation that each bucket whose contents changed was reported to
// the hook before the change (with the old contents), and that new buckets
// (split halves) only hold refs captured from reported buckets or inserted
// by the operation.
type hookChecker struct {
	t        *testing.T
	tab      *Table
	last     map[*bucket]contents
	reported map[*bucket]contents
	captured map[Ref]bool
}

type contents [slotsPerBucket]Ref

func refsOf(bk *bucket) contents {
	rs := bk.refs
	for k := 0; k < slotsPerBucket; k++ {
		if bk.occ&(1<<k) == 0 {
			rs[k] = ^Ref(0)
		}
	}
	return rs
}

func (c *hookChecker) hook(bk Bucket) {
	bp := &bk.s.buckets[bk.i]
	if _, ok := c.reported[bp]; !ok {
		c.reported[bp] = refsOf(bp)
	}
	bk.Refs(func(r Ref) { c.captured[r] = true })
	bk.SetVersion(c.tab.Version())
}

func (c *hookChecker) snapshotAll() {
	clear(c.last)
	c.tab.forEachSegment(func(s *segment) {
		for j := range s.buckets {
			c.last[&s.buckets[j]] = refsOf(&s.buckets[j])
		}
	})
}

func (c *hookChecker) verify(op string, inserted Ref) {
	c.t.Helper()
	ver := c.tab.Version()
	c.tab.forEachSegment(func(s *segment) {
		for j := range s.buckets {
			bk := &s.buckets[j]
			now := refsOf(bk)
			old, existed := c.last[bk]
			if existed {
				if old == now {
					continue
				}
				rep, ok := c.reported[bk]
				if !ok {
					c.t.Fatalf("%s: bucket changed without hook: %v -> %v", op, old, now)
				}
				if rep != old {
					c.t.Fatalf("%s: hook saw %v, bucket was %v", op, rep, old)
				}
			} else {
				Bucket{s, uint8(j)}.Refs(func(r Ref) {
					if r != inserted && !c.captured[r] {
						c.t.Fatalf("%s: new bucket holds ref %d never reported", op, r)
					}
				})
			}
			if s.versions[j] < ver {
				c.t.Fatalf("%s: changed bucket version %d < %d", op, s.versions[j], ver)
			}
		}
	})
	clear(c.reported)
	clear(c.captured)
	c.snapshotAll()
}

func TestHook(t *testing.T) {
	for name, hf := range map[string]func([]byte) uint64{"good": goodHash, "bad": badBucketHash} {
		keyspace := 8000
		if name == "bad" {
			keyspace = 2000
		}
		t.Run(name, func(t *testing.T) {
			h := newHarness(t, hf)
			c := &hookChecker{t: t, tab: h.tab, last: map[*bucket]contents{}, reported: map[*bucket]contents{}, captured: map[Ref]bool{}}
			h.tab.OnBeforeChange(c.hook)
			c.snapshotAll()
			rng := rand.New(rand.NewPCG(8, 8))
			splits := 0
			for i := 0; i < 20000; i++ {
				h.tab.SetVersion(uint64(i / 100))
				key := fmt.Sprintf("k%d", rng.IntN(keyspace))
				segs := h.tab.Segments()
				switch r := rng.IntN(10); {
				case r < 6:
					if _, ok := h.model[key]; ok {
						h.replace(key)
						c.verify("replace", ^Ref(0))
					} else {
						h.insert(key)
						c.verify("insert", h.model[key])
					}
				case r < 9:
					h.remove(key)
					c.verify("remove", ^Ref(0))
				default:
					h.find(key)
					c.verify("find", ^Ref(0))
				}
				splits += h.tab.Segments() - segs
			}
			if splits < 5 {
				t.Fatalf("only %d splits", splits)
			}
			h.check()
			// Clear reports every non-empty bucket.
			nonEmpty := 0
			h.tab.forEachSegment(func(s *segment) {
				for j := range s.buckets {
					if s.buckets[j].occ != 0 {
						nonEmpty++
					}
				}
			})
			clear(c.reported)
			h.clear()
			if len(c.reported) != nonEmpty {
				t.Fatalf("Clear reported %d of %d non-empty buckets", len(c.reported), nonEmpty)
			}
			h.tab.OnBeforeChange(nil)
		})
	}
}

// TestSplitVersions: split halves take the max version of the source.
func TestSplitVersions(t *testing.T) {
	h := newHarness(t, goodHash)
	h.tab.SetVersion(7)
	for i := 0; i < 100; i++ {
		h.insert(fmt.Sprint(i))
	}
	h.tab.SetVersion(3)
	i := 100
	for h.tab.Segments() == 1 {
		h.insert(fmt.Sprint(i))
		i++
	}
	h.tab.forEachSegment(func(s *segment) {
		for j := range s.buckets {
			if s.versions[j] != 7 {
				t.Fatalf("bucket version %d after split, want 7", s.versions[j])
			}
		}
	})
}

// FuzzOps decodes the input into operations (3 bytes each: op, key hi, key
// lo) applied to a table and a map model. The first byte picks the hash.
func FuzzOps(f *testing.F) {
	f.Add([]byte{0, 0, 0, 1, 1, 0, 2, 0, 0, 1, 3, 0, 1})
	f.Add([]byte{1, 0, 0, 1, 0, 0, 2, 0, 0, 3, 0, 0, 4})
	seedOps := make([]byte, 1+3*3000)
	rng := rand.New(rand.NewPCG(1, 1))
	for i := range seedOps {
		seedOps[i] = byte(rng.Uint32())
	}
	f.Add(seedOps)
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) == 0 {
			return
		}
		hashes := []func([]byte) uint64{goodHash, badBucketHash, badFPHash}
		h := newHarness(t, hashes[int(data[0])%len(hashes)])
		data = data[1:]
		for len(data) >= 3 {
			op, kn := data[0], binary.BigEndian.Uint16(data[1:3])
			data = data[3:]
			key := fmt.Sprintf("key%d", kn)
			switch op % 8 {
			case 0, 1, 2:
				h.insert(key)
			case 3:
				h.replace(key)
			case 4:
				h.find(key)
			case 5, 6:
				h.remove(key)
			case 7:
				if op == 7 { // rare
					h.clear()
				} else {
					h.insert(key)
				}
			}
		}
		h.check()
	})
}
