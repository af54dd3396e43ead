package server

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// expectReply reads one value from r and compares its lines.
func expectReply(t *testing.T, r *rawConn, what string, want ...string) {
	t.Helper()
	got := r.reply()
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("%s:\n got %q\nwant %q", what, got, want)
	}
}

func invalidation(keys ...string) []string {
	out := []string{">2", "$10", "invalidate", fmt.Sprintf("*%d", len(keys))}
	for _, k := range keys {
		out = append(out, fmt.Sprintf("$%d", len(k)), k)
	}
	return out
}

// trackingScenario drives CLIENT TRACKING through raw RESP3 and RESP2
// connections; it runs against Damselfly and redis-server alike, so every
// message and its order is Redis's.
func trackingScenario(t *testing.T, addr string) {
	a, b := dialAddr(t, addr), dialAddr(t, addr)
	a.do("HELLO", "3")
	a.reply()
	a.do("CLIENT", "TRACKING", "on")
	expectReply(t, a, "tracking on", "+OK")

	// Another client's write: one push per key.
	a.do("GET", "k1")
	expectReply(t, a, "get k1", "_")
	b.do("SET", "k1", "v")
	expectReply(t, b, "set k1", "+OK")
	expectReply(t, a, "invalidate k1", invalidation("k1")...)
	// Invalidated keys are forgotten: a second write sends nothing until read again.
	b.do("SET", "k1", "w")
	b.reply()

	// Its own write: the push follows the reply.
	a.do("GET", "k1")
	expectReply(t, a, "get k1 again", "$1", "w")
	a.do("SET", "k1", "x")
	expectReply(t, a, "own set", "+OK")
	expectReply(t, a, "own invalidation", invalidation("k1")...)

	// Writes in MULTI/EXEC and in a script.
	a.do("MGET", "m1", "m2")
	a.reply()
	b.do("MULTI")
	b.reply()
	b.do("SET", "m1", "1")
	b.reply()
	b.do("EXEC")
	expectReply(t, b, "exec", "*1", "+OK")
	expectReply(t, a, "invalidate from EXEC", invalidation("m1")...)
	b.do("EVAL", "redis.call('set', KEYS[1], 'x')", "1", "m2")
	expectReply(t, b, "eval", "$-1")
	expectReply(t, a, "invalidate from a script", invalidation("m2")...)

	// Expiry.
	b.do("SET", "e", "1", "PX", "100")
	b.reply()
	a.do("GET", "e")
	expectReply(t, a, "get e", "$1", "1")
	expectReply(t, a, "expired", invalidation("e")...)

	// FLUSHALL: a null invalidation, after the flusher's own reply.
	a.do("GET", "f")
	a.reply()
	a.do("FLUSHALL")
	expectReply(t, a, "flushall", "+OK")
	expectReply(t, a, "null invalidation", ">2", "$10", "invalidate", "_")

	// NOLOOP: its own writes are not reported, others' are.
	a.do("CLIENT", "TRACKING", "on", "NOLOOP")
	a.reply()
	a.do("GET", "n")
	a.reply()
	a.do("SET", "n", "1")
	expectReply(t, a, "noloop set", "+OK")
	a.do("GET", "n")
	expectReply(t, a, "noloop: no push before this reply", "$1", "1")
	b.do("SET", "n", "2")
	b.reply()
	expectReply(t, a, "noloop: others' writes", invalidation("n")...)
	a.do("CLIENT", "TRACKING", "off")
	a.reply()

	// OPTIN: only the command after CLIENT CACHING YES is tracked.
	a.do("CLIENT", "TRACKING", "on", "OPTIN")
	a.reply()
	a.do("GET", "o1")
	a.reply()
	a.do("CLIENT", "CACHING", "yes")
	a.reply()
	a.do("GET", "o2")
	a.reply()
	b.do("MSET", "o1", "1", "o2", "2")
	b.reply()
	expectReply(t, a, "optin", invalidation("o2")...)
	a.do("CLIENT", "TRACKING", "off")
	a.reply()

	// BCAST: every change under the prefixes, keys of one command together.
	a.do("CLIENT", "TRACKING", "on", "BCAST", "PREFIX", "u:")
	a.reply()
	b.do("SET", "u:1", "1")
	b.reply()
	b.do("SET", "other", "1")
	b.reply()
	expectReply(t, a, "bcast", invalidation("u:1")...)
	a.do("PING")
	expectReply(t, a, "ping", "+PONG")
	a.do("CLIENT", "TRACKING", "off")
	a.reply()

	// RESP2 with REDIRECT: messages on __redis__:invalidate.
	sub := dialAddr(t, addr)
	sub.do("CLIENT", "ID")
	id := strings.TrimPrefix(sub.reply()[0], ":")
	sub.do("SUBSCRIBE", "__redis__:invalidate")
	sub.reply()
	c := dialAddr(t, addr)
	c.do("CLIENT", "TRACKING", "on", "REDIRECT", id)
	expectReply(t, c, "redirect", "+OK")
	c.do("CLIENT", "GETREDIR")
	expectReply(t, c, "getredir", ":"+id)
	c.do("GET", "r")
	c.reply()
	b.do("SET", "r", "1")
	b.reply()
	expectReply(t, sub, "redirected message", "*3", "$7", "message", "$20", "__redis__:invalidate", "*1", "$1", "r")
	c.do("FLUSHALL")
	expectReply(t, c, "flushall from RESP2", "+OK")
	expectReply(t, sub, "redirected null", "*3", "$7", "message", "$20", "__redis__:invalidate", "$-1")

	// The redirect target goes away: the RESP3 tracker is told, once per message.
	d := dialAddr(t, addr)
	d.do("HELLO", "3")
	d.reply()
	d.do("CLIENT", "TRACKING", "on", "REDIRECT", id)
	d.reply()
	d.do("GET", "g")
	d.reply()
	sub.nc.Close()
	time.Sleep(100 * time.Millisecond)
	b.do("SET", "g", "1")
	b.reply()
	expectReply(t, d, "redirect broken", ">2", "$21", "tracking-redir-broken", ":"+id)
	d.do("CLIENT", "TRACKINGINFO")
	got := strings.Join(d.reply(), " ")
	if !strings.Contains(got, "broken_redirect") {
		t.Errorf("TRACKINGINFO after the redirect broke: %s", got)
	}
}

