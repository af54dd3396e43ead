package types

import (
	"fmt"
	"testing"
)

func TestCloneIndependentAndMemory(t *testing.T) {
	for _, n := range []int{10, 2000} {
		h, s, z, l := newHash(), newSet(), newZSet(), newList()
		for i := 0; i < n; i++ {
			k := []byte(fmt.Sprint("k", i))
			h.Set(wOf(h), k, k, nil)
			s.Add(wOf(s), k, nil)
			z.Add(wOf(z), k, float64(i), 0, nil)
			l.PushBack(wOf(l), nil, k)
		}
		hc, sc, zc, lc := h.Clone(), s.Clone(), z.Clone(), l.Clone()
		hc.Set(wOf(hc), []byte("k0"), []byte("changed"), nil)
		hc.Delete(wOf(hc), []byte("k1"))
		sc.Remove(wOf(sc), []byte("k0"))
		zc.Add(wOf(zc), []byte("k0"), -5, 0, nil)
		zc.Remove(wOf(zc), []byte("k1"))
		lc.Set(wOf(lc), 0, []byte("changed"), nil)
		lc.PopBack(wOf(lc), 1)
		if v, _ := h.Get([]byte("k0")); string(v) != "k0" || !h.Exists([]byte("k1")) {
			t.Fatal("hash clone shares memory")
		}
		if !s.Contains([]byte("k0")) || s.Len() != n {
			t.Fatal("set clone shares memory")
		}
		if sc2, _ := z.Score([]byte("k0")); sc2 != 0 || z.Len() != n {
			t.Fatal("zset clone shares memory")
		}
		if v, _ := l.Index(0); string(v) != "k0" || l.Len() != n {
			t.Fatal("list clone shares memory")
		}
		for name, m := range map[string]int{"hash": h.MemoryUsage(), "set": s.MemoryUsage(), "zset": z.MemoryUsage(), "list": l.MemoryUsage()} {
			if m < n*3 || m > n*200+100000 {
				t.Fatalf("%s memory usage %d for %d members", name, m, n)
			}
		}
	}
}
