package snapshot

import (
	"bytes"
	"context"
	"crypto/sha256"
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/damselflydb/damselfly/shard"
	"github.com/damselflydb/damselfly/shard/types"
)

// canonEntry renders an entry independently of encoding and order.
func canonEntry(e *shard.Entry) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s@%d:", e.Type(), e.ExpireAt())
	switch e.Type() {
	case shard.TypeString:
		b.WriteString(canonBytes(e.Str()))
	case shard.TypeList:
		e.Obj().(*types.List).Iterate(func(v []byte) bool { b.WriteString(canonBytes(v) + ","); return true })
	case shard.TypeSet:
		var s []string
		e.Obj().(*types.Set).Iterate(func(m []byte) bool { s = append(s, strconv.Quote(string(m))); return true })
		slices.Sort(s)
		b.WriteString(strings.Join(s, ","))
	case shard.TypeHash:
		var s []string
		e.Obj().(*types.Hash).Iterate(func(f, v []byte) bool {
			s = append(s, strconv.Quote(string(f))+"="+strconv.Quote(string(v)))
			return true
		})
		slices.Sort(s)
		b.WriteString(strings.Join(s, ","))
	case shard.TypeZSet:
		e.Obj().(*types.ZSet).Iterate(func(m []byte, sc float64) bool {
			fmt.Fprintf(&b, "%q=%s,", m, strconv.FormatFloat(sc, 'g', 17, 64))
			return true
		})
	case shard.TypeStream:
		canonStream(&b, e.Obj().(*types.Stream))
	}
	return b.String()
}

// canonBytes renders a value for comparison: quoted when short; above
// canonQuoteMax bytes as its length, SHA-256 and a quoted head. Two
// renderings are equal exactly when the bytes are (barring a SHA-256
// collision), but the multi-MB values of the big-value tests are not
// quoted byte by byte, which under -race took most of those tests' time.
func canonBytes[T string | []byte](v T) string {
	if len(v) <= canonQuoteMax {
		return strconv.Quote(string(v))
	}
	return fmt.Sprintf("%d bytes sha256:%x head %q", len(v), sha256.Sum256([]byte(v)), v[:64])
}

const canonQuoteMax = 4096

// canonStream renders a stream: metadata, entries in order, groups with
// their PELs and consumers (the same text redisStream builds from XINFO
// STREAM FULL).
func canonStream(b *strings.Builder, s *types.Stream) {
	fmt.Fprintf(b, "len=%d last=%s first=%s maxdel=%s added=%d entries=", s.Len(), s.LastID(), s.FirstID(), s.MaxDeletedID(), s.EntriesAdded())
	s.Range(types.StreamID{}, types.MaxStreamID, false, func(id types.StreamID, fv [][]byte) bool {
		fmt.Fprintf(b, "%s{", id)
		for i := 0; i < len(fv); i += 2 {
			fmt.Fprintf(b, "%q=%q,", fv[i], fv[i+1])
		}
		b.WriteString("}")
		return true
	})
	s.Groups(func(g *types.StreamGroup) bool {
		fmt.Fprintf(b, " group %q last=%s read=%d pel=", g.Name(), g.LastID(), g.EntriesRead())
		g.PendingAscend(types.StreamID{}, func(p *types.PendingEntry, c *types.StreamConsumer) bool {
			fmt.Fprintf(b, "[%s %q %d %d]", p.ID(), c.Name(), p.DeliveryCount(), p.DeliveryTime())
			return true
		})
		g.Consumers(func(c *types.StreamConsumer) bool {
			fmt.Fprintf(b, " consumer %q seen=%d pel=", c.Name(), c.SeenTime())
			c.Pending(types.StreamID{}, func(id types.StreamID) bool { fmt.Fprintf(b, "%s,", id); return true })
			return true
		})
		return true
	})
}

