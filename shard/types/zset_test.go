package types

import (
	"bytes"
	"fmt"
	"math"
	"slices"
	"sort"
	"testing"
)

type zmodel struct {
	m   map[string]float64
	big bool
}

func (zm *zmodel) sorted() []ZMember {
	out := make([]ZMember, 0, len(zm.m))
	for k, v := range zm.m {
		out = append(out, ZMember{[]byte(k), v})
	}
	sort.Slice(out, func(i, j int) bool { return zless(out[i].Score, out[i].Member, out[j].Score, out[j].Member) })
	return out
}

func collect(fn func(func(m []byte, s float64) bool)) []ZMember {
	var out []ZMember
	fn(func(m []byte, s float64) bool { out = append(out, ZMember{bytes.Clone(m), s}); return true })
	return out
}

func sameZ(t *testing.T, what string, got, want []ZMember) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: got %d items want %d\n got %v\nwant %v", what, len(got), len(want), fmtZ(got), fmtZ(want))
	}
	for i := range got {
		if !bytes.Equal(got[i].Member, want[i].Member) || got[i].Score != want[i].Score {
			t.Fatalf("%s: item %d got %s/%v want %s/%v", what, i, got[i].Member, got[i].Score, want[i].Member, want[i].Score)
		}
	}
}

func fmtZ(z []ZMember) string {
	s := ""
	for _, m := range z {
		s += fmt.Sprintf("%s:%v ", m.Member, m.Score)
	}
	return s
}

func rev(z []ZMember) []ZMember {
	c := slices.Clone(z)
	slices.Reverse(c)
	return c
}

func checkZ(t *testing.T, z *ZSet, zm *zmodel) {
	t.Helper()
	mustEq(t, "len", z.Len(), len(zm.m))
	enc := "listpack"
	if zm.big {
		enc = "skiplist"
	}
	mustEq(t, "encoding", z.Encoding(), enc)
	sameZ(t, "all", collect(z.Iterate), zm.sorted())
	if z.tr != nil {
		if err := z.tr.check(); err != nil {
			t.Fatal(err)
		}
		mustEq(t, "tree count", z.tr.root.size(), len(zm.m))
	}
}

func modelScoreRange(all []ZMember, min, max ScoreBound) []ZMember {
	var out []ZMember
	for _, e := range all {
		if !min.belowMin(e.Score) && max.notAboveMax(e.Score) {
			out = append(out, e)
		}
	}
	return out
}

func modelLexRange(all []ZMember, min, max LexBound) []ZMember {
	var out []ZMember
	for _, e := range all {
		if !min.belowMin(e.Member) && max.notAboveMax(e.Member) {
			out = append(out, e)
		}
	}
	return out
}

func modelLimit(z []ZMember, offset, count int64) []ZMember {
	if offset < 0 || offset >= int64(len(z)) {
		return nil
	}
	z = z[offset:]
	if count >= 0 && count < int64(len(z)) {
		z = z[:count]
	}
	return z
}

func TestZSetModel(t *testing.T) {
	for seed := uint64(1); seed <= 6; seed++ {
		lm := &DefaultLimits
		if seed%2 == 0 {
			lm = &Limits{ZSetMaxListpackEntries: 10, ZSetMaxListpackValue: 8}
		}
		t.Run(fmt.Sprint(seed), func(t *testing.T) { runZModel(t, seed, lm) })
	}
}

