package memcache_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bradfitz/gomemcache/memcache"
	"github.com/redis/go-redis/v9"

	mc "github.com/damselflydb/damselfly/memcache"
	"github.com/damselflydb/damselfly/server"
)

// startDamselfly runs the whole server with both protocols.
func startDamselfly(t testing.TB) *server.Server {
	t.Helper()
	cfg := server.Config{Port: 0, Bind: "127.0.0.1", Shards: 4, DBNum: 16, Dir: t.TempDir(), DBFilename: "dump.rdb",
		MemcachedPort: -1, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}
	s := server.New(cfg)
	if err := s.Start(cfg); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func TestGomemcache(t *testing.T) {
	s := startDamselfly(t)
	c := memcache.New(s.MemcachedAddr())
	if err := c.Set(&memcache.Item{Key: "k", Value: []byte("v"), Flags: 7}); err != nil {
		t.Fatal(err)
	}
	it, err := c.Get("k")
	if err != nil || string(it.Value) != "v" || it.Flags != 7 {
		t.Fatalf("Get = %+v, %v", it, err)
	}
	if err := c.Add(&memcache.Item{Key: "k", Value: []byte("x")}); err != memcache.ErrNotStored {
		t.Fatalf("Add existing: %v", err)
	}
	it.Value = []byte("v2")
	if err := c.CompareAndSwap(it); err != nil {
		t.Fatalf("CAS: %v", err)
	}
	it.Value = []byte("v3")
	if err := c.CompareAndSwap(it); err != memcache.ErrCASConflict {
		t.Fatalf("stale CAS: %v", err)
	}
	if n, err := c.Increment("n", 1); err != memcache.ErrCacheMiss {
		t.Fatalf("Increment missing = %d, %v", n, err)
	}
	c.Set(&memcache.Item{Key: "n", Value: []byte("41")})
	if n, err := c.Increment("n", 1); err != nil || n != 42 {
		t.Fatalf("Increment = %d, %v", n, err)
	}
	if n, err := c.Decrement("n", 100); err != nil || n != 0 {
		t.Fatalf("Decrement = %d, %v", n, err)
	}
	m, err := c.GetMulti([]string{"k", "n", "none"})
	if err != nil || len(m) != 2 || string(m["k"].Value) != "v2" {
		t.Fatalf("GetMulti = %v, %v", m, err)
	}
	if err := c.Touch("k", 100); err != nil {
		t.Fatal(err)
	}
	if err := c.Delete("k"); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Get("k"); err != memcache.ErrCacheMiss {
		t.Fatalf("Get after delete: %v", err)
	}
	if err := c.Set(&memcache.Item{Key: "big", Value: make([]byte, 2<<20)}); err == nil {
		t.Fatal("2 MiB item accepted")
	}
	if err := c.Ping(); err != nil {
		t.Fatal(err)
	}
	if err := c.FlushAll(); err != nil {
		t.Fatal(err)
	}
}

// TestMixedProtocols: memcached and RESP see the same keys in database 0,
// and a RESP write changes the CAS unique a memcached client saw.
func TestMixedProtocols(t *testing.T) {
	s := startDamselfly(t)
	ctx := context.Background()
	rdb := redis.NewClient(&redis.Options{Addr: s.Addr()})
	defer rdb.Close()
	c := memcache.New(s.MemcachedAddr())

	c.Set(&memcache.Item{Key: "m", Value: []byte("from-mc"), Flags: 3})
	if v, err := rdb.Get(ctx, "m").Result(); err != nil || v != "from-mc" {
		t.Fatalf("RESP GET = %q, %v", v, err)
	}
	rdb.Set(ctx, "r", "from-resp", 0)
	if it, err := c.Get("r"); err != nil || string(it.Value) != "from-resp" || it.Flags != 0 {
		t.Fatalf("mc get = %+v, %v", it, err)
	}
	// A RESP write between gets and cas makes the cas fail, even when it
	// writes the same value.
	it, _ := c.Get("r")
	rdb.Set(ctx, "r", "from-resp", 0)
	it.Value = []byte("mine")
	if err := c.CompareAndSwap(it); err != memcache.ErrCASConflict {
		t.Fatalf("cas after RESP write: %v", err)
	}
	it, _ = c.Get("m")
	rdb.Append(ctx, "m", "!")
	if err := c.CompareAndSwap(it); err != memcache.ErrCASConflict {
		t.Fatalf("cas after RESP APPEND: %v", err)
	}
	// memcached counters are RESP integers.
	c.Set(&memcache.Item{Key: "cnt", Value: []byte("10")})
	if n, err := rdb.IncrBy(ctx, "cnt", 5).Result(); err != nil || n != 15 {
		t.Fatalf("INCRBY = %d, %v", n, err)
	}
	if n, err := c.Increment("cnt", 1); err != nil || n != 16 {
		t.Fatalf("incr = %d, %v", n, err)
	}
	// Expiry set by memcached is a RESP TTL; RESP lists are misses.
	c.Set(&memcache.Item{Key: "ttl", Value: []byte("x"), Expiration: 100})
	if d, err := rdb.TTL(ctx, "ttl").Result(); err != nil || d < 99*time.Second || d > 100*time.Second {
		t.Fatalf("TTL = %v, %v", d, err)
	}
	rdb.RPush(ctx, "list", "a")
	if _, err := c.Get("list"); err != memcache.ErrCacheMiss {
		t.Fatalf("get list: %v", err)
	}
	c.Delete("m")
	if n, _ := rdb.Exists(ctx, "m").Result(); n != 0 {
		t.Fatal("mc delete not seen by RESP")
	}
	// Database 0 only.
	rdb.Do(ctx, "SELECT", "1")
}

// TestJournal checks that memcached writes reach the journal in RESP form
// and reads do not.
func TestJournal(t *testing.T) {
	var mu sync.Mutex
	var got []string
	addr, _ := startMemcache(t, mc.Config{Journal: func(db int, args [][]byte) {
		var parts []string
		for _, a := range args {
			parts = append(parts, string(a))
		}
		mu.Lock()
		got = append(got, fmt.Sprintf("%d %s", db, strings.Join(parts, " ")))
		mu.Unlock()
	}})
	r := dial(t, addr)
	r.send("set a 5 0 1\r\nx\r\ngets a\r\nget a\r\nappend a 0 0 1\r\ny\r\nincr a 1\r\nset n 0 0 1\r\n1\r\nincr n 2\r\n" +
		"touch n 0\r\ndelete n\r\nset e 0 -1 1\r\nx\r\nflush_all\r\nmn\r\n")
	for {
		l := r.lines(1)[0]
		if l == "MN" {
			break
		}
	}
	mu.Lock()
	defer mu.Unlock()
	want := []string{"0 SET a x", "0 SET a xy", "0 SET n 1", "0 SET n 3", "0 PERSIST n", "0 DEL n", "0 FLUSHDB"}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Fatalf("journal:\n got %q\nwant %q", got, want)
	}
}

