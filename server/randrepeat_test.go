package server

import (
	"context"
	"strings"
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

// A reply of hundreds of millions of picks goes out as it is drawn: a client
// that reads gets every pick, and one that hangs up stops the drawing at
// once instead of leaving a goroutine to build gigabytes nobody reads.
func TestRandRepeatsStreamAndStop(t *testing.T) {
	s := startServer(t)
	ctx := context.Background()
	rdb := newClient(t, s)
	rdb.SAdd(ctx, "s", "a", "b", "c")
	if n := len(rdb.SRandMemberN(ctx, "s", -3000000).Val()); n != 3000000 {
		t.Fatalf("SRANDMEMBER -3000000: %d picks", n)
	}

	greedy := dialRaw(t, s)
	greedy.do("CLIENT", "SETNAME", "greedy")
	greedy.do("SRANDMEMBER", "s", "-300000000") // ~2.4 GB of reply
	time.Sleep(100 * time.Millisecond)
	greedy.nc.Close()
	deadline := time.Now().Add(5 * time.Second)
	for strings.Contains(rdb.ClientList(ctx).Val(), "name=greedy") {
		if time.Now().After(deadline) {
			t.Fatal("the picks were still being drawn 5 s after their client hung up")
		}
		time.Sleep(20 * time.Millisecond)
	}
}
