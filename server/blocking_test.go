package server

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// waitBlocked waits until n clients are blocked.
func waitBlocked(t *testing.T, s *Server, n int64) {
	t.Helper()
	for i := 0; i < 500; i++ {
		if s.blockedClients() == n {
			return
		}
		time.Sleep(2 * time.Millisecond)
	}
	t.Fatalf("blocked clients: %d, want %d", s.blockedClients(), n)
}

// keysOnDifferentShards returns two keys of different shards.
func keysOnDifferentShards(s *Server) (string, string) {
	a := "k0"
	sa, _ := s.store.ShardOf([]byte(a))
	for i := 1; ; i++ {
		b := fmt.Sprintf("k%d", i)
		if sb, _ := s.store.ShardOf([]byte(b)); sb != sa {
			return a, b
		}
	}
}

func TestBlockingFIFOAndWakeUps(t *testing.T) {
	s := startServer(t)
	ctx := context.Background()
	w := newClient(t, s)
	type res struct {
		i   int
		val []string
		err error
	}
	out := make(chan res, 3)
	for i := 0; i < 3; i++ {
		c := newClient(t, s)
		go func(i int) {
			v, err := c.BLPop(ctx, 5*time.Second, "q").Result()
			out <- res{i, v, err}
		}(i)
		waitBlocked(t, s, int64(i+1)) // so the order of arrival is known
	}
	if got := w.Info(ctx, "clients").Val(); !strings.Contains(got, "blocked_clients:3") {
		t.Fatalf("INFO clients: %s", got)
	}
	// One push of three elements serves the three clients in order.
	w.RPush(ctx, "q", "a", "b", "c")
	got := map[int]string{}
	for i := 0; i < 3; i++ {
		r := <-out
		if r.err != nil {
			t.Fatal(r.err)
		}
		got[r.i] = r.val[1]
	}
	if got[0] != "a" || got[1] != "b" || got[2] != "c" {
		t.Fatalf("FIFO order broken: %v", got)
	}
	waitBlocked(t, s, 0)
	if n := w.Exists(ctx, "q").Val(); n != 0 {
		t.Fatal("emptied list kept")
	}
}

func TestBlockingAcrossShardsAndTypes(t *testing.T) {
	s := startServer(t)
	ctx := context.Background()
	w := newClient(t, s)
	k1, k2 := keysOnDifferentShards(s)
	c := newClient(t, s)
	done := make(chan []string, 1)
	go func() { done <- c.BRPop(ctx, 5*time.Second, k1, k2).Val() }()
	waitBlocked(t, s, 1)
	w.LPush(ctx, k2, "x")
	if v := <-done; len(v) != 2 || v[0] != k2 || v[1] != "x" {
		t.Fatalf("BRPOP across shards: %v", v)
	}

	// BLMOVE between shards, woken by a push.
	go func() { done <- []string{c.BLMove(ctx, k1, k2, "LEFT", "RIGHT", 5*time.Second).Val()} }()
	waitBlocked(t, s, 1)
	w.RPush(ctx, k1, "m")
	if v := <-done; v[0] != "m" || w.LIndex(ctx, k2, 0).Val() != "m" {
		t.Fatalf("BLMOVE: %v", v)
	}

	// BZPOPMIN woken by ZADD; BZMPOP; BLMPOP.
	zdone := make(chan *redis.ZWithKey, 1)
	go func() { zdone <- c.BZPopMin(ctx, 5*time.Second, "z1", "z2").Val() }()
	waitBlocked(t, s, 1)
	w.ZAdd(ctx, "z2", redis.Z{Score: 2, Member: "b"}, redis.Z{Score: 1, Member: "a"})
	if z := <-zdone; z == nil || z.Key != "z2" || z.Member != "a" || z.Score != 1 {
		t.Fatalf("BZPOPMIN: %+v", z)
	}
	go func() {
		k, vs, err := c.BLMPop(ctx, 5*time.Second, "left", 10, "l1", "l2").Result()
		done <- append([]string{k, fmt.Sprint(err)}, vs...)
	}()
	waitBlocked(t, s, 1)
	w.RPush(ctx, "l2", "1", "2")
	if v := <-done; strings.Join(v, ",") != "l2,<nil>,1,2" {
		t.Fatalf("BLMPOP: %v", v)
	}

	// Keys brought by RENAME and COPY wake waiters too.
	go func() { done <- c.BLPop(ctx, 5*time.Second, "renamed").Val() }()
	waitBlocked(t, s, 1)
	w.RPush(ctx, "tmp", "r")
	w.Rename(ctx, "tmp", "renamed")
	if v := <-done; len(v) != 2 || v[1] != "r" {
		t.Fatalf("woken by RENAME: %v", v)
	}
	go func() { done <- c.BLPop(ctx, 5*time.Second, "copied").Val() }()
	waitBlocked(t, s, 1)
	w.RPush(ctx, "orig", "c")
	w.Copy(ctx, "orig", "copied", 0, false)
	if v := <-done; len(v) != 2 || v[1] != "c" {
		t.Fatalf("woken by COPY: %v", v)
	}
}