func runZModel(t *testing.T, seed uint64, lm *Limits) {
	r := newRand(seed)
	z := newZSet()
	zm := &zmodel{m: map[string]float64{}}
	lexOnly := seed >= 5 // all scores equal: lex ranges well defined
	keys := 60 + int(seed)*150
	score := func() float64 {
		if lexOnly {
			return 0
		}
		switch r.IntN(20) {
		case 0:
			return math.Inf(1)
		case 1:
			return math.Inf(-1)
		case 2:
			return math.Copysign(0, -1)
		}
		return float64(r.IntN(40)-20) / 2
	}
	member := func() []byte {
		if r.IntN(100) == 0 {
			return bytes.Repeat([]byte("M"), lm.ZSetMaxListpackValue+r.IntN(2))
		}
		return []byte(fmt.Sprint("m", r.IntN(keys)))
	}
	scoreBound := func() ScoreBound {
		return ScoreBound{Value: score(), Excl: r.IntN(2) == 0}
	}
	lexBound := func() LexBound {
		switch r.IntN(8) {
		case 0:
			return LexBound{NegInf: true}
		case 1:
			return LexBound{PosInf: true}
		}
		return LexBound{Value: member(), Excl: r.IntN(2) == 0}
	}
	for step := 0; step < 8000; step++ {
		if len(zm.m) > 3000 {
			lexOnly = lexOnly || false
		}
		grow := len(zm.m) < keys/2
		switch op := r.IntN(14); {
		case op < 4 || (grow && op < 7):
			m := member()
			s := score()
			flags := ZAddFlags(0)
			for _, f := range []ZAddFlags{ZAddNX, ZAddXX, ZAddGT, ZAddLT, ZAddIncr} {
				if r.IntN(6) == 0 {
					flags |= f
				}
			}
			got, res, err := z.Add(wOf(z), m, s, flags, lm)
			// model
			nx, xx, gt, lt := flags&ZAddNX != 0, flags&ZAddXX != 0, flags&ZAddGT != 0, flags&ZAddLT != 0
			if nx && xx {
				if err != ErrIncompatibleFlags {
					t.Fatal("nx xx")
				}
				continue
			}
			if (gt || lt) && (nx || (gt && lt)) {
				if err != ErrGTLTNX {
					t.Fatal("gt lt nx", err)
				}
				continue
			}
			cur, exists := zm.m[string(m)]
			wantRes, wantScore := ZNop, cur
			var wantErr error
			if exists {
				ns := s
				if flags&ZAddIncr != 0 {
					ns = cur + s
				}
				switch {
				case nx:
				case math.IsNaN(ns):
					wantErr, wantScore = ErrNaN, 0
				case (lt && ns >= cur) || (gt && ns <= cur) || ns == cur:
				default:
					wantRes, wantScore = ZUpdated, ns
					zm.m[string(m)] = ns
				}
			} else if !xx {
				wantRes, wantScore = ZAdded, s
				if len(zm.m)+1 > lm.ZSetMaxListpackEntries || len(m) > lm.ZSetMaxListpackValue {
					zm.big = true
				}
				zm.m[string(m)] = s
			} else {
				wantScore = 0
			}
			if err != wantErr || res != wantRes || got != wantScore {
				t.Fatalf("add %s %v flags %b: got %v %v %v want %v %v %v", m, s, flags, got, res, err, wantScore, wantRes, wantErr)
			}
		case op < 6:
			m := member()
			_, had := zm.m[string(m)]
			delete(zm.m, string(m))
			mustEq(t, "remove", z.Remove(wOf(z), m), had)
		case op == 7:
			m := member()
			all := zm.sorted()
			want := slices.IndexFunc(all, func(e ZMember) bool { return bytes.Equal(e.Member, m) })
			rk, sc, ok := z.Rank(m, false)
			mustEq(t, "rank ok", ok, want >= 0)
			if ok {
				mustEq(t, "rank", rk, want)
				mustEq(t, "rank score", sc, all[want].Score)
				rr, _, _ := z.Rank(m, true)
				mustEq(t, "revrank", rr, len(all)-1-want)
			}
			gs, gok := z.Score(m)
			ws, wok := zm.m[string(m)]
			if gs != ws || gok != wok {
				t.Fatal("score")
			}
		case op == 8:
			n := len(zm.m)
			a, b := int64(r.IntN(2*n+5)-n-2), int64(r.IntN(2*n+5)-n-2)
			all := zm.sorted()
			lo, hi := modelRange(n, a, b)
			sameZ(t, "rangebyrank", collect(func(f func([]byte, float64) bool) { z.RangeByRank(a, b, false, f) }), all[lo:hi])
			sameZ(t, "revrangebyrank", collect(func(f func([]byte, float64) bool) { z.RangeByRank(a, b, true, f) }), rev(all)[lo:hi])
		case op == 9:
			mn, mx := scoreBound(), scoreBound()
			off, cnt := int64(r.IntN(4)-1), int64(r.IntN(6)-1)
			if r.IntN(2) == 0 {
				off, cnt = 0, -1
			}
			want := modelScoreRange(zm.sorted(), mn, mx)
			mustEq(t, "zcount", z.CountByScore(mn, mx), len(want))
			sameZ(t, "rangebyscore", collect(func(f func([]byte, float64) bool) { z.RangeByScore(mn, mx, false, off, cnt, f) }), modelLimit(want, off, cnt))
			sameZ(t, "revrangebyscore", collect(func(f func([]byte, float64) bool) { z.RangeByScore(mn, mx, true, off, cnt, f) }), modelLimit(rev(want), off, cnt))
		case op == 10 && lexOnly:
			mn, mx := lexBound(), lexBound()
			off, cnt := int64(r.IntN(4)-1), int64(r.IntN(6)-1)
			want := modelLexRange(zm.sorted(), mn, mx)
			mustEq(t, "zlexcount", z.CountByLex(mn, mx), len(want))
			sameZ(t, "rangebylex", collect(func(f func([]byte, float64) bool) { z.RangeByLex(mn, mx, false, off, cnt, f) }), modelLimit(want, off, cnt))
			sameZ(t, "revrangebylex", collect(func(f func([]byte, float64) bool) { z.RangeByLex(mn, mx, true, off, cnt, f) }), modelLimit(rev(want), off, cnt))
			if r.IntN(4) == 0 {
				mustEq(t, "zremrangebylex", z.RemoveRangeByLex(wOf(z), mn, mx), len(want))
				for _, e := range want {
					delete(zm.m, string(e.Member))
				}
			}
		case op == 11 && r.IntN(3) == 0:
			if r.IntN(2) == 0 {
				mn, mx := scoreBound(), scoreBound()
				want := modelScoreRange(zm.sorted(), mn, mx)
				mustEq(t, "zremrangebyscore", z.RemoveRangeByScore(wOf(z), mn, mx), len(want))
				for _, e := range want {
					delete(zm.m, string(e.Member))
				}
			} else {
				n := len(zm.m)
				a, b := int64(r.IntN(2*n+5)-n-2), int64(r.IntN(n+1)/4)
				lo, hi := modelRange(n, a, b)
				want := zm.sorted()[lo:hi]
				mustEq(t, "zremrangebyrank", z.RemoveRangeByRank(wOf(z), a, b), len(want))
				for _, e := range want {
					delete(zm.m, string(e.Member))
				}
			}
		case op == 12:
			n := int64(r.IntN(4))
			all := zm.sorted()
			k := min(int(n), len(all))
			var got, want []ZMember
			if r.IntN(2) == 0 {
				got, want = z.PopMin(wOf(z), n), all[:k]
			} else {
				got, want = z.PopMax(wOf(z), n), rev(all)[:k]
			}
			sameZ(t, "pop", got, want)
			for _, e := range want {
				delete(zm.m, string(e.Member))
			}
		case op == 13:
			count := int64(r.IntN(30) - 10)
			calls := 0
			seen := map[string]bool{}
			z.RandomMembers(r, count, func(m []byte, s float64) {
				calls++
				seen[string(m)] = true
				if w, ok := zm.m[string(m)]; !ok || w != s {
					t.Fatal("random member")
				}
			})
			want := int(count)
			if count < 0 {
				want = int(-count)
			} else {
				want = min(want, len(zm.m))
				mustEq(t, "distinct", len(seen), calls)
			}
			if len(zm.m) == 0 {
				want = 0
			}
			mustEq(t, "random calls", calls, want)
		}
		if step%200 == 0 {
			checkZ(t, z, zm)
			// scan returns everything
			got := map[string]float64{}
			for cur := z.Scan(0, 10, func(m []byte, s float64) { got[string(m)] = s }); cur != 0; {
				cur = z.Scan(cur, 10, func(m []byte, s float64) { got[string(m)] = s })
			}
			mustEq(t, "scan", len(got), len(zm.m))
		}
		if len(zm.m) == 0 && r.IntN(2) == 0 {
			z, zm = newZSet(), &zmodel{m: map[string]float64{}}
		}
	}
	checkZ(t, z, zm)
	checkZ(t, z.Clone(), zm)
}

