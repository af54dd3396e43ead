package server

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/redis/go-redis/v9"
)

func TestOutPoolClasses(t *testing.T) {
	var p outPool
	for _, tc := range []struct{ n, cap int }{
		{1, 2 << 20}, {2 << 20, 2 << 20}, {2<<20 + 1, 4 << 20}, {10 << 20, 16 << 20}, {64 << 20, 64 << 20},
		{64<<20 + 1, 64<<20 + 1}, // past the largest class: exact, not pooled
	} {
		b := p.get(tc.n)
		if len(b) != 0 || cap(b) != tc.cap {
			t.Fatalf("get(%d): len %d cap %d, want 0 and %d", tc.n, len(b), cap(b), tc.cap)
		}
	}
	// A buffer put back is handed out again for its class (sync.Pool may
	// drop it, but not between a Put and a Get on one goroutine with no GC
	// in between in practice; tolerate a miss rather than flake).
	b := p.get(5 << 20)
	b = append(b, "reply"...)
	p.put(b)
	if again := p.get(5 << 20); cap(again) != 8<<20 || len(again) != 0 {
		t.Fatalf("after put: len %d cap %d", len(again), cap(again))
	}
	// Odd sizes are never pooled: they could not serve their class.
	p.put(make([]byte, 3<<20))
	p.put(make([]byte, 128<<20))
}

// TestNoOutputPoolWithMaxmemory: with maxmemory set, big replies' buffers
// are not pooled (idle pooled buffers would count in used_memory as data).
func TestNoOutputPoolWithMaxmemory(t *testing.T) {
	s := startServer(t, func(c *Config) { c.MaxMemory = 1 << 30 })
	rdb := redis.NewClient(&redis.Options{Addr: s.Addr(), Protocol: 2})
	defer rdb.Close()
	ctx := context.Background()
	big := strings.Repeat("v", 5<<20)
	if err := rdb.Set(ctx, "big", big, 0).Err(); err != nil {
		t.Fatal(err)
	}
	for range 3 {
		if v, err := rdb.Get(ctx, "big").Result(); err != nil || v != big {
			t.Fatalf("GET big: %d bytes, %v", len(v), err)
		}
	}
	for i := range s.bigOut.class {
		if b := s.bigOut.class[i].Get(); b != nil {
			t.Fatalf("class %d MiB holds a buffer with maxmemory set", 2<<i)
		}
	}
}

// TestBigRepliesFromPooledBuffers has several clients at once read big
// replies built in pooled buffers (LRANGE of long lists, RPOP with a
// count, GET of big strings, each key's content its own), while the
// buffers pass from one client to the next: every reply must be exactly
// its own key's, on event loops and on goroutines alike.
func TestBigRepliesFromPooledBuffers(t *testing.T) {
	forEachConnMode(t, func(t *testing.T, m func(*Config)) {
		s := startServer(t, m)
		ctx := context.Background()
		const clients, rounds, items = 6, 4, 12000 // 12000 × ~260 B: a 3 MB reply
		setup := redis.NewClient(&redis.Options{Addr: s.Addr(), Protocol: 2})
		defer setup.Close()
		item := func(c, i int) string {
			return fmt.Sprintf("%d:%07d:%s", c, i, strings.Repeat(string(rune('a'+c)), 250))
		}
		for c := 0; c < clients; c++ {
			vals := make([]any, items)
			for i := range vals {
				vals[i] = item(c, i)
			}
			if err := setup.RPush(ctx, fmt.Sprint("list", c), vals...).Err(); err != nil {
				t.Fatal(err)
			}
			if err := setup.Set(ctx, fmt.Sprint("str", c), strings.Repeat(string(rune('A'+c)), 5<<20+c), 0).Err(); err != nil {
				t.Fatal(err)
			}
		}
		var wg sync.WaitGroup
		errs := make(chan error, clients)
		for c := 0; c < clients; c++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				rdb := redis.NewClient(&redis.Options{Addr: s.Addr(), Protocol: 2, PoolSize: 1})
				defer rdb.Close()
				list := fmt.Sprint("list", c)
				for r := 0; r < rounds; r++ {
					got, err := rdb.LRange(ctx, list, 0, -1).Result()
					if err != nil {
						errs <- err
						return
					}
					if len(got) != items-r*100 {
						errs <- fmt.Errorf("LRANGE %s round %d: %d items, want %d", list, r, len(got), items-r*100)
						return
					}
					for i, v := range got {
						if v != item(c, i) {
							errs <- fmt.Errorf("LRANGE %s round %d item %d: %.20q, want %.20q", list, r, i, v, item(c, i))
							return
						}
					}
					popped, err := rdb.RPopCount(ctx, list, 100).Result()
					if err != nil || len(popped) != 100 || popped[0] != item(c, len(got)-1) {
						errs <- fmt.Errorf("RPOP %s 100 round %d: %d items, err %v", list, r, len(popped), err)
						return
					}
					str, err := rdb.Get(ctx, fmt.Sprint("str", c)).Result()
					if err != nil || str != strings.Repeat(string(rune('A'+c)), 5<<20+c) {
						errs <- fmt.Errorf("GET str%d round %d: %d bytes, err %v", c, r, len(str), err)
						return
					}
				}
			}()
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Error(err)
		}
	})
}
