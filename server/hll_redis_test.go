package server

import (
	"bytes"
	"context"
	"fmt"
	"testing"

	"github.com/redis/go-redis/v9"
)

// TestHLLAgainstRedis feeds the same elements to Damselfly and to a real
// redis-server and requires byte-identical HyperLogLog strings (sparse,
// across the sparse-to-dense promotion, and dense), equal PFCOUNTs (single
// key, cached and uncached, and unions) and equal PFMERGE results. It then
// moves HyperLogLogs both ways with DUMP/RESTORE.
func TestHLLAgainstRedis(t *testing.T) {
	raddr := startRedis(t)
	s := startServer(t)
	ctx := context.Background()
	d := newClient(t, s)
	r := redis.NewClient(&redis.Options{Addr: raddr, Protocol: 2})
	t.Cleanup(func() { r.Close() })
	both := func(args ...any) (any, any) {
		t.Helper()
		dv, derr := d.Do(ctx, args...).Result()
		rv, rerr := r.Do(ctx, args...).Result()
		if fmt.Sprint(dv, derr) != fmt.Sprint(rv, rerr) {
			t.Fatalf("%v: damselfly %v %v, redis %v %v", args, dv, derr, rv, rerr)
		}
		return dv, rv
	}
	sameValue := func(key string) {
		t.Helper()
		dv, _ := d.Get(ctx, key).Bytes()
		rv, _ := r.Get(ctx, key).Bytes()
		if !bytes.Equal(dv, rv) {
			t.Fatalf("%s: strings differ (%d vs %d bytes)\n ours %x\nredis %x", key, len(dv), len(rv), dv[:min(len(dv), 64)], rv[:min(len(rv), 64)])
		}
	}
	n := 0
	for _, target := range []int{0, 1, 3, 10, 50, 200, 700, 1500, 3000, 10000, 40000} {
		for n < target {
			args := []any{"PFADD", "h"}
			batch := 1 + n%7
			if n > 3000 {
				batch = 100
			}
			for k := 0; k < batch && n < target; k++ {
				args = append(args, fmt.Sprintf("element:%d", n))
				n++
			}
			both(args...)
			if n%97 == 0 {
				both("PFCOUNT", "h")
			}
		}
		both("PFADD", "h") // no elements: creates or changes nothing
		sameValue("h")
		both("PFCOUNT", "h")
		sameValue("h") // the cached cardinality
		both("PFCOUNT", "h")
		both("PFDEBUG", "ENCODING", "h")
		if target < 3000 {
			both("PFDEBUG", "DECODE", "h")
		}
	}
	// Unions and merges, sparse with sparse and sparse with dense.
	for i := 0; i < 300; i++ {
		both("PFADD", "s1", fmt.Sprint("a", i))
		both("PFADD", "s2", fmt.Sprint("a", i*3))
	}
	both("PFCOUNT", "s1", "s2")
	both("PFCOUNT", "s1", "s2", "h", "missing")
	both("PFMERGE", "m1", "s1", "s2")
	sameValue("m1")
	both("PFMERGE", "m2", "s1", "h")
	sameValue("m2")
	both("PFMERGE", "s1", "s2")
	sameValue("s1")
	both("PFCOUNT", "m1")
	both("PFCOUNT", "m2")
	both("PFDEBUG", "TODENSE", "s2")
	sameValue("s2")
	both("PFDEBUG", "GETREG", "m1")
	both("SET", "str", "not an hll")
	both("PFADD", "str", "x")
	both("PFCOUNT", "str")
	both("PFCOUNT", "h", "str")
	both("PFMERGE", "str", "h")
	// DUMP/RESTORE both ways.
	for _, key := range []string{"h", "s1", "m1"} {
		payload, err := r.Dump(ctx, key).Result()
		if err != nil {
			t.Fatal(err)
		}
		if err := d.Restore(ctx, "from-redis-"+key, 0, payload).Err(); err != nil {
			t.Fatalf("RESTORE of Redis's %s: %v", key, err)
		}
		want, _ := r.PFCount(ctx, key).Result()
		if got, _ := d.PFCount(ctx, "from-redis-"+key).Result(); got != want {
			t.Fatalf("PFCOUNT of Redis's %s here = %d, want %d", key, got, want)
		}
		payload, err = d.Dump(ctx, key).Result()
		if err != nil {
			t.Fatal(err)
		}
		if err := r.Restore(ctx, "from-damselfly-"+key, 0, payload).Err(); err != nil {
			t.Fatalf("RESTORE of our %s into Redis: %v", key, err)
		}
		if got, _ := r.PFCount(ctx, "from-damselfly-"+key).Result(); got != want {
			t.Fatalf("PFCOUNT of our %s in Redis = %d, want %d", key, got, want)
		}
	}
}

// TestPFSelfTest runs the self test here only: Redis's takes seconds.
func TestPFSelfTest(t *testing.T) {
	s := startServer(t)
	if err := newClient(t, s).Do(context.Background(), "PFSELFTEST").Err(); err != nil {
		t.Fatal(err)
	}
}
