package server

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/damselflydb/damselfly/cluster"
)

// TestClusterSlotIndex: the per-slot key index agrees with the keyspace
// after writes, deletes, renames, expiry, FLUSHALL and a reload from the
// dump (DEBUG RELOAD), with clients writing concurrently (run with -race).
func TestClusterSlotIndex(t *testing.T) {
	s := startServer(t, clusterEmulated)
	ctx := context.Background()
	rc := newClient(t, s)
	check := func(when string) {
		t.Helper()
		size, _ := rc.DBSize(ctx).Result()
		counts := map[int]int{}
		var keys []string
		cur := uint64(0)
		for {
			ks, next, err := rc.Scan(ctx, cur, "", 1000).Result()
			if err != nil {
				t.Fatal(err)
			}
			keys = append(keys, ks...)
			if cur = next; cur == 0 {
				break
			}
		}
		for _, k := range keys {
			counts[cluster.KeySlot([]byte(k))]++
		}
		total := 0
		for slot, want := range counts {
			got, _ := rc.ClusterCountKeysInSlot(ctx, slot).Result()
			if int(got) != want {
				t.Fatalf("%s: COUNTKEYSINSLOT %d = %d, want %d", when, slot, got, want)
			}
			ks, _ := rc.ClusterGetKeysInSlot(ctx, slot, want+5).Result()
			if len(ks) != want {
				t.Fatalf("%s: GETKEYSINSLOT %d gave %d keys, want %d", when, slot, len(ks), want)
			}
			total += want
		}
		if int64(total) != size {
			t.Fatalf("%s: %d keys by slot, DBSIZE %d", when, total, size)
		}
	}
	done := make(chan struct{})
	for w := 0; w < 3; w++ {
		go func(w int) {
			defer func() { done <- struct{}{} }()
			c := newClient(t, s)
			for i := 0; i < 400; i++ {
				k := fmt.Sprintf("{w%d}%d", w, i%50)
				c.Set(ctx, k, i, 0)
				if i%3 == 0 {
					c.Del(ctx, k)
				}
				if i%7 == 0 {
					c.Rename(ctx, k, k+"r")
				}
			}
		}(w)
	}
	for w := 0; w < 3; w++ {
		<-done
	}
	check("after writes")
	for i := 0; i < 100; i++ {
		rc.Set(ctx, fmt.Sprint("ttl", i), i, time.Hour)
	}
	rc.Do(ctx, "DEBUG", "POPULATE", "2000")
	check("with TTLs")
	for i := 0; i < 100; i++ {
		rc.PExpire(ctx, fmt.Sprint("ttl", i), time.Millisecond)
	}
	time.Sleep(20 * time.Millisecond)
	for i := 0; i < 100; i++ {
		rc.Get(ctx, fmt.Sprint("ttl", i)) // lazy expiry deletes them
	}
	check("after expiry")
	if err := rc.Do(ctx, "DEBUG", "RELOAD").Err(); err != nil {
		t.Fatal(err)
	}
	check("after DEBUG RELOAD")
	rc.FlushAll(ctx)
	rc.Set(ctx, "foo", "bar", 0)
	check("after FLUSHALL")
	if n, _ := rc.ClusterCountKeysInSlot(ctx, 12182).Result(); n != 1 {
		t.Fatalf("foo's slot holds %d keys", n)
	}
}
