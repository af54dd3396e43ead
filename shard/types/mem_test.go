package types

import (
	"fmt"
	"runtime"
	"strconv"
	"testing"
)

// The memory benchmarks build one collection of 1M members (run them with
// -benchtime=1x) and report the live heap it holds, measured with
// runtime.MemStats after a GC, in bytes per member and MiB.

const memN = 1_000_000

func heapInUse() uint64 {
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}

func reportMem(b *testing.B, before uint64, keep any) {
	after := heapInUse()
	runtime.KeepAlive(keep)
	used := float64(after - before)
	b.ReportMetric(used/memN, "B/member")
	b.ReportMetric(used/(1<<20), "MiB")
}

func BenchmarkMemHash1M(b *testing.B) {
	for i := 0; i < b.N; i++ {
		before := heapInUse()
		h := newHash()
		for j := 0; j < memN; j++ {
			h.Set(wOf(h), []byte("field:"+strconv.Itoa(j)), []byte("value:"+strconv.Itoa(j)), nil)
		}
		reportMem(b, before, h)
	}
}

func BenchmarkMemSetStrings1M(b *testing.B) {
	for i := 0; i < b.N; i++ {
		before := heapInUse()
		s := newSet()
		for j := 0; j < memN; j++ {
			s.Add(wOf(s), []byte("member:"+strconv.Itoa(j)), nil)
		}
		reportMem(b, before, s)
	}
}

func BenchmarkMemSetInts1M(b *testing.B) {
	for i := 0; i < b.N; i++ {
		before := heapInUse()
		s := newSet()
		for j := 0; j < memN; j++ {
			s.Add(wOf(s), []byte(strconv.Itoa(j)), nil)
		}
		reportMem(b, before, s)
	}
}

func BenchmarkMemZSet1M(b *testing.B) {
	r := newRand(1)
	for i := 0; i < b.N; i++ {
		before := heapInUse()
		z := newZSet()
		for j := 0; j < memN; j++ {
			z.Add(wOf(z), []byte("member:"+strconv.Itoa(j)), float64(r.IntN(1_000_000)), 0, nil)
		}
		reportMem(b, before, z)
	}
}

// Baselines: Go maps holding the same data.
func BenchmarkMemGoMapHash1M(b *testing.B) {
	for i := 0; i < b.N; i++ {
		before := heapInUse()
		m := map[string]string{}
		for j := 0; j < memN; j++ {
			m["field:"+strconv.Itoa(j)] = "value:" + strconv.Itoa(j)
		}
		reportMem(b, before, m)
	}
}

func BenchmarkMemList1M(b *testing.B) {
	for i := 0; i < b.N; i++ {
		before := heapInUse()
		l := newList()
		for j := 0; j < memN; j++ {
			l.PushBack(wOf(l), nil, []byte("element:"+strconv.Itoa(j)))
		}
		reportMem(b, before, l)
	}
}

// Speed benchmarks.
func BenchmarkHashSetGet(b *testing.B) {
	h := newHash()
	keys := make([][]byte, 1<<16)
	for i := range keys {
		keys[i] = []byte(fmt.Sprint("field:", i))
		h.Set(wOf(h), keys[i], keys[i], nil)
	}
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		k := keys[i&(len(keys)-1)]
		h.Set(wOf(h), k, k, nil)
		h.Get(k)
	}
}

func BenchmarkZSetAddRank(b *testing.B) {
	z := newZSet()
	r := newRand(2)
	keys := make([][]byte, 1<<16)
	for i := range keys {
		keys[i] = []byte(fmt.Sprint("m:", i))
		z.Add(wOf(z), keys[i], float64(r.IntN(1000)), 0, nil)
	}
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		k := keys[i&(len(keys)-1)]
		z.Add(wOf(z), k, float64(r.IntN(1000)), 0, nil)
		z.Rank(k, false)
	}
}

func BenchmarkListPushPop(b *testing.B) {
	l := newList()
	v := []byte("some-element-value")
	for i := 0; i < 100000; i++ {
		l.PushBack(wOf(l), nil, v)
	}
	b.ResetTimer()
	for b.Loop() {
		l.PushFront(wOf(l), nil, v)
		l.PopBack(wOf(l), 1)
	}
}
