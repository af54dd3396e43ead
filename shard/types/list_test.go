package types

import (
	"bytes"
	"fmt"
	"slices"
	"testing"
)

type listModel struct {
	v   [][]byte
	big bool
}

func (m *listModel) rsz() int {
	s := redisLPHeader
	for _, v := range m.v {
		s += redisLPEntrySize(v)
	}
	return s
}

func (m *listModel) willAdd(lm *Limits, vs ...[]byte) {
	add := 0
	for _, v := range vs {
		add += len(v)
	}
	if exceeds(lm, m.rsz()+add, len(m.v)+len(vs)) {
		m.big = true
	}
}

func modelRange(n int, start, stop int64) (int, int) {
	lo, hi, ok := normRange(start, stop, n)
	if !ok {
		return 0, 0
	}
	return lo, hi
}

func checkList(t *testing.T, l *List, m *listModel, lm *Limits) {
	t.Helper()
	mustEq(t, "len", l.Len(), len(m.v))
	enc := "listpack"
	if m.big {
		enc = "quicklist"
	}
	mustEq(t, "encoding", l.Encoding(), enc)
	got := l.RangeSlice(0, -1)
	if len(got) != len(m.v) {
		t.Fatalf("range len %d want %d", len(got), len(m.v))
	}
	for i := range got {
		if !bytes.Equal(got[i], m.v[i]) {
			t.Fatalf("elem %d: %q want %q", i, got[i], m.v[i])
		}
	}
	total := 0
	maxBytes, maxCount := nodeLimits(lm)
	l.Nodes(func(b []byte, n int) {
		c, err := lpCheck(b)
		if err != nil || c != n {
			t.Fatalf("node count %d/%d %v", c, n, err)
		}
		if l.big && (n == 0 || (n > 1 && (len(b) > maxBytes || n > maxCount))) {
			t.Fatalf("bad node size %d bytes %d elems", len(b), n)
		}
		total += n
	})
	mustEq(t, "node total", total, len(m.v))
	if !l.big {
		mustEq(t, "rsz", l.rsz, m.rsz())
	}
}

func TestListModel(t *testing.T) {
	for seed := uint64(1); seed <= 6; seed++ {
		lm := &DefaultLimits
		if seed%3 == 0 {
			lm = &Limits{ListMaxListpackSize: 5}
		} else if seed%3 == 1 {
			lm = &Limits{ListMaxListpackSize: -1}
		}
		t.Run(fmt.Sprint(seed), func(t *testing.T) { runListModel(t, seed, lm, false) })
		// the same with nodes from chunks from 16 KiB of node memory on
		t.Run(fmt.Sprint(seed, "/chunked"), func(t *testing.T) { runListModel(t, seed, lm, true) })
	}
}

// smallChunks returns a list whose quicklist nodes come from nodeMem's
// chunks once it holds 16 KiB of nodes (instead of 8 MiB).
func smallChunks() *List {
	l := newList()
	l.mem = &nodeMem{from: 16 << 10, minChunk: 64 << 10, maxChunk: 256 << 10}
	return l
}