func TestTrackingScenario(t *testing.T) {
	s := startServer(t)
	trackingScenario(t, s.Addr())
}

func TestTrackingScenarioAgainstRedis(t *testing.T) {
	trackingScenario(t, startRedis(t))
}

// TestTrackingGoRedisCache uses go-redis's own client-side cache (RESP3,
// CLIENT TRACKING per pooled connection, invalidations as pushes).
func TestTrackingGoRedisCache(t *testing.T) {
	s := startServer(t)
	ctx := context.Background()
	cache := redis.NewLocalCache(redis.CacheConfig{MaxEntries: 128})
	cached := redis.NewClient(&redis.Options{Addr: s.Addr(), Protocol: 3, ClientSideCache: cache})
	defer cached.Close()
	writer := newClient(t, s)

	if err := writer.Set(ctx, "csc", "one", 0).Err(); err != nil {
		t.Fatal(err)
	}
	if v, err := cached.Get(ctx, "csc").Result(); err != nil || v != "one" {
		t.Fatalf("GET: %q %v", v, err)
	}
	waitFor(t, "the value to be cached", func() bool { return cache.Len() >= 1 })
	// Served from the cache now; a write elsewhere must invalidate it.
	for _, write := range []func() error{
		func() error { return writer.Set(ctx, "csc", "two", 0).Err() },
		func() error { return writer.Expire(ctx, "csc", time.Hour).Err() },
		func() error {
			_, err := writer.TxPipelined(ctx, func(p redis.Pipeliner) error { return p.Append(ctx, "csc", "!").Err() })
			return err
		},
		func() error {
			return writer.Eval(ctx, "return redis.call('set', KEYS[1], 'lua')", []string{"csc"}).Err()
		},
		func() error { return writer.FlushAll(ctx).Err() },
	} {
		want, _ := cached.Get(ctx, "csc").Result() // cache it
		if err := write(); err != nil {
			t.Fatal(err)
		}
		now, _ := writer.Get(ctx, "csc").Result()
		waitFor(t, "the cached value to follow the write", func() bool {
			v, _ := cached.Get(ctx, "csc").Result()
			return v == now
		})
		_ = want
	}
	// The lib name go-redis sent with CLIENT SETINFO shows in CLIENT LIST.
	list, err := writer.ClientList(ctx).Result()
	if err != nil || !strings.Contains(list, "lib-name=go-redis") || !strings.Contains(list, "lib-ver="+redis.Version()) {
		t.Errorf("CLIENT LIST lacks go-redis's SETINFO: %v\n%s", err, list)
	}
	if !strings.Contains(list, "flags=t ") {
		t.Errorf("CLIENT LIST shows no tracking client:\n%s", list)
	}
}

