package types

import (
	"bytes"
	"fmt"
	"math"
	"testing"
)

func checkHash(t *testing.T, h *Hash, m map[string]string, enc string) {
	t.Helper()
	mustEq(t, "len", h.Len(), len(m))
	mustEq(t, "encoding", h.Encoding(), enc)
	seen := 0
	h.Iterate(func(f, v []byte) bool {
		seen++
		if w, ok := m[string(f)]; !ok || w != string(v) {
			t.Fatalf("field %q=%q want %q (%v)", f, v, w, ok)
		}
		return true
	})
	mustEq(t, "iterated", seen, len(m))
	// a full scan returns every field
	got := map[string]bool{}
	cur := uint64(0)
	for {
		cur = h.Scan(cur, 7, func(f, v []byte) { got[string(f)] = true })
		if cur == 0 {
			break
		}
	}
	mustEq(t, "scanned", len(got), len(m))
}

func TestHashModel(t *testing.T) {
	for seed := uint64(1); seed <= 4; seed++ {
		lm := &DefaultLimits
		if seed%2 == 0 {
			lm = &Limits{HashMaxListpackEntries: 16, HashMaxListpackValue: 20}
		}
		r := newRand(seed)
		h := newHash()
		m := map[string]string{}
		enc := "listpack"
		keys := 40 + int(seed)*300
		for step := 0; step < 20000; step++ {
			f := []byte(fmt.Sprint("f", r.IntN(keys)))
			if r.IntN(200) == 0 {
				f = bytes.Repeat([]byte("F"), lm.HashMaxListpackValue+r.IntN(2))
			}
			switch op := r.IntN(10); {
			case op < 5:
				v := randStr(r, lm.HashMaxListpackValue+1)
				if len(f) > lm.HashMaxListpackValue || len(v) > lm.HashMaxListpackValue {
					enc = "hashtable"
				}
				_, existed := m[string(f)]
				if op == 4 {
					mustEq(t, "setnx", h.SetNX(wOf(h), f, v, lm), !existed)
					if !existed {
						m[string(f)] = string(v)
					}
				} else {
					mustEq(t, "set new", h.Set(wOf(h), f, v, lm), !existed)
					m[string(f)] = string(v)
				}
				if len(m) > lm.HashMaxListpackEntries {
					enc = "hashtable"
				}
			case op < 8:
				_, existed := m[string(f)]
				delete(m, string(f))
				mustEq(t, "delete", h.Delete(wOf(h), f), existed)
			default:
				v, ok := h.Get(f)
				w, wok := m[string(f)]
				if ok != wok || string(v) != w {
					t.Fatalf("get %q", f)
				}
				mustEq(t, "strlen", h.StrLen(f), len(w))
				mustEq(t, "exists", h.Exists(f), wok)
			}
			if step%500 == 0 {
				checkHash(t, h, m, enc)
			}
		}
		checkHash(t, h, m, enc)
		checkHash(t, h.Clone(), m, enc)
	}
}

func TestHashThreshold(t *testing.T) {
	h := newHash()
	for i := 0; i < 512; i++ {
		h.Set(wOf(h), []byte(fmt.Sprint("field", i)), []byte("v"), nil)
	}
	mustEq(t, "512", h.Encoding(), "listpack")
	h.Set(wOf(h), []byte("field0"), []byte("updated"), nil)
	mustEq(t, "512 update", h.Encoding(), "listpack")
	h.Set(wOf(h), []byte("one-more"), []byte("v"), nil)
	mustEq(t, "513", h.Encoding(), "hashtable")
	h2 := newHash()
	h2.Set(wOf(h2), []byte("a"), bytes.Repeat([]byte("x"), 64), nil)
	mustEq(t, "64 bytes", h2.Encoding(), "listpack")
	h2.Set(wOf(h2), []byte("a"), bytes.Repeat([]byte("x"), 65), nil)
	mustEq(t, "65 bytes", h2.Encoding(), "hashtable")
}