// contents returns "db key" -> canonical value of every live key at nowMs.
// With lock false the caller holds every shard lock.
func contents(st *shard.Store, nowMs int64, lock bool) map[string]string {
	out := map[string]string{}
	for _, sh := range st.Shards() {
		if lock {
			sh.Lock()
		}
		for db := 0; db < st.DBNum(); db++ {
			d := sh.PeekDB(db)
			if d == nil {
				continue
			}
			for cur := uint64(0); ; {
				cur = d.Scan(cur, func(e *shard.Entry) {
					if !e.Expired(nowMs) {
						out[fmt.Sprintf("%d %s", db, e.Key())] = canonEntry(e)
					}
				})
				if cur == 0 {
					break
				}
			}
		}
		if lock {
			sh.Unlock()
		}
	}
	return out
}

func compareContents(t *testing.T, want, got map[string]string) {
	t.Helper()
	bad := 0
	for _, k := range slices.Sorted(maps.Keys(want)) {
		if g, ok := got[k]; !ok || g != want[k] {
			if bad++; bad <= 10 {
				t.Errorf("key %s:\n got  %.200s (present %v)\n want %.200s", k, g, ok, want[k])
			}
		}
	}
	for k := range got {
		if _, ok := want[k]; !ok {
			if bad++; bad <= 10 {
				t.Errorf("unexpected key %s = %.200s", k, got[k])
			}
		}
	}
	if bad > 0 {
		t.Fatalf("%d differences (%d keys wanted, %d got)", bad, len(want), len(got))
	}
}

// put stores a value (locks the shard).
func put(st *shard.Store, db int, key string, v shard.Value) {
	sh, h := st.ShardOf([]byte(key))
	sh.Lock()
	sh.DB(db).Put(h, []byte(key), v)
	sh.Unlock()
}

func bss(n int, f func(i int) string) [][]byte {
	out := make([][]byte, n)
	for i := range out {
		out[i] = []byte(f(i))
	}
	return out
}

// fillAllTypes stores every type in every encoding, with and without TTLs,
// in several databases.
func fillAllTypes(st *shard.Store, futureMs int64) {
	lim := &types.DefaultLimits
	strs := map[string][]byte{
		"s:empty": {}, "s:int": []byte("12345"), "s:neg": []byte("-9"), "s:bigint": []byte("12345678901234567890"),
		"s:short": []byte("hello"), "s:long": bytes.Repeat([]byte("abcdefgh"), 100), "s:bin": {0, 1, 2, 255, '\r', '\n'},
		"s:lead0": []byte("007"), "s:big": bytes.Repeat([]byte{'x'}, 1<<20),
	}
	for db := 0; db < 3; db++ {
		for k, v := range strs {
			put(st, db, k, shard.Value{Type: shard.TypeString, Str: v})
		}
		put(st, db, "s:ttl", shard.Value{Type: shard.TypeString, Str: []byte("ttl"), ExpireAt: futureMs})
		for _, n := range []int{1, 10, 1000, 20000} {
			l, w := types.NewList()
			l.PushBack(w, lim, bss(n, func(i int) string { return fmt.Sprint("e", i%7, strings.Repeat("z", i%50)) })...)
			put(st, db, fmt.Sprint("l:", n), shard.Value{Type: shard.TypeList, Obj: l})
			h, hw := types.NewHash()
			for i := 0; i < n; i++ {
				h.Set(hw, []byte(fmt.Sprint("f", i)), []byte(fmt.Sprint(i)), lim)
			}
			put(st, db, fmt.Sprint("h:", n), shard.Value{Type: shard.TypeHash, Obj: h, ExpireAt: futureMs})
			is, iw := types.NewSet()
			ss, sw := types.NewSet()
			for i := 0; i < n; i++ {
				is.Add(iw, []byte(strconv.Itoa(i*3-50)), lim)
				ss.Add(sw, []byte(fmt.Sprint("m", i)), lim)
			}
			put(st, db, fmt.Sprint("si:", n), shard.Value{Type: shard.TypeSet, Obj: is})
			put(st, db, fmt.Sprint("ss:", n), shard.Value{Type: shard.TypeSet, Obj: ss})
			z, zw := types.NewZSet()
			for i := 0; i < n; i++ {
				z.Add(zw, []byte(fmt.Sprint("z", i)), float64(i)/3, 0, lim)
			}
			put(st, db, fmt.Sprint("z:", n), shard.Value{Type: shard.TypeZSet, Obj: z})
		}
		h, hw := types.NewHash()
		h.Set(hw, []byte("long"), bytes.Repeat([]byte("v"), 100), lim)
		put(st, db, "h:longval", shard.Value{Type: shard.TypeHash, Obj: h})
		z, zw := types.NewZSet()
		z.Add(zw, []byte("inf"), math.Inf(1), 0, lim)
		z.Add(zw, []byte("-inf"), math.Inf(-1), 0, lim)
		z.Add(zw, []byte("pi"), math.Pi, 0, lim)
		put(st, db, "z:special", shard.Value{Type: shard.TypeZSet, Obj: z})
		for _, n := range []int{0, 1, 10, 1000} {
			put(st, db, fmt.Sprint("x:", n), shard.Value{Type: shard.TypeStream, Obj: testStream(n, futureMs), ExpireAt: futureMs * int64(n%2)})
		}
	}
	for i := 0; i < 5000; i++ {
		put(st, 5, fmt.Sprint("k", i), shard.Value{Type: shard.TypeString, Str: []byte(fmt.Sprint("v", i))})
	}
	put(st, 15, "last", shard.Value{Type: shard.TypeString, Str: []byte("db15")})
	// Expired keys are not saved.
	put(st, 0, "s:expired", shard.Value{Type: shard.TypeString, Str: []byte("x"), ExpireAt: 1000})
}