// TestDamselflyOnly covers rules where Damselfly is deliberately stricter
// than memcached, and the parser's memory safety.
func TestDamselflyOnly(t *testing.T) {
	addr, _ := startMemcache(t, mc.Config{MaxItemSize: 1 << 20})
	r := dial(t, addr)
	// Keys with control characters are refused.
	r.send("set a\x01b 0 0 1\r\nx\r\nget a\x01b\r\n")
	if got := strings.Join(r.lines(3), "|"); got != "CLIENT_ERROR bad command line format|ERROR|CLIENT_ERROR bad command line format" {
		t.Fatalf("control key: %q", got)
	}
	// A client announcing a huge value, then sending little, makes the
	// server allocate nothing like it.
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	r.send("set big 0 0 2147483600\r\nabc")
	r.send("get x\r\n") // swallowed as data of the refused item
	time.Sleep(100 * time.Millisecond)
	runtime.ReadMemStats(&after)
	if got := r.lines(1)[0]; got != "SERVER_ERROR object too large for cache" {
		t.Fatalf("huge: %q", got)
	}
	if grow := int64(after.TotalAlloc) - int64(before.TotalAlloc); grow > 8<<20 {
		t.Fatalf("announcing a huge value allocated %d bytes", grow)
	}
	// A value just under the limit arriving slowly is buffered as it comes.
	r2 := dial(t, addr)
	r2.send("set slow 0 0 900000\r\n")
	for i := 0; i < 9; i++ {
		r2.send(strings.Repeat("y", 100000))
	}
	r2.send("\r\nget nope\r\n")
	if got := strings.Join(r2.lines(2), "|"); got != "STORED|END" {
		t.Fatalf("slow value: %q", got)
	}
	// A command line without a newline past 2048 bytes closes the connection.
	r3 := dial(t, addr)
	r3.send(strings.Repeat("x", 5000))
	r3.nc.SetReadDeadline(time.Now().Add(2 * time.Second))
	if _, err := r3.rd.ReadByte(); err != io.EOF {
		t.Fatalf("long line: %v", err)
	}
	// stats reports the counters.
	r = dial(t, addr)
	r.send("stats\r\n")
	seen := map[string]bool{}
	for {
		l := r.lines(1)[0]
		if l == "END" {
			break
		}
		f := strings.Fields(l)
		seen[f[1]] = true
	}
	for _, k := range []string{"pid", "uptime", "time", "version", "curr_items", "total_items", "get_hits", "get_misses",
		"curr_connections", "total_connections", "bytes", "cmd_get", "cmd_set"} {
		if !seen[k] {
			t.Errorf("stats lacks %s", k)
		}
	}
}