func runListModel(t *testing.T, seed uint64, lm *Limits, chunked bool) {
	r := newRand(seed)
	fresh := newList
	if chunked {
		fresh = smallChunks
	}
	l := fresh()
	m := &listModel{}
	usedChunks := false
	val := func() []byte {
		if r.IntN(40) == 0 {
			return bytes.Repeat([]byte{'L'}, 100+r.IntN(3000))
		}
		return randStr(r, 30)
	}
	idx := func() int64 { return int64(r.IntN(2*len(m.v)+3) - len(m.v) - 1) }
	for step := 0; step < 6000; step++ {
		grow := len(m.v) < 600
		switch op := r.IntN(12); {
		case op < 3 || (grow && op < 6):
			vs := make([][]byte, 1+r.IntN(3))
			for i := range vs {
				vs[i] = val()
			}
			m.willAdd(lm, vs...)
			if r.IntN(2) == 0 {
				l.PushBack(wOf(l), lm, vs...)
				m.v = append(m.v, vs...)
			} else {
				l.PushFront(wOf(l), lm, vs...)
				for _, v := range vs {
					m.v = slices.Insert(m.v, 0, v)
				}
			}
		case op == 6:
			n := r.IntN(4)
			got := l.PopFront(wOf(l), n)
			k := min(n, len(m.v))
			for i := 0; i < k; i++ {
				if !bytes.Equal(got[i], m.v[i]) {
					t.Fatal("popfront")
				}
			}
			m.v = m.v[k:]
		case op == 7:
			n := r.IntN(4)
			got := l.PopBack(wOf(l), n)
			k := min(n, len(m.v))
			for i := 0; i < k; i++ {
				if !bytes.Equal(got[i], m.v[len(m.v)-1-i]) {
					t.Fatal("popback")
				}
			}
			m.v = m.v[:len(m.v)-k]
		case op == 8:
			i := idx()
			v := val()
			k, ok := l.normIndex(i)
			m.willAdd(lm, v)
			if ok {
				m.v[k] = v
			}
			mustEq(t, "set", l.Set(wOf(l), i, v, lm), ok)
			g, gok := l.Index(i)
			if ok != gok || (ok && !bytes.Equal(g, v)) {
				t.Fatal("index after set")
			}
		case op == 9:
			if len(m.v) == 0 {
				continue
			}
			pivot := m.v[r.IntN(len(m.v))]
			if r.IntN(5) == 0 {
				pivot = []byte("nope-not-there")
			}
			v := val()
			before := r.IntN(2) == 0
			k := slices.IndexFunc(m.v, func(e []byte) bool { return bytes.Equal(e, pivot) })
			want := -1
			m.willAdd(lm, v)
			if k >= 0 {
				if !before {
					k++
				}
				m.v = slices.Insert(m.v, k, v)
				want = len(m.v)
			}
			mustEq(t, "insert", l.Insert(wOf(l), pivot, v, before, lm), want)
		case op == 10:
			if len(m.v) == 0 {
				continue
			}
			v := m.v[r.IntN(len(m.v))]
			count := int64(r.IntN(5) - 2)
			want := 0
			if count >= 0 {
				for i := 0; i < len(m.v); i++ {
					if bytes.Equal(m.v[i], v) && (count == 0 || int64(want) < count) {
						m.v = slices.Delete(m.v, i, i+1)
						i--
						want++
					}
				}
			} else {
				for i := len(m.v) - 1; i >= 0; i-- {
					if bytes.Equal(m.v[i], v) && int64(want) < -count {
						m.v = slices.Delete(m.v, i, i+1)
						want++
					}
				}
			}
			mustEq(t, "lrem", l.Remove(wOf(l), count, v, lm), want)
		case op == 11:
			if r.IntN(4) != 0 {
				// LRANGE / LPOS checks
				a, b := idx(), idx()
				lo, hi := modelRange(len(m.v), a, b)
				got := l.RangeSlice(a, b)
				if len(got) != hi-lo {
					t.Fatalf("range %d %d: %d want %d", a, b, len(got), hi-lo)
				}
				for i := range got {
					if !bytes.Equal(got[i], m.v[lo+i]) {
						t.Fatal("range elem")
					}
				}
				if len(m.v) > 0 {
					e := m.v[r.IntN(len(m.v))]
					rank := int64(r.IntN(5) - 2)
					if rank == 0 {
						rank = 1
					}
					count, maxlen := int64(r.IntN(3)), int64(r.IntN(2)*r.IntN(len(m.v)+1))
					got, err := l.Pos(e, rank, count, maxlen)
					if err != nil {
						t.Fatal(err)
					}
					want := modelPos(m.v, e, rank, count, maxlen)
					if !slices.Equal(got, want) {
						t.Fatalf("lpos %v %v got %v want %v", rank, count, got, want)
					}
				}
				continue
			}
			a, b := idx(), idx()
			lo, hi := modelRange(len(m.v), a, b)
			m.v = slices.Clone(m.v[lo:hi])
			l.Trim(wOf(l), a, b, lm)
		}
		if step%50 == 0 || len(m.v) < 5 {
			checkList(t, l, m, lm)
		}
		usedChunks = usedChunks || (l.mem != nil && l.mem.chunked)
		if len(m.v) == 0 && r.IntN(3) == 0 {
			// the command layer deletes empty keys
			l, m = fresh(), &listModel{}
		}
	}
	checkList(t, l, m, lm)
	if chunked && !usedChunks {
		t.Fatal("no node came from a chunk")
	}
	c := l.Clone()
	checkList(t, c, m, lm)
}

func modelPos(v [][]byte, e []byte, rank, count, maxlen int64) []int {
	var out []int
	skip := rank - 1
	if rank < 0 {
		skip = -rank - 1
	}
	n := len(v)
	for k := 0; k < n; k++ {
		if maxlen > 0 && int64(k) >= maxlen {
			break
		}
		i := k
		if rank < 0 {
			i = n - 1 - k
		}
		if bytes.Equal(v[i], e) {
			if skip > 0 {
				skip--
				continue
			}
			out = append(out, i)
			if count > 0 && int64(len(out)) >= count {
				break
			}
		}
	}
	return out
}

func TestListThreshold(t *testing.T) {
	// 100-byte strings take 103 bytes in Redis's listpack: 7 + 103*79 + 100
	// = 8244 > 8192, so the 80th push converts (7+103*78+100 = 8141 fits).
	l := newList()
	v := bytes.Repeat([]byte("a"), 100)
	for i := 1; i <= 79; i++ {
		l.PushBack(wOf(l), nil, v)
		mustEq(t, fmt.Sprint("enc after ", i), l.Encoding(), "listpack")
	}
	l.PushBack(wOf(l), nil, v)
	mustEq(t, "enc after 80", l.Encoding(), "quicklist")
	// never converts back
	l.PopBack(wOf(l), 79)
	mustEq(t, "enc after pops", l.Encoding(), "quicklist")

	// count-based fill
	lm := &Limits{ListMaxListpackSize: 3}
	l = newList()
	l.PushBack(wOf(l), lm, []byte("a"), []byte("b"), []byte("c"))
	mustEq(t, "3", l.Encoding(), "listpack")
	l.PushFront(wOf(l), lm, []byte("z"))
	mustEq(t, "4", l.Encoding(), "quicklist")
}

