package server

import (
	"context"
	"fmt"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestEvictionLFU: under allkeys-lfu the frequently read keys survive a
// flood of new keys, although they were written first and read before the
// flood (LRU would keep them too; the cold keys here were also written
// after the hot ones, so only frequency separates them), and the survivors
// keep their counts.
func TestEvictionLFU(t *testing.T) {
	s := startServer(t, func(c *Config) { c.Shards = 2 })
	c := newClient(t, s)
	ctx := context.Background()
	c.ConfigSet(ctx, "maxmemory-policy", "allkeys-lfu")
	c.ConfigSet(ctx, "lfu-log-factor", "0") // every access counts: deterministic
	c.ConfigSet(ctx, "lfu-decay-time", "0") // and no minute boundary halves it
	val := strings.Repeat("v", 500)
	const hot = 300
	p := c.Pipeline()
	for i := range hot {
		p.Set(ctx, fmt.Sprintf("hot:%d", i), val, 0)
		for range 10 {
			p.Get(ctx, fmt.Sprintf("hot:%d", i))
		}
	}
	for i := range 20000 {
		p.Set(ctx, fmt.Sprintf("cold:%d", i), val, 0)
	}
	if _, err := p.Exec(ctx); err != nil {
		t.Fatal(err)
	}
	if f, err := c.ObjectFreq(ctx, "hot:7").Result(); err != nil || f != 15 {
		t.Fatalf("OBJECT FREQ of a key read 10 times: %d %v, want 15", f, err)
	}
	runtime.GC()
	time.Sleep(150 * time.Millisecond)
	used := infoField(t, c, "memory", "used_memory")
	c.ConfigSet(ctx, "maxmemory", strconv.FormatInt(used+1<<20, 10))
	for i := 0; i < 20000; i += 1000 {
		p := c.Pipeline()
		for j := i; j < i+1000; j++ {
			p.Set(ctx, fmt.Sprintf("new:%d", j), val, 0)
		}
		if _, err := p.Exec(ctx); err != nil {
			t.Fatalf("write past maxmemory with allkeys-lfu: %v", err)
		}
	}
	c.ConfigSet(ctx, "maxmemory", "0")
	evicted := infoField(t, c, "stats", "evicted_keys")
	if evicted < 5000 {
		t.Fatalf("evicted_keys %d", evicted)
	}
	lost := 0
	for i := range hot {
		if c.Exists(ctx, fmt.Sprintf("hot:%d", i)).Val() == 0 {
			lost++
		}
	}
	if lost > 0 {
		t.Errorf("%d of %d frequently read keys were evicted (%d evictions)", lost, hot, evicted)
	}
	t.Logf("evicted %d keys; %d of %d hot keys lost", evicted, lost, hot)
}
