package types

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"testing"

	"github.com/damselflydb/damselfly/listpack"
)

func TestRLPIntsAndStrings(t *testing.T) {
	lp := listpack.New(0)
	ints := []int64{0, 1, 127, 128, -1, -4096, 4095, 4096, -4097, 32767, -32768, 32768, 8388607, -8388608, 8388608,
		math.MaxInt32, math.MinInt32, math.MaxInt32 + 1, math.MaxInt64, math.MinInt64}
	for _, v := range ints {
		lp = listpack.PushInt(lp, v)
	}
	strs := []string{"", "a", strings.Repeat("b", 63), strings.Repeat("c", 64), strings.Repeat("d", 4095), strings.Repeat("e", 4096), "007", "-0", "12a"}
	for _, s := range strs {
		lp = listpack.Push(lp, []byte(s))
	}
	n, err := listpack.Validate(lp)
	if err != nil || n != len(ints)+len(strs) {
		t.Fatalf("validate: %d %v", n, err)
	}
	off := listpack.HeaderSize
	var offs []int
	for _, v := range ints {
		offs = append(offs, off)
		var got int64
		got, off = listpack.Int(lp, off)
		mustEq(t, "int", got, v)
	}
	for _, s := range strs {
		offs = append(offs, off)
		var sc []byte
		var got []byte
		got, off = listpack.Bytes(lp, off, &sc)
		mustEq(t, "str", string(got), s)
	}
	// walking backwards lands on every element
	for i, p := len(offs)-1, len(lp)-1; i >= 0; i-- {
		p = listpack.Prev(lp, p)
		mustEq(t, "prev", p, offs[i])
	}
	// replacing with a bigger and a smaller integer keeps the rest intact
	lp = listpack.ReplaceInt(lp, listpack.HeaderSize, math.MaxInt64)
	lp = listpack.ReplaceInt(lp, listpack.HeaderSize, 5)
	if _, err := listpack.Validate(lp); err != nil {
		t.Fatal(err)
	}
	// corruption is detected, never a panic
	for i := 0; i < len(lp); i += 7 {
		c := append([]byte(nil), lp...)
		c[i] ^= 0x5a
		listpack.Validate(c)
	}
}

type modelEntry struct {
	id StreamID
	fv []string
}

func streamContents(s *Stream, rev bool) string {
	var b strings.Builder
	s.Range(StreamID{}, MaxStreamID, rev, func(id StreamID, fv [][]byte) bool {
		fmt.Fprintf(&b, "%s:", id)
		for _, x := range fv {
			fmt.Fprintf(&b, "%s,", x)
		}
		b.WriteString(";")
		return true
	})
	return b.String()
}

func modelContents(m []modelEntry, rev bool) string {
	var b strings.Builder
	for i := range m {
		e := m[i]
		if rev {
			e = m[len(m)-1-i]
		}
		fmt.Fprintf(&b, "%s:", e.id)
		for _, x := range e.fv {
			fmt.Fprintf(&b, "%s,", x)
		}
		b.WriteString(";")
	}
	return b.String()
}

