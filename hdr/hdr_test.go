package hdr

import (
	"math/rand/v2"
	"sort"
	"sync"
	"testing"
)

func TestIndexBounds(t *testing.T) {
	prev := -1
	for _, v := range []uint64{0, 1, 255, 256, 257, 511, 512, 1023, 1024, 1031, 1032, 11007, 65536, 1 << 29, Max} {
		i := index(v)
		lo, w := bounds(i)
		if v < lo || v >= lo+w {
			t.Fatalf("value %d in counter %d = [%d,%d)", v, i, lo, lo+w)
		}
		if i < prev {
			t.Fatalf("index not monotonic at %d", v)
		}
		prev = i
		if v >= subCount && w*128 > lo {
			t.Fatalf("value %d: width %d is more than 1/128 of %d", v, w, lo)
		}
	}
	// Every counter's range follows the previous one without a gap.
	var next uint64
	for i := 0; i < buckets; i++ {
		lo, w := bounds(i)
		if lo != next {
			t.Fatalf("counter %d starts at %d, want %d", i, lo, next)
		}
		next = lo + w
	}
}

func TestPercentiles(t *testing.T) {
	h := New()
	var vals []int64
	for i := 0; i < 10000; i++ {
		v := rand.Int64N(5_000_000)
		vals = append(vals, v)
		h.Record(v)
	}
	sort.Slice(vals, func(i, j int) bool { return vals[i] < vals[j] })
	s := NewSnapshot()
	s.Add(h)
	if s.Total != 10000 {
		t.Fatalf("total %d", s.Total)
	}
	for _, p := range []float64{50, 99, 99.9} {
		exact := vals[int(p/100*float64(len(vals)))-1]
		got := s.ValueAtPercentile(p)
		if d := float64(got-exact) / float64(exact); d < -0.01 || d > 0.02 {
			t.Errorf("p%v = %d, exact %d", p, got, exact)
		}
	}
	// Redis's figures: one value of 11 µs reports 11.007 µs.
	h2 := New()
	h2.Record(10990)
	s2 := NewSnapshot()
	s2.Add(h2)
	if got := s2.ValueAtPercentile(50); got != 11007 {
		t.Errorf("p50 of 10990 = %d, want 11007", got)
	}
	if b := s2.Log(1024); len(b) != 1 || b[0].Upper/1000 != 16 || b[0].Count != 1 {
		t.Errorf("log buckets %v", b)
	}
}

func TestLog(t *testing.T) {
	h := New()
	h.Record(500)     // ≤1 µs
	h.Record(1500)    // ≤2 µs
	h.Record(1500)    //
	h.Record(70_000)  // ≤131 µs
	h.Record(2 << 40) // clamped to Max
	s := NewSnapshot()
	s.Add(h)
	b := s.Log(1024)
	want := []int64{1, 3, 4, 5}
	if len(b) != len(want) {
		t.Fatalf("buckets %v", b)
	}
	for i, w := range want {
		if b[i].Count != w {
			t.Fatalf("buckets %v", b)
		}
	}
	if b[0].Upper/1000 != 1 || b[1].Upper/1000 != 2 || b[2].Upper/1000 != 132 {
		t.Fatalf("bounds %v", b)
	}
}

func TestConcurrent(t *testing.T) {
	h := New()
	var wg sync.WaitGroup
	for g := 0; g < 4; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 10000; i++ {
				h.Record(int64(i))
			}
		}()
	}
	s := NewSnapshot()
	s.Add(h) // concurrently with the writers
	wg.Wait()
	s = NewSnapshot()
	s.Add(h)
	if s.Total != 40000 {
		t.Fatalf("total %d", s.Total)
	}
	h.Reset()
	s = NewSnapshot()
	s.Add(h)
	if s.Total != 0 {
		t.Fatal("not reset")
	}
}
