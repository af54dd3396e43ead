package server

import (
	"context"
	"fmt"
	"net"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

func TestGoRedisStringsAndKeys(t *testing.T) {
	s := startServer(t)
	ctx := context.Background()
	for _, proto := range []int{2, 3} {
		rdb := redis.NewClient(&redis.Options{Addr: s.Addr(), Protocol: proto})
		defer rdb.Close()
		if err := rdb.Set(ctx, "k", "v", time.Minute).Err(); err != nil {
			t.Fatal(err)
		}
		if v, err := rdb.Get(ctx, "k").Result(); err != nil || v != "v" {
			t.Fatalf("proto %d: GET = %q, %v", proto, v, err)
		}
		if _, err := rdb.Get(ctx, "missing").Result(); err != redis.Nil {
			t.Fatalf("proto %d: GET missing: %v", proto, err)
		}
		if d, err := rdb.TTL(ctx, "k").Result(); err != nil || d < 59*time.Second {
			t.Fatalf("TTL = %v, %v", d, err)
		}
		if n, err := rdb.IncrByFloat(ctx, "f", 1.5).Result(); err != nil || n != 1.5 {
			t.Fatalf("INCRBYFLOAT = %v, %v", n, err)
		}
		vals, err := rdb.MGet(ctx, "k", "missing").Result()
		if err != nil || vals[0] != "v" || vals[1] != nil {
			t.Fatalf("MGET = %v, %v", vals, err)
		}
		if err := rdb.FlushAll(ctx).Err(); err != nil {
			t.Fatal(err)
		}
	}
}

// TestScanAcrossShards checks that SCAN returns every key present for the
// whole iteration, even while other keys are inserted (splitting tables).
func TestScanAcrossShards(t *testing.T) {
	s := startServer(t)
	ctx := context.Background()
	rdb := newClient(t, s)
	const n = 5000
	pipe := rdb.Pipeline()
	for i := 0; i < n; i++ {
		pipe.Set(ctx, fmt.Sprintf("stable:%d", i), i, 0)
	}
	if _, err := pipe.Exec(ctx); err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	var cursor uint64
	extra := 0
	for {
		keys, next, err := rdb.Scan(ctx, cursor, "stable:*", 50).Result()
		if err != nil {
			t.Fatal(err)
		}
		for _, k := range keys {
			seen[k] = true
		}
		// Grow the tables between calls (pipelined: one round trip, the
		// same 200 SETs between the two SCANs).
		grow := rdb.Pipeline()
		for j := 0; j < 200; j++ {
			grow.Set(ctx, fmt.Sprintf("extra:%d", extra), 1, 0)
			extra++
		}
		if _, err := grow.Exec(ctx); err != nil {
			t.Fatal(err)
		}
		if next == 0 {
			break
		}
		cursor = next
	}
	if len(seen) != n {
		t.Fatalf("SCAN saw %d of %d keys", len(seen), n)
	}
}

func TestRequirePass(t *testing.T) {
	s := startServer(t, func(c *Config) { c.RequirePass = "secret" })
	r := dialRaw(t, s)
	r.do("GET", "k")
	if got := r.reply(); got[0] != "-NOAUTH Authentication required." {
		t.Fatalf("before AUTH: %q", got)
	}
	// Unauthenticated clients may not send large requests.
	r.send("*11\r\n")
	if got := r.reply(); got[0] != "-ERR Protocol error: unauthenticated multibulk length" {
		t.Fatalf("big multibulk before AUTH: %q", got)
	}
	r = dialRaw(t, s)
	r.do("AUTH", "wrong")
	if got := r.reply(); got[0] != "-WRONGPASS invalid username-password pair or user is disabled." {
		t.Fatalf("AUTH wrong: %q", got)
	}
	r.do("AUTH", "secret")
	if got := r.reply(); got[0] != "+OK" {
		t.Fatalf("AUTH: %q", got)
	}
	r.do("SET", "k", strings.Repeat("x", 20000))
	if got := r.reply(); got[0] != "+OK" {
		t.Fatalf("SET after AUTH: %q", got)
	}
	rdb := redis.NewClient(&redis.Options{Addr: s.Addr(), Password: "secret"})
	defer rdb.Close()
	if err := rdb.Ping(context.Background()).Err(); err != nil {
		t.Fatal(err)
	}
}

// TestHugeDeclaredLengths: a client announcing a huge bulk or count gets an
// error or waits for data; the server never allocates what was announced.
func TestHugeDeclaredLengths(t *testing.T) {
	s := startServer(t)
	// The test process holds what earlier tests left: measure the growth.
	debug.FreeOSMemory()
	before := rss()
	r := dialRaw(t, s)
	r.send("*2000000000\r\n$3\r\nSET\r\n")
	r.send("$500000000\r\nabc")
	time.Sleep(50 * time.Millisecond)
	// Another client is still served.
	r2 := dialRaw(t, s)
	r2.do("PING")
	if got := r2.reply(); got[0] != "+PONG" {
		t.Fatalf("PING: %q", got)
	}
	if grew := rss() - before; grew > 256<<20 {
		t.Fatalf("RSS grew by %d bytes after an announced 500 MB bulk", grew)
	}
}

// TestPanicIsContained: a command that panics answers an error and the
// server keeps serving (this client and others).
func TestPanicIsContained(t *testing.T) {
	s := startServerPrepared(t, func(s *Server) {
		s.cmds["boom"] = &command{name: "boom", arity: 1, fn: func(c *Client, _ [][]byte) {
			sh, _ := c.lockKey([]byte("k"))
			defer sh.Unlock()
			panic("deliberate")
		}}
	})
	r := dialRaw(t, s)
	r.do("BOOM")
	if got := r.reply(); !strings.HasPrefix(got[0], "-ERR internal error") {
		t.Fatalf("BOOM: %q", got)
	}
	r.do("SET", "k", "v") // the shard lock was released
	if got := r.reply(); got[0] != "+OK" {
		t.Fatalf("after panic: %q", got)
	}
}

func TestProtectedMode(t *testing.T) {
	s := startServer(t, func(c *Config) { c.ProtectedMode = true; c.Bind = "0.0.0.0" })
	// Find a non-loopback local address to connect from.
	addrs, _ := net.InterfaceAddrs()
	var ip net.IP
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok && !n.IP.IsLoopback() && n.IP.To4() != nil {
			ip = n.IP
			break
		}
	}
	if ip == nil {
		t.Skip("no non-loopback IPv4 address on this machine")
	}
	nc, err := net.Dial("tcp", net.JoinHostPort(ip.String(), fmt.Sprint(s.Port())))
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	buf := make([]byte, 64)
	nc.SetReadDeadline(time.Now().Add(2 * time.Second))
	n, _ := nc.Read(buf)
	if !strings.HasPrefix(string(buf[:n]), "-DENIED") {
		t.Fatalf("non-loopback client got %q", buf[:n])
	}
	// Loopback is allowed.
	r := dialAddr(t, fmt.Sprintf("127.0.0.1:%d", s.Port()))
	r.do("PING")
	if got := r.reply(); got[0] != "+PONG" {
		t.Fatalf("loopback PING: %q", got)
	}
}