func TestZSetThresholdAndEdges(t *testing.T) {
	z := newZSet()
	for i := 0; i < 128; i++ {
		z.Add(wOf(z), []byte(fmt.Sprint("m", i)), float64(i%5), 0, nil)
	}
	mustEq(t, "128", z.Encoding(), "listpack")
	z.Add(wOf(z), []byte("m0"), 99, 0, nil)
	mustEq(t, "128 update", z.Encoding(), "listpack")
	z.Add(wOf(z), []byte("another"), 1, 0, nil)
	mustEq(t, "129", z.Encoding(), "skiplist")
	z2 := newZSet()
	z2.Add(wOf(z2), bytes.Repeat([]byte("x"), 64), 1, 0, nil)
	mustEq(t, "64", z2.Encoding(), "listpack")
	z2.Add(wOf(z2), bytes.Repeat([]byte("x"), 65), 1, 0, nil)
	mustEq(t, "65", z2.Encoding(), "skiplist")
	mustEq(t, "sized", newZSetSized(129, 1, nil).Encoding(), "skiplist")
	mustEq(t, "sized2", newZSetSized(3, 65, nil).Encoding(), "skiplist")
	mustEq(t, "sized3", newZSetSized(3, 64, nil).Encoding(), "listpack")

	for _, z := range []*ZSet{newZSet(), newZSetSized(1000, 0, nil)} {
		// NaN from +inf + -inf
		z.Add(wOf(z), []byte("a"), math.Inf(1), 0, nil)
		if _, _, err := z.Add(wOf(z), []byte("a"), math.Inf(-1), ZAddIncr, nil); err != ErrNaN {
			t.Fatal("want NaN error", err)
		}
		if s, _ := z.Score([]byte("a")); !math.IsInf(s, 1) {
			t.Fatal("score changed")
		}
		if _, _, err := z.Add(wOf(z), []byte("b"), math.NaN(), 0, nil); err != ErrNaN {
			t.Fatal("NaN score accepted")
		}
		// equal scores ordered by member
		for _, m := range []string{"c", "b", "d"} {
			z.Add(wOf(z), []byte(m), 1, 0, nil)
		}
		z.Add(wOf(z), []byte("z"), math.Inf(-1), 0, nil)
		all := collect(z.Iterate)
		mustEq(t, "order", fmtZ(all), "z:-Inf b:1 c:1 d:1 a:+Inf ")
		excl := collect(func(f func([]byte, float64) bool) {
			z.RangeByScore(ScoreBound{Value: 1, Excl: true}, ScoreBound{Value: math.Inf(1)}, false, 0, -1, f)
		})
		mustEq(t, "exclusive", fmtZ(excl), "a:+Inf ")
		mustEq(t, "count excl both", z.CountByScore(ScoreBound{Value: 1, Excl: true}, ScoreBound{Value: 1, Excl: true}), 0)
		mustEq(t, "count inf", z.CountByScore(ScoreBound{Value: math.Inf(-1)}, ScoreBound{Value: math.Inf(1)}), 5)
		mustEq(t, "count min>max", z.CountByScore(ScoreBound{Value: 2}, ScoreBound{Value: 1}), 0)
		got := collect(func(f func([]byte, float64) bool) { z.RangeByRank(0, 10000000000, false, f) })
		mustEq(t, "huge stop", len(got), 5)
		got = collect(func(f func([]byte, float64) bool) { z.RangeByRank(-2, -1, true, f) })
		mustEq(t, "rev neg", fmtZ(got), "b:1 z:-Inf ")
		got = collect(func(f func([]byte, float64) bool) {
			z.RangeByScore(ScoreBound{Value: math.Inf(-1)}, ScoreBound{Value: math.Inf(1)}, false, 1<<62, 1<<62, f)
		})
		mustEq(t, "huge offset", len(got), 0)
		if err := z.RandomMembers(newRand(1), math.MinInt64, func([]byte, float64) {}); err != ErrOutOfRange {
			t.Fatal(err)
		}
		_, res, _ := z.Add(wOf(z), []byte("c"), 0.5, ZAddGT, nil)
		mustEq(t, "gt refused", res, ZNop)
		s, res, _ := z.Add(wOf(z), []byte("c"), 2, ZAddIncr|ZAddLT, nil)
		mustEq(t, "lt incr refused", res, ZNop)
		mustEq(t, "score kept", s, 1.0)
		s, res, _ = z.Add(wOf(z), []byte("c"), 2, ZAddIncr, nil)
		mustEq(t, "incr", res, ZUpdated)
		mustEq(t, "incr score", s, 3.0)
	}
}