// testStream builds a stream of n entries with varied fields (integers,
// long values, repeated fields, changing field sets), deletions, and two
// consumer groups with pending entries; nowMs stamps deliveries.
func testStream(n int, nowMs int64) *types.Stream {
	s, w := types.NewStream()
	lim := &types.DefaultLimits
	for i := 0; i < n; i++ {
		id := types.StreamID{Ms: uint64(1000 + i/3), Seq: uint64(i % 3)}
		var fv [][]byte
		switch i % 4 {
		case 0, 1:
			fv = bss(2, func(j int) string { return []string{"temp", strconv.Itoa(i*37 - 500)}[j] })
		case 2:
			fv = bss(4, func(j int) string { return []string{"a", strings.Repeat("v", i%100), "a", "dup"}[j] })
		case 3:
			fv = bss(2, func(j int) string { return []string{"big", strings.Repeat("L", 70+i%5000)}[j] })
		}
		if err := s.Add(w, id, fv, lim); err != nil {
			panic(err)
		}
	}
	for i := 0; i < n; i += 7 {
		s.Delete(w, types.StreamID{Ms: uint64(1000 + i/3), Seq: uint64(i % 3)})
	}
	if n == 0 {
		return s
	}
	g := s.CreateGroup(w, []byte("g2"), s.LastID(), int64(s.EntriesAdded()))
	g.CreateConsumer(w, []byte("idle"), nowMs-5000, nowMs-5000)
	g = s.CreateGroup(w, []byte("g1"), types.StreamID{}, 0)
	alice, _ := g.CreateConsumer(w, []byte("alice"), nowMs, nowMs)
	bob, _ := g.CreateConsumer(w, []byte("bob"), nowMs-10, nowMs-10)
	k := 0
	s.Range(types.StreamID{}, types.MaxStreamID, false, func(id types.StreamID, _ [][]byte) bool {
		c := alice
		if k%3 == 0 {
			c = bob
		}
		g.Deliver(w, c, id, nowMs-int64(k), false)
		g.SetLastID(w, id)
		g.SetEntriesRead(w, g.EntriesRead()+1)
		k++
		return k < 50
	})
	return s
}

// save writes st to a buffer.
func save(t testing.TB, st *shard.Store, opt Options) ([]byte, Stats) {
	t.Helper()
	var buf bytes.Buffer
	stats, err := Write(context.Background(), st, &buf, opt)
	if err != nil {
		t.Fatalf("Write: %v", err)
	}
	if stats.Bytes != int64(buf.Len()) {
		t.Fatalf("Stats.Bytes %d, wrote %d", stats.Bytes, buf.Len())
	}
	return buf.Bytes(), stats
}

func load(t testing.TB, data []byte, shards int) *shard.Store {
	t.Helper()
	st := shard.NewStore(shards, 16)
	if _, err := Load(st, bytes.NewReader(data), "test.rdb"); err != nil {
		t.Fatalf("Load: %v", err)
	}
	return st
}
