package server

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/damselflydb/damselfly/cluster"
)

// TestClusterMigrate moves a range of slots from primary 0 to primary 1
// with CLUSTERX MIGRATE while clients write to them (SET of new keys and
// INCR of counters), then the controller gives the range to the target
// with CLUSTERX SETSLOT: no acknowledged write is lost or applied twice,
// and the source keeps none of the moved keys.
func TestClusterMigrate(t *testing.T) {
	tc := startTestCluster(t)
	ctx := context.Background()
	const lo, hi = 100, 299       // in primary 0's range
	keyIn := func(i int) string { // a key in [lo, hi]
		for j := i; ; j += 1000 {
			k := "m" + strconv.Itoa(j)
			if s := cluster.KeySlot([]byte(k)); s >= lo && s <= hi {
				return k
			}
		}
	}
	var seed []string
	for i := 0; len(seed) < 300; i += 1 {
		k := keyIn(i * 7919)
		seed = append(seed, k)
	}
	cc := redis.NewClusterClient(&redis.ClusterOptions{Addrs: tc.addrs(), MaxRedirects: 16})
	defer cc.Close()
	for i, k := range seed {
		if err := cc.Set(ctx, k, i, 0).Err(); err != nil {
			t.Fatal(err)
		}
	}
	counters := []string{"{" + keyIn(1) + "}c", "{" + keyIn(2) + "}c", "{" + keyIn(3) + "}c"}
	var acked [3]atomic.Int64
	var sets sync.Map
	stop := make(chan struct{})
	var wg sync.WaitGroup
	var retries atomic.Int64
	do := func(f func() error) {
		for {
			err := f()
			if err == nil {
				return
			}
			if !strings.HasPrefix(err.Error(), "TRYAGAIN") && !strings.HasPrefix(err.Error(), "MOVED") {
				t.Errorf("write: %v", err)
				return
			}
			retries.Add(1)
			time.Sleep(time.Millisecond)
		}
	}
	for w := 0; w < 4; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				c := i % 3
				do(func() error { return cc.Incr(ctx, counters[c]).Err() })
				acked[c].Add(1)
				k := fmt.Sprintf("{%s}w%d.%d", seed[i%len(seed)], w, i)
				do(func() error { return cc.Set(ctx, k, i, 0).Err() })
				sets.Store(k, strconv.Itoa(i))
			}
		}(w)
	}
	time.Sleep(50 * time.Millisecond)
	src := newClient(t, tc.nodes[0])
	start := time.Now()
	// As kvrocks-controller does: start it, then poll CLUSTER INFO.
	if err := src.Do(ctx, "CLUSTERX", "MIGRATE", fmt.Sprintf("%d-%d", lo, hi), tc.ids[1], "async").Err(); err != nil {
		t.Fatal(err)
	}
	if err := src.Do(ctx, "CLUSTERX", "MIGRATE", "0", tc.ids[1]).Err(); err == nil || err.Error() != "ERR There is already a migrating slot" {
		t.Fatalf("second MIGRATE: %v", err)
	}
	var info string
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		info, _ = src.Do(ctx, "CLUSTER", "INFO").Text()
		if !strings.Contains(info, "migrating_state:start") || time.Now().After(deadline) {
			break
		}
	}
	took := time.Since(start)
	if !strings.Contains(info, "migrating_state:success\r\n") || !strings.Contains(info, fmt.Sprintf("migrating_slot:%d-%d\r\n", lo, hi)) {
		t.Fatalf("CLUSTER INFO after the migration:\n%s", info)
	}
	// Before the controller's topology, the source sends clients to the target.
	if err := src.Get(ctx, seed[0]).Err(); err == nil || !strings.HasPrefix(err.Error(), "MOVED ") {
		t.Fatalf("source after the hand-off: %v", err)
	}
	tc.version++
	for _, s := range tc.nodes {
		if err := newClient(t, s).Do(ctx, "CLUSTERX", "SETSLOT", fmt.Sprintf("%d-%d", lo, hi), "NODE", tc.ids[1], tc.version).Err(); err != nil {
			t.Fatal(err)
		}
	}
	time.Sleep(50 * time.Millisecond)
	close(stop)
	wg.Wait()
	t.Logf("migrated %d slots in %v under 4 writers (%d TRYAGAIN/MOVED retries); %s", hi-lo+1, took, retries.Load(),
		strings.TrimSpace(info[strings.Index(info, "migrating_last_pause_us"):]))
	for c, k := range counters {
		v, err := cc.Get(ctx, k).Int64()
		if err != nil || v != acked[c].Load() {
			t.Fatalf("counter %s = %d (%v), %d increments acknowledged", k, v, err, acked[c].Load())
		}
	}
	n := 0
	sets.Range(func(k, v any) bool {
		n++
		got, err := cc.Get(ctx, k.(string)).Result()
		if err != nil || got != v.(string) {
			t.Fatalf("acknowledged %s=%s, now %q (%v)", k, v, got, err)
		}
		return true
	})
	for i, k := range seed {
		if v, _ := cc.Get(ctx, k).Result(); v != strconv.Itoa(i) {
			t.Fatalf("seed key %s = %q", k, v)
		}
	}
	for sl := lo; sl <= hi; sl++ {
		if c, _ := src.ClusterCountKeysInSlot(ctx, sl).Result(); c != 0 {
			t.Fatalf("the source still holds %d keys of slot %d", c, sl)
		}
	}
	if n == 0 {
		t.Fatal("no writes during the migration")
	}
}