// TestConcurrentClients hammers multi-key and single-key commands from many
// clients (run with -race).
func TestConcurrentClients(t *testing.T) {
	s := startServer(t)
	ctx := context.Background()
	var wg sync.WaitGroup
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			rdb := redis.NewClient(&redis.Options{Addr: s.Addr()})
			defer rdb.Close()
			for i := 0; i < 300; i++ {
				k := fmt.Sprintf("c%d", i%20)
				rdb.Incr(ctx, k)
				rdb.MSet(ctx, "m1", i, "m2", i, "m3", i)
				vals := rdb.MGet(ctx, "m1", "m2", "m3").Val()
				if vals[0] != vals[1] || vals[1] != vals[2] {
					t.Errorf("MGET saw a partial MSET: %v", vals)
					return
				}
				rdb.Del(ctx, fmt.Sprintf("d%d", i), k)
			}
		}(g)
	}
	wg.Wait()
}

// TestMaxMemory: past maxmemory (noeviction), commands that may grow memory
// get Redis's -OOM error and the rest keep working.
func TestMaxMemory(t *testing.T) {
	s := startServer(t)
	r := dialRaw(t, s)
	r.do("SET", "k", "v")
	r.reply()
	r.do("CONFIG", "SET", "maxmemory", "1kb")
	if got := r.reply(); got[0] != "+OK" {
		t.Fatalf("CONFIG SET: %q", got)
	}
	r.do("SET", "k2", "v")
	if got := r.reply(); got[0] != "-OOM command not allowed when used memory > 'maxmemory'." {
		t.Fatalf("SET over maxmemory: %q", got)
	}
	r.do("GET", "k")
	if got := r.reply(); got[1] != "v" {
		t.Fatalf("GET over maxmemory: %q", got)
	}
	r.do("DEL", "k")
	if got := r.reply(); got[0] != ":1" {
		t.Fatalf("DEL over maxmemory: %q", got)
	}
	r.do("CONFIG", "SET", "maxmemory", "0")
	r.reply()
	r.do("SET", "k2", "v")
	if got := r.reply(); got[0] != "+OK" {
		t.Fatalf("SET without maxmemory: %q", got)
	}
}

