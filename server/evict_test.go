package server

import (
	"context"
	"fmt"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

func infoField(t *testing.T, c *redis.Client, section, name string) int64 {
	t.Helper()
	info, err := c.Info(context.Background(), section).Result()
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(info, "\r\n") {
		if v, ok := strings.CutPrefix(line, name+":"); ok {
			n, _ := strconv.ParseInt(v, 10, 64)
			return n
		}
	}
	t.Fatalf("INFO %s has no %s", section, name)
	return 0
}

// TestEvictionLRU: with allkeys-lru, writing far past maxmemory never fails;
// the keys evicted are the least recently used ones (keys read just before
// the flood survive), and memory stays near the limit.
func TestEvictionLRU(t *testing.T) {
	if testing.Short() {
		t.Skip("short mode")
	}
	s := startServer(t)
	c := newClient(t, s)
	ctx := context.Background()
	if err := c.Do(ctx, "DEBUG", "POPULATE", 400000, "old", 100).Err(); err != nil {
		t.Fatal(err)
	}
	const hot = 1000
	// The hot keys' SETs, GETs and EXISTS go in pipelines: the server runs
	// the same commands in the same order, in one round trip each.
	hp := c.Pipeline()
	for i := range hot {
		hp.Set(ctx, fmt.Sprintf("hot:%d", i), strings.Repeat("h", 100), 0)
	}
	if _, err := hp.Exec(ctx); err != nil {
		t.Fatal(err)
	}
	time.Sleep(2100 * time.Millisecond) // the LRU clock counts seconds
	for i := range hot {
		hp.Get(ctx, fmt.Sprintf("hot:%d", i))
	}
	if _, err := hp.Exec(ctx); err != nil {
		t.Fatal(err)
	}
	// The server runs in this process: no garbage in the heap it measures.
	// Two collections, since what sync.Pools hold (DEBUG POPULATE's
	// buffers) survives the first: the flood's per-batch collections would
	// otherwise free it and leave room for the new keys without evictions.
	runtime.GC()
	runtime.GC()
	time.Sleep(150 * time.Millisecond) // a cron tick measures memory
	used := infoField(t, c, "memory", "used_memory")
	limit := used + 4<<20
	c.ConfigSet(ctx, "maxmemory-policy", "allkeys-lru")
	c.ConfigSet(ctx, "maxmemory", strconv.FormatInt(limit, 10))
	val := strings.Repeat("n", 100)
	// 100000 new keys need about as many evictions: a quarter of the 400000
	// keys not read since before the sleep, so no recently read key is the
	// least recently used one. used_memory counts the Go heap, which this
	// test's client shares with the server: the client's garbage from the
	// flood is collected after every batch, or on a busy machine it looks
	// like data past the limit and the server evicts for it (CI runs
	// evicted 323211 and 393164 keys for the writes, losing 34 and 322 hot
	// keys).
	for i := 0; i < 100000; i += 1000 {
		runtime.GC()
		p := c.Pipeline()
		for j := i; j < i+1000; j++ {
			p.Set(ctx, fmt.Sprintf("new:%d", j), val, 0)
		}
		if _, err := p.Exec(ctx); err != nil {
			t.Fatalf("write %d past maxmemory with allkeys-lru: %v", i, err)
		}
	}
	evicted := infoField(t, c, "stats", "evicted_keys")
	if evicted < 40000 {
		t.Fatalf("evicted_keys %d after writing 100000 keys past the limit", evicted)
	}
	lost := 0
	exists := make([]*redis.IntCmd, hot)
	for i := range hot {
		exists[i] = hp.Exists(ctx, fmt.Sprintf("hot:%d", i))
	}
	if _, err := hp.Exec(ctx); err != nil {
		t.Fatal(err)
	}
	for _, e := range exists {
		if e.Val() == 0 {
			lost++
		}
	}
	if lost > hot/100 {
		t.Errorf("%d of %d recently read keys were evicted", lost, hot)
	}
	runtime.GC() // used_memory counts the Go heap: measure it without the flood's garbage
	time.Sleep(150 * time.Millisecond)
	if got := infoField(t, c, "memory", "used_memory"); got > limit+limit/20 {
		t.Errorf("used_memory %d, maxmemory %d", got, limit)
	}
	t.Logf("evicted %d keys; %d of %d hot keys lost", evicted, lost, hot)
}

// TestEvictionVolatileTTL: volatile-ttl evicts keys with the soonest expiry
// first and never a key without one; with no such key left, writes get
// Redis's -OOM error.
func TestEvictionVolatileTTL(t *testing.T) {
	s := startServer(t)
	c := newClient(t, s)
	ctx := context.Background()
	val := strings.Repeat("v", 1000)
	for i := range 2000 {
		c.Set(ctx, fmt.Sprintf("keep:%d", i), val, 0)
	}
	for i := range 2000 {
		c.Set(ctx, fmt.Sprintf("ttl:%d", i), val, time.Duration(1000+i)*time.Second)
	}
	runtime.GC()
	time.Sleep(150 * time.Millisecond)
	used := infoField(t, c, "memory", "used_memory")
	c.ConfigSet(ctx, "maxmemory-policy", "volatile-ttl")
	c.ConfigSet(ctx, "maxmemory", strconv.FormatInt(used, 10))
	var oom error
	for i := 0; i < 20000 && oom == nil; i++ {
		oom = c.Set(ctx, fmt.Sprintf("more:%d", i), val, 0).Err()
	}
	if oom == nil || oom.Error() != "OOM command not allowed when used memory > 'maxmemory'." {
		t.Fatalf("writes once no key with a TTL is left: %v", oom)
	}
	if n := c.Exists(ctx, "ttl:0", "ttl:1", "ttl:2").Val(); n != 0 {
		t.Errorf("%d of the soonest-expiring keys survived", n)
	}
	for i := range 2000 {
		if c.Exists(ctx, fmt.Sprintf("keep:%d", i)).Val() == 0 {
			t.Fatalf("keep:%d (no TTL) was evicted under volatile-ttl", i)
		}
	}
}

func TestEvictionConfig(t *testing.T) {
	s := startServer(t)
	r := dialRaw(t, s)
	for _, tc := range []struct{ cmd, want []string }{
		{[]string{"CONFIG", "GET", "maxmemory-policy"}, []string{"*2", "$16", "maxmemory-policy", "$10", "noeviction"}},
		{[]string{"CONFIG", "SET", "maxmemory-policy", "ALLKEYS-LRU"}, []string{"+OK"}},
		{[]string{"CONFIG", "GET", "maxmemory-policy"}, []string{"*2", "$16", "maxmemory-policy", "$11", "allkeys-lru"}},
		{[]string{"CONFIG", "SET", "maxmemory-policy", "allkeys-lfu"}, []string{"+OK"}},
		{[]string{"CONFIG", "SET", "maxmemory-policy", "bogus"}, []string{"-ERR CONFIG SET failed (possibly related to argument 'maxmemory-policy') - argument(s) must be one of the following: volatile-lru, volatile-lfu, volatile-random, volatile-ttl, allkeys-lru, allkeys-lfu, allkeys-random, noeviction"}},
		{[]string{"CONFIG", "SET", "maxmemory-samples", "10"}, []string{"+OK"}},
		{[]string{"CONFIG", "GET", "maxmemory-samples"}, []string{"*2", "$17", "maxmemory-samples", "$2", "10"}},
		{[]string{"CONFIG", "SET", "maxmemory-samples", "0"}, []string{"-ERR CONFIG SET failed (possibly related to argument 'maxmemory-samples') - argument must be between 1 and 64 inclusive"}},
	} {
		r.do(tc.cmd...)
		if got := r.reply(); strings.Join(got, "|") != strings.Join(tc.want, "|") {
			t.Errorf("%v: got %q, want %q", tc.cmd, got, tc.want)
		}
	}
}

// TestEvictionBudgetAtStart: a server started with maxmemory and an
// eviction policy over a loaded dataset evicts nothing on its first write
// (the budget is measured before serving, not at the cron's first tick).
func TestEvictionBudgetAtStart(t *testing.T) {
	dir := t.TempDir()
	s := startServer(t, func(c *Config) { c.Dir = dir })
	c := newClient(t, s)
	ctx := context.Background()
	if err := c.Do(ctx, "DEBUG", "POPULATE", 50000, "k", 100).Err(); err != nil {
		t.Fatal(err)
	}
	if err := c.Save(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	s.Close()
	s2 := startServerPrepared(t, func(s *Server) {
		if err := s.LoadDump(); err != nil {
			t.Fatal(err)
		}
	}, func(c *Config) { c.Dir = dir; c.MaxMemory = 1 << 30; c.MaxMemoryPolicy = "allkeys-lru" })
	c2 := newClient(t, s2)
	if err := c2.Set(ctx, "first", "write", 0).Err(); err != nil {
		t.Fatal(err)
	}
	if n := c2.DBSize(ctx).Val(); n != 50001 {
		t.Fatalf("%d keys after the first write, want 50001 (nothing evicted under a 1 GB limit)", n)
	}
}
