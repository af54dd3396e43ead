package server

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// A huge negative count draws its picks from a copy after the shard is
// released: a write to the same key goes through at once while the reply
// of millions of picks is still being written to a client that does not
// read it.
func TestRandRepeatsReleaseShard(t *testing.T) {
	s := startServer(t)
	ctx := context.Background()
	rdb := newClient(t, s)
	rdb.SAdd(ctx, "s", "a", "b", "c")
	rdb.HSet(ctx, "h", "f", "v")
	rdb.ZAdd(ctx, "z", redis.Z{Score: 1, Member: "m"})

	for _, cmd := range [][]string{{"SRANDMEMBER", "s"}, {"HRANDFIELD", "h"}, {"ZRANDMEMBER", "z"}} {
		greedy := dialRaw(t, s)
		greedy.do(cmd[0], cmd[1], "-30000000") // ~200 MB of reply, never read
		time.Sleep(50 * time.Millisecond)
		start := time.Now()
		w := newClient(t, s)
		if err := w.Do(ctx, "DEL", cmd[1]).Err(); err != nil {
			t.Fatal(err)
		}
		if d := time.Since(start); d > 2*time.Second {
			t.Errorf("%s: DEL waited %v behind the picks", cmd[0], d)
		}
		greedy.nc.Close()
	}
}

// The copied picks answer as the in-place ones do: only members, pairs as
// two-element arrays in RESP3 and flat in RESP2.
func TestRandRepeatsReplies(t *testing.T) {
	s := startServer(t)
	ctx := context.Background()
	rdb := newClient(t, s)
	rdb.SAdd(ctx, "s", "a", "b")
	rdb.HSet(ctx, "h", "f1", "v1", "f2", "v2")
	rdb.ZAdd(ctx, "z", redis.Z{Score: 1.5, Member: "m1"}, redis.Z{Score: 2, Member: "m2"})

	ms := rdb.SRandMemberN(ctx, "s", -5000).Val()
	if len(ms) != 5000 {
		t.Fatalf("SRANDMEMBER -5000: %d picks", len(ms))
	}
	for _, m := range ms {
		if m != "a" && m != "b" {
			t.Fatalf("SRANDMEMBER picked %q", m)
		}
	}
	kv := rdb.HRandFieldWithValues(ctx, "h", -3000).Val()
	if len(kv) != 3000 {
		t.Fatalf("HRANDFIELD -3000 WITHVALUES: %d pairs", len(kv))
	}
	for _, p := range kv {
		if p.Key[1] != p.Value[1] {
			t.Fatalf("HRANDFIELD pair %q=%q", p.Key, p.Value)
		}
	}
	r3 := redis.NewClient(&redis.Options{Addr: s.Addr(), Protocol: 3})
	defer r3.Close()
	zs := r3.ZRandMemberWithScores(ctx, "z", -2000).Val()
	if len(zs) != 2000 {
		t.Fatalf("ZRANDMEMBER -2000 WITHSCORES (RESP3): %d pairs", len(zs))
	}
	for _, z := range zs {
		if (z.Member == "m1") != (z.Score == 1.5) {
			t.Fatalf("ZRANDMEMBER pair %v", z)
		}
	}
}
