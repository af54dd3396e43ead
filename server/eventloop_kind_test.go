package server

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// TestEventLoopKinds runs what differs between the loop kinds on each:
// values larger than the io_uring loop's provided buffers and than a
// socket takes at once, many pipelining clients at once, and input sent
// right behind a command that detaches the connection (a blocking pop),
// which the io_uring loop may have received ahead and must hand over.
func TestEventLoopKinds(t *testing.T) {
	for _, kind := range []string{"epoll", "io_uring"} {
		t.Run(kind, func(t *testing.T) {
			s := startServer(t, func(c *Config) { c.EventLoop = kind; c.GoroutinePerConn = false })
			ctx := context.Background()
			rdb := newClient(t, s)

			big := bytes.Repeat([]byte("0123456789abcdef"), 256<<10) // 4 MiB
			if err := rdb.Set(ctx, "big", big, 0).Err(); err != nil {
				t.Fatal(err)
			}
			if got, err := rdb.Get(ctx, "big").Bytes(); err != nil || !bytes.Equal(got, big) {
				t.Fatalf("GET big: %d bytes, %v", len(got), err)
			}

			var wg sync.WaitGroup
			errs := make(chan error, 20)
			for c := range 20 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					cl := redis.NewClient(&redis.Options{Addr: s.Addr(), Protocol: 2, PoolSize: 1})
					defer cl.Close()
					for round := range 10 {
						p := cl.Pipeline()
						for i := range 50 {
							p.Set(ctx, fmt.Sprintf("k%d:%d", c, i), fmt.Sprintf("%d-%d", round, i), 0)
						}
						gets := make([]*redis.StringCmd, 50)
						for i := range 50 {
							gets[i] = p.Get(ctx, fmt.Sprintf("k%d:%d", c, i))
						}
						if _, err := p.Exec(ctx); err != nil {
							errs <- err
							return
						}
						for i, g := range gets {
							if g.Val() != fmt.Sprintf("%d-%d", round, i) {
								errs <- fmt.Errorf("client %d: GET k%d:%d = %q", c, c, i, g.Val())
								return
							}
						}
					}
				}()
			}
			wg.Wait()
			close(errs)
			for err := range errs {
				t.Fatal(err)
			}

			for i := range 10 {
				r := dialRaw(t, s)
				key := fmt.Sprintf("q%d", i)
				r.do("BLPOP", key, "0")
				r.do("ECHO", "behind") // may arrive after the loop saw BLPOP
				time.Sleep(time.Duration(i) * time.Millisecond)
				if err := rdb.LPush(ctx, key, "v").Err(); err != nil {
					t.Fatal(err)
				}
				if got := r.reply(); len(got) != 5 || got[2] != key || got[4] != "v" {
					t.Fatalf("BLPOP: %q", got)
				}
				if got := r.reply(); len(got) != 2 || got[1] != "behind" {
					t.Fatalf("after BLPOP: %q", got)
				}
			}
		})
	}
}

// TestMultiplexingAPI: INFO names the kind of loop serving the clients.
func TestMultiplexingAPI(t *testing.T) {
	s := startServer(t, func(c *Config) { c.EventLoop = "epoll"; c.GoroutinePerConn = false })
	info, err := newClient(t, s).Info(context.Background(), "server").Result()
	if err != nil || !strings.Contains(info, "multiplexing_api:epoll\r\n") {
		t.Fatalf("INFO server: %v\n%s", err, info)
	}
}
