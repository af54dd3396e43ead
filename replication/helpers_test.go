package replication_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"math/rand"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/damselflydb/damselfly/internal/redistest"
	"github.com/damselflydb/damselfly/server"
)

// The tests run whole servers (package server) wired to this package.

func startServer(t testing.TB, mutate ...func(*server.Config)) *server.Server {
	t.Helper()
	cfg := server.Config{Port: 0, Bind: "127.0.0.1", Shards: 4, DBNum: 16, Dir: t.TempDir(), DBFilename: "dump.rdb", EnableDebugCommand: "local",
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}
	if testing.Verbose() {
		cfg.Logger = slog.New(slog.NewTextHandler(os.Stderr, nil))
	}
	for _, m := range mutate {
		m(&cfg)
	}
	s := server.New(cfg)
	if err := s.Start(cfg); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func client(t testing.TB, addr string) *redis.Client {
	t.Helper()
	c := redis.NewClient(&redis.Options{Addr: addr, Protocol: 2, MaxRetries: -1, DialTimeout: time.Second, ReadTimeout: 20 * time.Second})
	t.Cleanup(func() { c.Close() })
	return c
}

func hostPort(t testing.TB, addr string) (string, string) {
	h, p, err := net.SplitHostPort(addr)
	if err != nil {
		t.Fatal(err)
	}
	return h, p
}

func replicaOf(t testing.TB, c *redis.Client, primary string) {
	t.Helper()
	h, p := hostPort(t, primary)
	if err := c.Do(context.Background(), "REPLICAOF", h, p).Err(); err != nil {
		t.Fatal(err)
	}
}

func info(c *redis.Client, section string) map[string]string {
	s, _ := c.Info(context.Background(), section).Result()
	m := map[string]string{}
	for _, ln := range strings.Split(s, "\r\n") {
		if k, v, ok := strings.Cut(ln, ":"); ok {
			m[k] = v
		}
	}
	return m
}

func digest(t testing.TB, c *redis.Client) string {
	t.Helper()
	d, err := c.Do(context.Background(), "DEBUG", "DIGEST").Text()
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// waitFor polls cond until it holds or the timeout passes.
func waitFor(t testing.TB, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// waitConverged waits until every replica is up with the primary's offset
// and then compares digests.
func waitConverged(t testing.TB, primary *redis.Client, replicas ...*redis.Client) {
	t.Helper()
	waitFor(t, 30*time.Second, "replicas to catch up", func() bool {
		off := info(primary, "replication")["master_repl_offset"]
		for _, r := range replicas {
			ri := info(r, "replication")
			if ri["master_link_status"] != "up" || ri["master_repl_offset"] != off {
				return false
			}
		}
		return true
	})
	want := digest(t, primary)
	for i, r := range replicas {
		if got := digest(t, r); got != want {
			t.Fatalf("replica %d digest %s, primary %s", i, got, want)
		}
	}
}

// writer runs a mix of deterministic and rewritten writes until stopped.
type writer struct {
	stop  chan struct{}
	wg    sync.WaitGroup
	count atomic.Int64
}

func startWriter(t testing.TB, addr string, workers int) *writer {
	w := &writer{stop: make(chan struct{})}
	for i := 0; i < workers; i++ {
		c := client(t, addr)
		w.wg.Add(1)
		go func(seed int64) {
			defer w.wg.Done()
			ctx := context.Background()
			r := rand.New(rand.NewSource(seed))
			for {
				select {
				case <-w.stop:
					return
				default:
				}
				k := "k" + strconv.Itoa(r.Intn(5000))
				p := c.Pipeline()
				switch r.Intn(8) {
				case 0:
					p.Do(ctx, "SELECT", r.Intn(3))
					p.Set(ctx, k, r.Int63(), 0)
				case 1:
					p.Incr(ctx, "ctr"+strconv.Itoa(r.Intn(50)))
				case 2:
					p.Set(ctx, k, strings.Repeat("v", r.Intn(200)), time.Duration(100+r.Intn(1000))*time.Second)
				case 3:
					p.Expire(ctx, k, time.Duration(100+r.Intn(100))*time.Second)
				case 4:
					p.IncrByFloat(ctx, "f"+strconv.Itoa(r.Intn(20)), 0.1)
				case 5:
					p.Del(ctx, k)
				case 6:
					p.Append(ctx, k, "x")
				default:
					p.MSet(ctx, k, "m", k+"b", "n")
				}
				if _, err := p.Exec(ctx); err != nil && err != redis.Nil && !strings.Contains(err.Error(), "WRONGTYPE") &&
					!strings.Contains(err.Error(), "not an integer") && !strings.Contains(err.Error(), "not a valid float") {
					return
				}
				w.count.Add(1)
			}
		}(int64(i) + time.Now().UnixNano())
	}
	return w
}

func (w *writer) halt() {
	close(w.stop)
	w.wg.Wait()
}

// populate fills a server with n keys of every kind the server supports.
func populate(t testing.TB, c *redis.Client, n int) {
	t.Helper()
	ctx := context.Background()
	if err := c.Do(ctx, "DEBUG", "POPULATE", n, "pop", 64).Err(); err != nil {
		t.Fatal(err)
	}
	// DEBUG POPULATE is not replicated (as in Redis); these are.
	p := c.Pipeline()
	for i := 0; i < 2000; i++ {
		p.Set(ctx, fmt.Sprintf("seed:%d", i), i, 0)
	}
	if _, err := p.Exec(ctx); err != nil {
		t.Fatal(err)
	}
}

// proxy forwards TCP connections to a target; cut drops the live ones and
// hold refuses new ones, to simulate network faults.
type proxy struct {
	ln     net.Listener
	target atomic.Value // string
	mu     sync.Mutex
	conns  []net.Conn
	held   atomic.Bool
}

func newProxy(t testing.TB, target string) *proxy {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &proxy{ln: ln}
	p.target.Store(target)
	t.Cleanup(func() { ln.Close(); p.cut() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			if p.held.Load() {
				c.Close()
				continue
			}
			u, err := net.Dial("tcp", p.target.Load().(string))
			if err != nil {
				c.Close()
				continue
			}
			p.mu.Lock()
			p.conns = append(p.conns, c, u)
			p.mu.Unlock()
			go func() { io.Copy(u, c); u.Close() }()
			go func() { io.Copy(c, u); c.Close() }()
		}
	}()
	return p
}

func (p *proxy) addr() string { return p.ln.Addr().String() }

func (p *proxy) cut() {
	p.mu.Lock()
	for _, c := range p.conns {
		c.Close()
	}
	p.conns = nil
	p.mu.Unlock()
}

// redisServer starts Debian's redis-server, or skips.
func redisServer(t testing.TB, args ...string) string {
	t.Helper()
	if _, err := exec.LookPath("redis-server"); err != nil {
		t.Skip("redis-server not installed: skipping the interoperability test")
	}
	all := append([]string{"--save", "", "--appendonly", "no",
		"--enable-debug-command", "yes", "--repl-diskless-sync-delay", "0", "--dir", t.TempDir()}, args...)
	return redistest.Start(t, "", all...).Addr
}