func TestListEdges(t *testing.T) {
	l := newList()
	if _, ok := l.Index(0); ok {
		t.Fatal("index on empty")
	}
	if l.PopFront(wOf(l), 1) != nil || l.PopBack(wOf(l), 5) != nil {
		t.Fatal("pop on empty")
	}
	l.PushBack(wOf(l), nil, []byte("a"), []byte("b"), []byte("c"))
	if got := l.RangeSlice(0, 10000000000); len(got) != 3 {
		t.Fatal(len(got))
	}
	if got := l.RangeSlice(-100, -1); len(got) != 3 {
		t.Fatal(len(got))
	}
	if got := l.RangeSlice(-1<<63, 1<<63-1); len(got) != 3 {
		t.Fatal(len(got))
	}
	if got := l.RangeSlice(2, 1); got != nil {
		t.Fatal(got)
	}
	if got := l.RangeSlice(5, 10); got != nil {
		t.Fatal(got)
	}
	if v, ok := l.Index(-1); !ok || string(v) != "c" {
		t.Fatal("index -1")
	}
	if _, ok := l.Index(-4); ok {
		t.Fatal("index -4")
	}
	if _, ok := l.Index(1 << 62); ok {
		t.Fatal("index huge")
	}
	if l.Set(wOf(l), 3, []byte("x"), nil) {
		t.Fatal("set out of range")
	}
	if _, err := l.Pos([]byte("a"), 0, 1, 0); err != ErrRankZero {
		t.Fatal(err)
	}
	// Redis 7.0 treats RANK -9223372036854775808 as -1 (checked on 7.0.15).
	if p, err := l.Pos([]byte("a"), -1<<63, 1, 0); err != nil || fmt.Sprint(p) != fmt.Sprint(mustPos(l.Pos([]byte("a"), -1, 1, 0))) {
		t.Fatal(p, err)
	}
	if p, _ := l.Pos([]byte("c"), 1, 1, 2); len(p) != 0 {
		t.Fatal("maxlen", p)
	}
	if p, _ := l.Pos([]byte("c"), -1, 1, 1); len(p) != 1 || p[0] != 2 {
		t.Fatal("rank -1", p)
	}
	if got := l.PopFront(wOf(l), 1<<40); len(got) != 3 {
		t.Fatal("pop huge count")
	}
	l.Trim(wOf(l), 1, 0, nil)
	mustEq(t, "trim empty", l.Len(), 0)
}

func mustPos(p []int, err error) []int {
	if err != nil {
		panic(err)
	}
	return p
}

// TestListHeadChurn drives the quicklist head (node headroom reuse, head
// node drops and re-inserts) against a model, with a snapshot-style clone
// taken midway that must stay unchanged.
func TestListHeadChurn(t *testing.T) {
	for _, lm := range []*Limits{&DefaultLimits, {ListMaxListpackSize: 3}} {
		l := newList()
		var m [][]byte
		r := newRand(7)
		var snap *List
		var snapV [][]byte
		for round := 0; round < 40; round++ {
			for i := r.IntN(300); i > 0; i-- {
				v := randStr(r, 1+r.IntN(300))
				l.PushFront(wOf(l), lm, v)
				m = slices.Insert(m, 0, v)
			}
			for _, v := range l.PopFront(wOf(l), r.IntN(300)) {
				if !bytes.Equal(v, m[0]) {
					t.Fatal("PopFront mismatch")
				}
				m = m[1:]
			}
			if round == 20 {
				snap, snapV = l.Clone(), slices.Clone(m)
			}
			if got := l.RangeSlice(0, -1); len(got) != len(m) || l.Len() != len(m) {
				t.Fatalf("len %d, want %d", len(got), len(m))
			} else {
				for i := range got {
					if !bytes.Equal(got[i], m[i]) {
						t.Fatalf("element %d differs", i)
					}
				}
			}
			total := 0
			l.Nodes(func(b []byte, n int) {
				if c, err := lpCheck(b); err != nil || c != n {
					t.Fatalf("node check: %d %d %v", c, n, err)
				}
				total += n
			})
			if total != len(m) {
				t.Fatalf("nodes hold %d, want %d", total, len(m))
			}
		}
		if got := snap.RangeSlice(0, -1); len(got) != len(snapV) {
			t.Fatal("clone changed")
		} else {
			for i := range got {
				if !bytes.Equal(got[i], snapV[i]) {
					t.Fatal("clone changed")
				}
			}
		}
	}
}