// TestConcurrentCAS: many clients incrementing through gets/cas lose no
// update (run with -race).
func TestConcurrentCAS(t *testing.T) {
	s := startDamselfly(t)
	c := memcache.New(s.MemcachedAddr())
	c.MaxIdleConns = 8
	c.Set(&memcache.Item{Key: "ctr", Value: []byte("0")})
	var wg sync.WaitGroup
	const workers, each = 4, 50
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < each; {
				it, err := c.Get("ctr")
				if err != nil {
					t.Error(err)
					return
				}
				var n int
				fmt.Sscan(string(it.Value), &n)
				it.Value = []byte(fmt.Sprint(n + 1))
				if err := c.CompareAndSwap(it); err == nil {
					i++
				} else if err != memcache.ErrCASConflict {
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	it, _ := c.Get("ctr")
	if string(it.Value) != fmt.Sprint(workers*each) {
		t.Fatalf("counter = %s", it.Value)
	}
}

// expect reads len(want) reply lines and compares them.
func (r *rawConn) expect(want ...string) {
	r.t.Helper()
	if got := r.lines(len(want)); strings.Join(got, "|") != strings.Join(want, "|") {
		r.t.Fatalf("got %q, want %q", got, want)
	}
}

// TestMemoryLimit: past maxmemory a store gets memcached's out-of-memory
// error under noeviction, and evicts (like memcached) under allkeys-lru.
func TestMemoryLimit(t *testing.T) {
	s := startDamselfly(t)
	rc := redis.NewClient(&redis.Options{Addr: s.Addr()})
	defer rc.Close()
	ctx := context.Background()
	m := dial(t, s.MemcachedAddr())
	m.send("set a 0 0 1\r\nx\r\n")
	m.expect("STORED")
	rc.ConfigSet(ctx, "maxmemory", "1")
	time.Sleep(150 * time.Millisecond) // the cron measures used memory
	m.send("set b 0 0 1\r\nx\r\n")
	m.expect("SERVER_ERROR out of memory storing object")
	m.send("incr a 1\r\n")
	m.expect("SERVER_ERROR out of memory storing object")
	m.send("get a\r\n")
	m.expect("VALUE a 0 1", "x", "END")

	rc.ConfigSet(ctx, "maxmemory", "0")
	runtime.GC() // the server runs in this process: measure a heap without garbage
	time.Sleep(150 * time.Millisecond)
	info := rc.Info(ctx, "memory").Val()
	var used int64
	for _, line := range strings.Split(info, "\r\n") {
		if v, ok := strings.CutPrefix(line, "used_memory:"); ok {
			used, _ = strconv.ParseInt(v, 10, 64)
		}
	}
	rc.ConfigSet(ctx, "maxmemory-policy", "allkeys-lru")
	rc.ConfigSet(ctx, "maxmemory", strconv.FormatInt(used+2<<20, 10))
	val := strings.Repeat("v", 200)
	for i := 0; i < 40000; i += 500 {
		var b strings.Builder
		for j := i; j < i+500; j++ {
			fmt.Fprintf(&b, "set k%d 0 0 %d noreply\r\n%s\r\n", j, len(val), val)
		}
		b.WriteString("mn\r\n")
		m.send(b.String())
		m.expect("MN")
	}
	m.send("set last 0 0 1\r\nx\r\n")
	m.expect("STORED")
	m.send("stats\r\n")
	var evictions, noMem string
	for {
		line := m.lines(1)[0]
		if line == "END" {
			break
		}
		if v, ok := strings.CutPrefix(line, "STAT evictions "); ok {
			evictions = v
		}
		if v, ok := strings.CutPrefix(line, "STAT store_no_memory "); ok {
			noMem = v
		}
	}
	if n, _ := strconv.Atoi(evictions); n < 1000 {
		t.Fatalf("stats evictions %q after storing 8 MB past a 2 MB margin", evictions)
	}
	if noMem != "2" {
		t.Fatalf("store_no_memory %q, want the 2 refusals under noeviction", noMem)
	}
}