func TestStreamAgainstModel(t *testing.T) {
	r := newRand(7)
	s := newStream()
	var m []modelEntry
	lim := DefaultLimits
	lim.StreamNodeMaxEntries = 10
	lim.StreamNodeMaxBytes = 300
	var ms uint64 = 1
	for step := 0; step < 5000; step++ {
		switch op := r.IntN(10); {
		case op < 6:
			ms += uint64(r.IntN(2))
			id, _ := s.NextID(ms)
			nf := 1 + r.IntN(3)
			var fv [][]byte
			var sv []string
			for j := 0; j < nf; j++ {
				f := "f" + strconv.Itoa(r.IntN(3))
				v := string(randStr(r, 30))
				if r.IntN(3) == 0 {
					v = strconv.Itoa(r.IntN(100000) - 50000)
				}
				fv = append(fv, []byte(f), []byte(v))
				sv = append(sv, f, v)
			}
			if err := s.add(id, fv, &lim); err != nil {
				t.Fatal(err)
			}
			m = append(m, modelEntry{id, sv})
		case op < 8 && len(m) > 0:
			i := r.IntN(len(m))
			if !s.delete(m[i].id) {
				t.Fatalf("delete %s failed", m[i].id)
			}
			if s.delete(m[i].id) {
				t.Fatal("double delete")
			}
			m = append(m[:i], m[i+1:]...)
		case op == 8 && len(m) > 0:
			n := r.IntN(len(m) + 1)
			got := s.trim(TrimArgs{Enabled: true, MaxLen: true, N: uint64(n), Approx: r.IntN(2) == 0})
			m = m[got:]
			if len(m) < n {
				t.Fatal("trimmed too much")
			}
		case len(m) > 0:
			minID := m[r.IntN(len(m))].id
			got := s.trim(TrimArgs{Enabled: true, MinID: minID})
			m = m[got:]
			if m[0].id != minID {
				t.Fatalf("MINID trim left %s, want %s", m[0].id, minID)
			}
		}
		mustEq(t, "len", s.Len(), len(m))
		if len(m) > 0 {
			mustEq(t, "first", s.FirstID(), m[0].id)
		}
		if step%97 == 0 {
			mustEq(t, "contents", streamContents(s, false), modelContents(m, false))
			mustEq(t, "reverse", streamContents(s, true), modelContents(m, true))
			c := s.Clone()
			c.add(MaxStreamID, [][]byte{[]byte("x"), []byte("y")}, &lim)
			mustEq(t, "clone", streamContents(s, false), modelContents(m, false))
			// nodes reload as they are
			l := newStream()
			s.Nodes(func(master StreamID, lp []byte) bool {
				if err := l.loadNode(master, append([]byte(nil), lp...)); err != nil {
					t.Fatal(err)
				}
				return true
			})
			if err := l.setMeta(StreamMeta{Length: uint64(s.Len()), LastID: s.LastID(), FirstID: s.FirstID(), HasV2: true}); err != nil {
				t.Fatal(err)
			}
			mustEq(t, "reloaded", streamContents(l, false), modelContents(m, false))
		}
	}
	// sub-ranges
	if len(m) > 10 {
		a, b := m[3].id, m[len(m)-4].id
		var got []StreamID
		s.Range(a, b, false, func(id StreamID, _ [][]byte) bool { got = append(got, id); return true })
		mustEq(t, "range len", len(got), len(m)-6)
		got = got[:0]
		s.Range(a, b, true, func(id StreamID, _ [][]byte) bool { got = append(got, id); return len(got) < 3 })
		mustEq(t, "rev range", got[0], b)
		mustEq(t, "rev count", len(got), 3)
	}
}

func TestStreamNodeBoundariesLikeRedis(t *testing.T) {
	// 100 entries per node with Redis's defaults; a value pushing the node
	// past 4096 bytes starts a new one.
	s := newStream()
	for i := 1; i <= 250; i++ {
		s.add(StreamID{uint64(i), 0}, [][]byte{[]byte("f"), []byte("v")}, nil)
	}
	mustEq(t, "nodes", s.NodeCount(), 3)
	s.add(StreamID{1000, 0}, [][]byte{[]byte("f"), []byte(strings.Repeat("x", 4000))}, nil)
	mustEq(t, "nodes after a big entry", s.NodeCount(), 4)
	// a node whose entries are all deleted disappears
	for i := 1; i <= 100; i++ {
		s.delete(StreamID{uint64(i), 0})
	}
	mustEq(t, "nodes after deleting the first", s.NodeCount(), 3)
	mustEq(t, "first", s.FirstID(), StreamID{101, 0})
	mustEq(t, "maxdel", s.MaxDeletedID(), StreamID{100, 0})
	// approximate trimming removes whole nodes only
	mustEq(t, "approx trim", s.trim(TrimArgs{Enabled: true, MaxLen: true, N: 50, Approx: true}), int64(100))
	mustEq(t, "len", s.Len(), 51)
}