func TestParseBounds(t *testing.T) {
	for in, want := range map[string]ScoreBound{"1.5": {1.5, false}, "(1.5": {1.5, true}, "-inf": {math.Inf(-1), false}, "+inf": {math.Inf(1), false}, "(inf": {math.Inf(1), true},
		// As redis-server 7.0 reads them (strtod): empty is 0, space is
		// skipped, hex is read, overflow is inf.
		"": {0, false}, "(": {0, true}, " 1": {1, false}, "0x10": {16, false}, "1e400": {math.Inf(1), false}} {
		got, err := ParseScoreBound([]byte(in))
		if err != nil || got != want {
			t.Fatalf("%q: %v %v", in, got, err)
		}
	}
	for _, in := range []string{"nan", "abc", "1x", "((1", "1 ", "-", " "} {
		if _, err := ParseScoreBound([]byte(in)); err != ErrNotFloatRange {
			t.Fatalf("%q accepted", in)
		}
	}
	for _, in := range []string{"", "a", "+x", "-x", "{a"} {
		if _, err := ParseLexBound([]byte(in)); err != ErrLexRange {
			t.Fatalf("%q accepted", in)
		}
	}
	if b, err := ParseLexBound([]byte("(abc")); err != nil || !b.Excl || string(b.Value) != "abc" {
		t.Fatal("(abc")
	}
	if b, _ := ParseLexBound([]byte("+")); !b.PosInf {
		t.Fatal("+")
	}
}

