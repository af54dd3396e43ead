package replication_test

import (
	"context"
	"fmt"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestEvictionReplicatesAsDEL: keys the primary evicts (maxmemory-policy
// allkeys-lru) are deleted on its replica too, and the replica, which does
// not evict on its own, ends with exactly the primary's dataset.
func TestEvictionReplicatesAsDEL(t *testing.T) {
	primary := startServer(t)
	replica := startServer(t)
	pc, rc := client(t, primary.Addr()), client(t, replica.Addr())
	replicaOf(t, rc, primary.Addr())
	ctx := context.Background()
	runtime.GC() // the servers run in this process: measure a heap without garbage
	time.Sleep(150 * time.Millisecond)
	used, _ := strconv.ParseInt(info(pc, "memory")["used_memory"], 10, 64)
	pc.ConfigSet(ctx, "maxmemory-policy", "allkeys-lru")
	pc.ConfigSet(ctx, "maxmemory", strconv.FormatInt(used+2<<20, 10))
	val := strings.Repeat("v", 200)
	for i := 0; i < 40000; i += 500 {
		p := pc.Pipeline()
		for j := i; j < i+500; j++ {
			p.Set(ctx, fmt.Sprintf("k:%d", j), val, 0)
		}
		if _, err := p.Exec(ctx); err != nil {
			t.Fatal(err)
		}
	}
	evicted, _ := strconv.Atoi(info(pc, "stats")["evicted_keys"])
	if evicted < 1000 { // how many depends on the Go heap's garbage at the start
		t.Fatalf("primary evicted %d keys", evicted)
	}
	waitConverged(t, pc, rc)
	if p, r := pc.DBSize(ctx).Val(), rc.DBSize(ctx).Val(); p != r || p >= 40000 {
		t.Fatalf("primary has %d keys, replica %d", p, r)
	}
}