func TestStreamLoadNodeRejectsCorruption(t *testing.T) {
	s := newStream()
	for i := 1; i <= 30; i++ {
		s.add(StreamID{uint64(i), uint64(i)}, [][]byte{[]byte("f"), []byte(strconv.Itoa(i)), []byte("g"), []byte("x")}, nil)
	}
	var lp []byte
	var master StreamID
	s.Nodes(func(m StreamID, b []byte) bool { master, lp = m, b; return false })
	bad := 0
	for i := listpack.HeaderSize; i < len(lp)-1; i++ {
		for _, x := range []byte{1, 0x40, 0x80} {
			c := append([]byte(nil), lp...)
			c[i] ^= x
			l := newStream()
			if l.loadNode(master, c) != nil {
				bad++
				continue
			}
			// accepted: it must be fully usable
			streamContents(l, false)
			streamContents(l, true)
		}
	}
	if bad == 0 {
		t.Fatal("no corruption detected")
	}
	l := newStream()
	if err := l.loadNode(master, lp); err != nil {
		t.Fatal(err)
	}
	if err := l.loadNode(master, lp); err == nil {
		t.Fatal("nodes out of order accepted")
	}
}

func TestStreamGroups(t *testing.T) {
	s := newStream()
	for i := 1; i <= 1000; i++ {
		s.add(StreamID{uint64(i), 0}, [][]byte{[]byte("f"), []byte("v")}, nil)
	}
	g := s.createGroup([]byte("g"), StreamID{}, 0)
	if s.createGroup([]byte("g"), StreamID{}, 0) != nil {
		t.Fatal("duplicate group")
	}
	a, _ := g.createConsumer([]byte("a"), 1, 1)
	b, _ := g.createConsumer([]byte("b"), 1, 1)
	for i := 1; i <= 1000; i++ {
		c := a
		if i%2 == 0 {
			c = b
		}
		g.deliver(c, StreamID{uint64(i), 0}, int64(i), false)
	}
	mustEq(t, "pel", g.PendingLen(), 1000)
	mustEq(t, "a pel", a.PendingLen(), 500)
	g.deliver(a, StreamID{2, 0}, 5000, true) // claim
	mustEq(t, "a pel after claim", a.PendingLen(), 501)
	mustEq(t, "count", g.Pending(StreamID{2, 0}).deliveryCount, uint64(2))
	for i := 1; i <= 1000; i += 3 {
		if !g.ack(StreamID{uint64(i), 0}) {
			t.Fatal("ack failed")
		}
	}
	n := 0
	var prev StreamID
	g.PendingAscend(StreamID{}, func(p *PendingEntry, owner *StreamConsumer) bool {
		if n > 0 && !prev.Less(p.id) {
			t.Fatal("PEL out of order")
		}
		prev = p.id
		n++
		return true
	})
	mustEq(t, "pel after acks", n, g.PendingLen())
	mustEq(t, "sum", a.PendingLen()+b.PendingLen(), g.PendingLen())
	c := s.Clone()
	cg := c.Group([]byte("g"))
	cg.deleteConsumer([]byte("a"))
	mustEq(t, "clone independent", g.ConsumerCount(), 2)
	mustEq(t, "clone pel", cg.PendingLen(), b.PendingLen())
	if !s.deleteGroup([]byte("g")) || s.GroupCount() != 0 {
		t.Fatal("delete group")
	}
}

func BenchmarkMemStream1M(b *testing.B) {
	for i := 0; i < b.N; i++ {
		before := heapInUse()
		s := newStream()
		fv := [][]byte{[]byte("f"), []byte("0123456789")}
		for j := 0; j < memN; j++ {
			id, _ := s.NextID(uint64(1700000000000 + j/10))
			s.add(id, fv, nil)
		}
		reportMem(b, before, s)
	}
}