func TestZTreeLarge(t *testing.T) {
	// large tree: random inserts/deletes with invariant checks and compaction
	r := newRand(5)
	z := newZSetSized(1000, 0, nil)
	m := map[string]float64{}
	for round := 0; round < 3; round++ {
		for i := 0; i < 30000; i++ {
			k := fmt.Sprint("member-", r.IntN(50000))
			s := float64(r.IntN(1000))
			z.Add(wOf(z), []byte(k), s, 0, nil)
			m[k] = s
		}
		if err := z.tr.check(); err != nil {
			t.Fatal(err)
		}
		n := 0
		for k := range m {
			if n%5 != 0 {
				z.Remove(wOf(z), []byte(k))
				delete(m, k)
			}
			n++
		}
		if err := z.tr.check(); err != nil {
			t.Fatal(err)
		}
		checkZ(t, z, &zmodel{m: m, big: true})
		// rank of every 97th element
		all := (&zmodel{m: m}).sorted()
		for i := 0; i < len(all); i += 97 {
			rk, _, ok := z.Rank(all[i].Member, false)
			if !ok || rk != i {
				t.Fatalf("rank %d got %d", i, rk)
			}
		}
	}
	mustEq(t, "remrangebyrank all", z.RemoveRangeByRank(wOf(z), 0, -1), len(m))
	mustEq(t, "empty", z.Len(), 0)
	if err := z.tr.check(); err != nil {
		t.Fatal(err)
	}
}

func TestParseDouble(t *testing.T) {
	// Each as redis-server 7.0's ZADD takes or refuses it.
	for in, want := range map[string]float64{"1": 1, "-1.5": -1.5, "0x10": 16, "0x1p3": 8, "inf": math.Inf(1),
		"-Infinity": math.Inf(-1), "1e-310": 1e-310, ".5": 0.5, "5.": 5, "1E2": 100} {
		if got, ok := ParseDouble([]byte(in)); !ok || got != want {
			t.Errorf("%q: %v %v", in, got, ok)
		}
	}
	for _, in := range []string{"", " 1", "1 ", "nan", "1e400", "-1e400", "1e-400", "1_0", "0b1", "abc", "1e", "0x"} {
		if got, ok := ParseDouble([]byte(in)); ok {
			t.Errorf("%q accepted as %v", in, got)
		}
	}
}