func TestHashRandomFields(t *testing.T) {
	r := newRand(7)
	for _, n := range []int{5, 600} {
		h := newHash()
		for i := 0; i < n; i++ {
			h.Set(wOf(h), []byte(fmt.Sprint("f", i)), []byte(fmt.Sprint(i)), nil)
		}
		for _, count := range []int64{0, 1, 3, int64(n) - 1, int64(n), int64(n) + 10, 1 << 62, -1, -7, -20} {
			seen := map[string]int{}
			calls := 0
			err := h.RandomFields(r, count, func(f, v []byte) {
				calls++
				seen[string(f)]++
				if w, _ := h.Get(f); !bytes.Equal(w, v) {
					t.Fatal("value mismatch")
				}
			})
			if err != nil {
				t.Fatal(err)
			}
			want := int(min(count, int64(n)))
			if count < 0 {
				want = int(-count)
			} else if len(seen) != calls {
				t.Fatalf("count %d: repeats", count)
			}
			mustEq(t, fmt.Sprint("n ", n, " count ", count), calls, want)
		}
		if err := h.RandomFields(r, math.MinInt64, func(f, v []byte) {}); err != ErrOutOfRange {
			t.Fatal(err)
		}
	}
}

func TestTableChurn(t *testing.T) {
	// many inserts/deletes: compaction, shrink, backward-shift deletion
	r := newRand(3)
	h := newHash()
	m := map[string]string{}
	for round := 0; round < 4; round++ {
		for i := 0; i < 20000; i++ {
			k := fmt.Sprint("k", r.IntN(30000))
			v := string(randStr(r, 40))
			h.Set(wOf(h), []byte(k), []byte(v), nil)
			m[k] = v
		}
		for k := range m {
			if r.IntN(10) < 9 {
				if !h.Delete(wOf(h), []byte(k)) {
					t.Fatal("delete")
				}
				delete(m, k)
			}
		}
		checkHash(t, h, m, "hashtable")
		if h.t.dead > h.t.live && h.t.dead > minCompact {
			t.Fatalf("not compacted: live %d dead %d", h.t.live, h.t.dead)
		}
	}
}

func TestScanDuringResize(t *testing.T) {
	// elements present during the whole scan are returned at least once
	r := newRand(11)
	s := newSet()
	for i := 0; i < 5000; i++ {
		s.Add(wOf(s), []byte(fmt.Sprint("m", i)), nil)
	}
	seen := map[string]bool{}
	cur := uint64(0)
	next := 5000
	for iter := 0; ; iter++ {
		cur = s.Scan(cur, 50, func(m []byte) { seen[string(m)] = true })
		if cur == 0 {
			break
		}
		if iter%2 == 0 { // grow
			for i := 0; i < 300; i++ {
				s.Add(wOf(s), []byte(fmt.Sprint("m", next)), nil)
				next++
			}
		} else { // shrink by removing late members only
			for i := 0; i < 200 && next > 5000; i++ {
				next--
				s.Remove(wOf(s), []byte(fmt.Sprint("m", next)))
			}
		}
		switch iter {
		case 5: // grow a lot
			for i := 0; i < 40000; i++ {
				s.Add(wOf(s), []byte(fmt.Sprint("x", i)), nil)
			}
		case 30: // shrink a lot
			for i := 0; i < 40000; i++ {
				s.Remove(wOf(s), []byte(fmt.Sprint("x", i)))
			}
		}
		_ = r
	}
	for i := 0; i < 5000; i++ {
		if !seen[fmt.Sprint("m", i)] {
			t.Fatalf("m%d missed", i)
		}
	}
}

// PrefetchFields is a hint: in either encoding, for present, absent and
// more than prefetchMax fields, it changes nothing.
func TestHashPrefetchFields(t *testing.T) {
	lm := &Limits{HashMaxListpackEntries: 16, HashMaxListpackValue: 64}
	h := newHash()
	m := map[string]string{}
	for i := 0; i < 500; i++ {
		var fields [][]byte
		for j := 0; j < 40; j++ {
			fields = append(fields, []byte(fmt.Sprint("f", (i*7+j*13)%700)))
		}
		h.PrefetchFields(fields)
		h.PrefetchFields(fields[:1])
		h.PrefetchFields(nil)
		enc := "listpack"
		if len(m) > lm.HashMaxListpackEntries || h.Encoding() == "hashtable" {
			enc = "hashtable"
		}
		checkHash(t, h, m, enc)
		f, v := fmt.Sprint("f", i), fmt.Sprint("v", i*i)
		h.Set(wOf(h), []byte(f), []byte(v), lm)
		m[f] = v
	}
	if h.Encoding() != "hashtable" {
		t.Fatalf("encoding %s", h.Encoding())
	}
}