func TestBlockingTimeoutDisconnectUnblock(t *testing.T) {
	s := startServer(t)
	ctx := context.Background()
	w := newClient(t, s)

	// Timeout with decimals (go-redis rounds up to whole seconds: raw).
	tc := dialRaw(t, s)
	start := time.Now()
	tc.do("BLPOP", "none", "0.15")
	if got := tc.reply(); got[0] != "*-1" {
		t.Fatalf("timeout reply %q", got)
	}
	if d := time.Since(start); d < 140*time.Millisecond || d > time.Second {
		t.Fatalf("timeout took %v", d)
	}
	waitBlocked(t, s, 0)

	// A client that disconnects while blocked leaves no trace: the next
	// push goes to the next waiter.
	r := dialRaw(t, s)
	r.do("BLPOP", "dq", "0")
	waitBlocked(t, s, 1)
	other := newClient(t, s)
	done := make(chan []string, 1)
	go func() { done <- other.BLPop(ctx, 5*time.Second, "dq").Val() }()
	waitBlocked(t, s, 2)
	r.nc.Close()
	waitBlocked(t, s, 1)
	w.RPush(ctx, "dq", "v")
	if v := <-done; len(v) != 2 || v[1] != "v" {
		t.Fatalf("after disconnect: %v", v)
	}

	// CLIENT UNBLOCK with TIMEOUT and ERROR.
	r = dialRaw(t, s)
	r.do("CLIENT", "ID")
	id := strings.TrimPrefix(r.reply()[0], ":")
	r.do("BRPOP", "uq", "0")
	waitBlocked(t, s, 1)
	if n := w.Do(ctx, "CLIENT", "UNBLOCK", id).Val(); n != int64(1) {
		t.Fatalf("CLIENT UNBLOCK: %v", n)
	}
	if got := r.reply(); got[0] != "*-1" {
		t.Fatalf("unblocked with timeout: %q", got)
	}
	r.do("BZPOPMAX", "uq", "0")
	waitBlocked(t, s, 1)
	w.Do(ctx, "CLIENT", "UNBLOCK", id, "ERROR")
	if got := r.reply(); got[0] != "-UNBLOCKED client unblocked via CLIENT UNBLOCK" {
		t.Fatalf("unblocked with error: %q", got)
	}
	if n := w.Do(ctx, "CLIENT", "UNBLOCK", id).Val(); n != int64(0) {
		t.Fatalf("CLIENT UNBLOCK of a client not blocked: %v", n)
	}
	// Commands pipelined behind a blocking one run after it.
	r.send("*3\r\n$5\r\nBLPOP\r\n$2\r\npq\r\n$1\r\n0\r\n*1\r\n$4\r\nPING\r\n")
	waitBlocked(t, s, 1)
	w.RPush(ctx, "pq", "p")
	if got := r.reply(); len(got) != 5 || got[4] != "p" {
		t.Fatalf("BLPOP reply: %q", got)
	}
	if got := r.reply(); got[0] != "+PONG" {
		t.Fatalf("pipelined PING: %q", got)
	}
}

// TestBlockingStress has many clients pop what a few pushers push, across
// shards, under -race: every element is delivered exactly once.
func TestBlockingStress(t *testing.T) {
	s := startServer(t)
	ctx := context.Background()
	const consumers, perConsumer = 8, 50
	keys := []string{"s0", "s1", "s2", "s3"}
	got := make(chan string, consumers*perConsumer)
	for i := 0; i < consumers; i++ {
		c := newClient(t, s)
		go func() {
			for j := 0; j < perConsumer; j++ {
				v, err := c.BLPop(ctx, 10*time.Second, keys...).Result()
				if err != nil {
					got <- "ERR " + err.Error()
					return
				}
				got <- v[1]
			}
		}()
	}
	p := newClient(t, s)
	for i := 0; i < consumers*perConsumer; i++ {
		p.RPush(ctx, keys[i%len(keys)], fmt.Sprint(i))
	}
	seen := map[string]bool{}
	for i := 0; i < consumers*perConsumer; i++ {
		select {
		case v := <-got:
			if seen[v] || strings.HasPrefix(v, "ERR") {
				t.Fatalf("duplicate or error: %s", v)
			}
			seen[v] = true
		case <-time.After(10 * time.Second):
			t.Fatalf("only %d of %d delivered", len(seen), consumers*perConsumer)
		}
	}
	waitBlocked(t, s, 0)
}