// TestTrackingRedirectGoRedis: RESP2 tracking with REDIRECT to a go-redis
// Pub/Sub connection.
func TestTrackingRedirectGoRedis(t *testing.T) {
	s := startServer(t)
	ctx := context.Background()
	rdb := newClient(t, s)
	ps := rdb.Subscribe(ctx, "__redis__:invalidate")
	defer ps.Close()
	if _, err := ps.Receive(ctx); err != nil {
		t.Fatal(err)
	}
	var subID int64
	for _, line := range strings.Split(rdb.ClientList(ctx).Val(), "\n") {
		if strings.Contains(line, "flags=P") {
			fmt.Sscanf(line, "id=%d", &subID)
		}
	}
	conn := rdb.Conn()
	defer conn.Close()
	if err := conn.ClientTrackingOn(ctx, &redis.ClientTrackingOptions{Redirect: subID}).Err(); err != nil {
		t.Fatal(err)
	}
	if id, _ := conn.Do(ctx, "CLIENT", "GETREDIR").Int64(); id != subID {
		t.Fatalf("GETREDIR %d, want %d", id, subID)
	}
	conn.Get(ctx, "rk")
	rdb.Set(ctx, "rk", "1", 0)
	msg, err := ps.ReceiveTimeout(ctx, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	m, ok := msg.(*redis.Message)
	if !ok || m.Channel != "__redis__:invalidate" || (m.Payload != "rk" && !strings.Contains(fmt.Sprint(m.PayloadSlice), "rk")) {
		t.Fatalf("got %#v", msg)
	}
}

// TestTrackingTableMaxKeys: past tracking-table-max-keys, keys are evicted
// from the table with an invalidation, as Redis does.
func TestTrackingTableMaxKeys(t *testing.T) {
	s := startServer(t)
	a := dialRaw(t, s)
	a.do("CONFIG", "SET", "tracking-table-max-keys", "2")
	a.reply()
	a.do("HELLO", "3")
	a.reply()
	a.do("CLIENT", "TRACKING", "on")
	a.reply()
	a.do("MGET", "t1", "t2", "t3", "t4")
	a.reply()
	evicted := 0
	for evicted < 2 {
		got := a.reply()
		if len(got) < 3 || got[2] != "invalidate" {
			t.Fatalf("want an invalidation, got %q", got)
		}
		evicted++
	}
	if n := s.track.total.Load(); n != 2 {
		t.Errorf("table holds %d keys, want 2", n)
	}
}

// TestTrackingHooksOnlyWhileTracking: the data layer's hook is set while a
// client tracks and removed when the last one stops.
func TestTrackingHooksOnlyWhileTracking(t *testing.T) {
	s := startServer(t)
	a := dialRaw(t, s)
	a.do("CLIENT", "TRACKING", "on")
	a.reply()
	if s.track.users.Load() != 1 {
		t.Fatalf("users %d", s.track.users.Load())
	}
	a.do("CLIENT", "TRACKING", "off")
	a.reply()
	b := dialRaw(t, s)
	b.do("CLIENT", "TRACKING", "on", "BCAST")
	b.reply()
	b.nc.Close()
	waitFor(t, "the disconnected tracker to be forgotten", func() bool {
		return s.track.users.Load() == 0 && s.track.nbcast.Load() == 0
	})
}

// TestTrackingConcurrent runs tracking readers against writers under -race.
func TestTrackingConcurrent(t *testing.T) {
	s := startServer(t)
	ctx := context.Background()
	var wg sync.WaitGroup
	stop := make(chan struct{})
	for i := range 3 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c := redis.NewClient(&redis.Options{Addr: s.Addr(), Protocol: 3,
				ClientSideCache: redis.NewLocalCache(redis.CacheConfig{MaxEntries: 64})})
			defer c.Close()
			for j := 0; ; j++ {
				select {
				case <-stop:
					return
				default:
				}
				c.Get(ctx, fmt.Sprintf("cc%d", (i+j)%16))
			}
		}()
	}
	w := newClient(t, s)
	for j := range 2000 {
		if err := w.Set(ctx, fmt.Sprintf("cc%d", j%16), j, 0).Err(); err != nil {
			t.Fatal(err)
		}
	}
	w.FlushAll(ctx)
	close(stop)
	wg.Wait()
}