// TestClientListShowsSessions: CLIENT LIST reports each client's real fd,
// database, subscriptions and MULTI state, read from another connection
// while those clients are busy (run with -race).
func TestClientListShowsSessions(t *testing.T) {
	s := startServer(t)
	ctx := context.Background()
	admin := newClient(t, s)
	sel := redis.NewClient(&redis.Options{Addr: s.Addr(), DB: 3})
	defer sel.Close()
	if err := sel.Ping(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	sub := admin.Subscribe(ctx, "a", "b")
	defer sub.Close()
	if _, err := sub.Receive(ctx); err != nil {
		t.Fatal(err)
	}
	psub := admin.PSubscribe(ctx, "p*")
	defer psub.Close()
	if _, err := psub.Receive(ctx); err != nil {
		t.Fatal(err)
	}
	tx := dialRaw(t, s)
	tx.do("MULTI")
	tx.do("SET", "k", "v")
	tx.do("INCR", "n")
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() { // keep the selected client busy while listing
		defer close(done)
		for {
			select {
			case <-stop:
				return
			default:
				sel.Set(ctx, "x", "y", 0)
			}
		}
	}()
	var list string
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		var err error
		if list, err = admin.ClientList(ctx).Result(); err == nil && strings.Contains(list, " multi=2 ") {
			break
		}
	}
	close(stop)
	<-done
	var sawDB3, sawSub, sawPsub, sawMulti bool
	for _, line := range strings.Split(strings.TrimSpace(list), "\n") {
		if strings.Contains(line, " fd=0 ") || strings.Contains(line, " fd=-1 ") {
			t.Errorf("no real fd: %s", line)
		}
		sawDB3 = sawDB3 || strings.Contains(line, " db=3 ")
		sawSub = sawSub || strings.Contains(line, " flags=P ") && strings.Contains(line, " sub=2 psub=0 ")
		sawPsub = sawPsub || strings.Contains(line, " flags=P ") && strings.Contains(line, " sub=0 psub=1 ")
		sawMulti = sawMulti || strings.Contains(line, " flags=x ") && strings.Contains(line, " multi=2 ") &&
			strings.Contains(line, " multi-mem=10 ") // SET k v + INCR n
	}
	if !strings.Contains(list, " rbs=16384 ") || !strings.Contains(list, " resp=2") {
		t.Errorf("buffer fields or protocol missing:\n%s", list)
	}
	if !sawDB3 || !sawSub || !sawPsub || !sawMulti {
		t.Fatalf("db=3 %v, subscriber %v, pattern subscriber %v, MULTI %v in:\n%s", sawDB3, sawSub, sawPsub, sawMulti, list)
	}
}

// TestIdleTime: OBJECT IDLETIME reports seconds since the last access
// (RESTORE IDLETIME sets it); reads and TOUCH record an access, EXISTS,
// TYPE, TTL and OBJECT do not. Run against redis-server too.
func TestIdleTime(t *testing.T) {
	run := func(t *testing.T, addr string) {
		ctx := context.Background()
		c := redis.NewClient(&redis.Options{Addr: addr})
		defer c.Close()
		c.Set(ctx, "src", "v", 0)
		payload, err := c.Dump(ctx, "src").Result()
		if err != nil {
			t.Fatal(err)
		}
		idle := func() int64 {
			t.Helper()
			n, err := c.ObjectIdleTime(ctx, "k").Result()
			if err != nil {
				t.Fatal(err)
			}
			return int64(n.Seconds())
		}
		if err := c.Do(ctx, "RESTORE", "k", 0, payload, "REPLACE", "IDLETIME", 1000).Err(); err != nil {
			t.Fatal(err)
		}
		if got := idle(); got < 1000 || got > 1002 {
			t.Fatalf("after RESTORE IDLETIME 1000: %d", got)
		}
		c.Exists(ctx, "k")
		c.Type(ctx, "k")
		c.TTL(ctx, "k")
		if got := idle(); got < 1000 {
			t.Fatalf("EXISTS/TYPE/TTL recorded an access: idle %d", got)
		}
		c.Get(ctx, "k")
		if got := idle(); got > 1 {
			t.Fatalf("GET did not record an access: idle %d", got)
		}
		c.Do(ctx, "RESTORE", "k", 0, payload, "REPLACE", "IDLETIME", 500)
		c.Touch(ctx, "k")
		if got := idle(); got > 1 {
			t.Fatalf("TOUCH did not record an access: idle %d", got)
		}
		if err := c.Do(ctx, "RESTORE", "k", 0, payload, "REPLACE", "IDLETIME", -1).Err(); err == nil ||
			err.Error() != "ERR Invalid IDLETIME value, must be >= 0" {
			t.Fatalf("negative IDLETIME: %v", err)
		}
	}
	t.Run("damselfly", func(t *testing.T) { run(t, startServer(t).Addr()) })
	t.Run("redis", func(t *testing.T) { run(t, startRedis(t)) })
}

// TestClientListOutputMemory: a subscriber that does not read shows its
// queued output in CLIENT LIST's omem (what monitoring watches to find slow
// consumers).
func TestClientListOutputMemory(t *testing.T) {
	s := startServer(t)
	ctx := context.Background()
	admin := newClient(t, s)
	sub := dialRaw(t, s)
	sub.do("SUBSCRIBE", "ch")
	sub.reply()
	msg := strings.Repeat("m", 64<<10)
	var omem int64
	for i := 0; i < 200 && omem == 0; i++ {
		admin.Publish(ctx, "ch", msg)
		list := admin.ClientList(ctx).Val()
		for _, line := range strings.Split(list, "\n") {
			if strings.Contains(line, "flags=P") {
				f := strings.Fields(line)
				for _, kv := range f {
					if v, ok := strings.CutPrefix(kv, "omem="); ok {
						omem, _ = strconv.ParseInt(v, 10, 64)
					}
				}
			}
		}
	}
	if omem == 0 {
		t.Fatal("omem stayed 0 for a subscriber that reads nothing")
	}
}