// BenchmarkExecuteSetTracked is BenchmarkExecuteSet while a client tracks
// (the data layer's hook installed, the keys not tracked): the cost every
// write pays once tracking is in use.
func BenchmarkExecuteSetTracked(b *testing.B) {
	benchRequestsWith(b, "SET", 10000, func(c *Client) {
		c.srv.track.users.Add(1)
		c.setTrackHooks()
	})
}

// TestTrackingOnReplica: a client tracking on a replica is told of the
// primary's writes (applied through the replication stream), and of the
// full sync that replaces the dataset.
func TestTrackingOnReplica(t *testing.T) {
	ctx := context.Background()
	p := startServer(t, func(c *Config) { c.Save = "" })
	prc := newClient(t, p)
	prc.Set(ctx, "rk", "0", 0)
	r := startServer(t, func(c *Config) { c.Save = ""; c.ReplicaOf = p.Addr() })
	rrc := newClient(t, r)
	waitFor(t, "the replica to sync", func() bool { return rrc.Get(ctx, "rk").Val() == "0" })
	a := dialRaw(t, r)
	a.do("HELLO", "3")
	a.reply()
	a.do("CLIENT", "TRACKING", "on")
	a.reply()
	a.do("GET", "rk")
	expectReply(t, a, "get on the replica", "$1", "0")
	prc.Set(ctx, "rk", "1", 0)
	expectReply(t, a, "invalidation from the primary's stream", invalidation("rk")...)
	// A new full sync (REPLICAOF again) replaces the dataset: null invalidation.
	a.do("GET", "rk")
	a.reply()
	rrc.Do(ctx, "REPLICAOF", "NO", "ONE")
	host, port, _ := strings.Cut(p.Addr(), ":")
	rrc.Do(ctx, "REPLICAOF", host, port)
	got := a.reply()
	if strings.Join(got, "|") != strings.Join([]string{">2", "$10", "invalidate", "_"}, "|") &&
		strings.Join(got, "|") != strings.Join(invalidation("rk"), "|") {
		t.Errorf("after a new full sync: %q", got)
	}
}

// TestTrackingNoStaleCache: a client caching what it reads and dropping
// what is invalidated must never end with a stale value, however its reads
// interleave with another client's writes (an invalidation sent ahead of
// the reply carrying the old value would leave that value cached).
func TestTrackingNoStaleCache(t *testing.T) {
	s := startServer(t)
	ctx := context.Background()
	w := newClient(t, s)
	w.Set(ctx, "hot", 0, 0)
	a := dialRaw(t, s)
	a.do("HELLO", "3")
	a.reply()
	a.do("CLIENT", "TRACKING", "on")
	a.reply()
	done := make(chan struct{})
	go func() {
		defer close(done)
		for range 3000 {
			w.Incr(ctx, "hot")
		}
	}()
	cached, have := "", false
	read := func(until string) {
		for {
			got := a.reply()
			switch {
			case len(got) > 2 && got[0] == ">2" && got[2] == "invalidate":
				have = false
			case got[0] == until:
				return
			case until == "" && strings.HasPrefix(got[0], "$"):
				cached, have = got[1], true
				return
			default:
				t.Fatalf("unexpected %q", got)
			}
		}
	}
	// Like a real cache: ask the server only on a miss (a pipeline of
	// reads, which widens the window between a read and its reply being
	// queued), otherwise just look for invalidations.
	for running := true; running; {
		select {
		case <-done:
			running = false
		default:
		}
		if have {
			a.do("PING")
			read("+PONG")
			continue
		}
		var b strings.Builder
		for range 20 {
			b.WriteString("*2\r\n$3\r\nGET\r\n$3\r\nhot\r\n")
		}
		a.send(b.String())
		for range 20 {
			read("")
		}
	}
	a.do("PING")
	read("+PONG")
	if want := w.Get(ctx, "hot").Val(); have && cached != want {
		t.Fatalf("cached %q after the last invalidation, the key holds %q", cached, want)
	}
}
