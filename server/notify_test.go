package server

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

	"github.com/redis/go-redis/v9"
)

// nextMsg waits for the subscription's next message.
func nextMsg(t *testing.T, ps *redis.PubSub) *redis.Message {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	for {
		m, err := ps.Receive(ctx)
		if err != nil {
			t.Fatalf("waiting for a keyspace event: %v", err)
		}
		if msg, ok := m.(*redis.Message); ok {
			return msg
		}
	}
}

// TestKeyspaceEventsExpired: go-redis subscribers in RESP3 and RESP2 get
// "expired" for a key removed by the active cycle (never read) and for one
// found expired on access.
func TestKeyspaceEventsExpired(t *testing.T) {
	s := startServer(t)
	ctx := context.Background()
	c := newClient(t, s)
	if err := c.ConfigSet(ctx, "notify-keyspace-events", "Egx").Err(); err != nil {
		t.Fatal(err)
	}
	for _, proto := range []int{3, 2} {
		t.Run("RESP"+strconv.Itoa(proto), func(t *testing.T) {
			sub := redis.NewClient(&redis.Options{Addr: s.Addr(), Protocol: proto})
			defer sub.Close()
			ps := sub.PSubscribe(ctx, "__keyevent@0__:*")
			defer ps.Close()
			if _, err := ps.Receive(ctx); err != nil { // the confirmation
				t.Fatal(err)
			}
			// Active expiry: nobody touches the key.
			c.Set(ctx, "active", "v", 30*time.Millisecond)
			if m := nextMsg(t, ps); m.Channel != "__keyevent@0__:expire" || m.Payload != "active" {
				t.Fatalf("got %s %s, want expire active", m.Channel, m.Payload)
			}
			if m := nextMsg(t, ps); m.Channel != "__keyevent@0__:expired" || m.Payload != "active" {
				t.Fatalf("got %s %s, want expired active", m.Channel, m.Payload)
			}
			// Lazy expiry: GET finds it expired first (no cron in between
			// is not guaranteed, but either way the event is "expired").
			c.Set(ctx, "lazy", "v", 5*time.Millisecond)
			nextMsg(t, ps) // expire
			time.Sleep(10 * time.Millisecond)
			if v, err := c.Get(ctx, "lazy").Result(); err != redis.Nil {
				t.Fatalf("GET of an expired key: %q %v", v, err)
			}
			if m := nextMsg(t, ps); m.Channel != "__keyevent@0__:expired" || m.Payload != "lazy" {
				t.Fatalf("got %s %s, want expired lazy", m.Channel, m.Payload)
			}
		})
	}
}

// TestKeyspaceEventsEvicted: past maxmemory, every evicted key is announced
// with "evicted" (keyspace and keyevent channels).
func TestKeyspaceEventsEvicted(t *testing.T) {
	s := startServer(t, func(c *Config) { c.Shards = 1 })
	ctx := context.Background()
	c := newClient(t, s)
	sub := redis.NewClient(&redis.Options{Addr: s.Addr(), Protocol: 3})
	defer sub.Close()
	ps := sub.Subscribe(ctx, "__keyevent@0__:evicted")
	defer ps.Close()
	if _, err := ps.Receive(ctx); err != nil {
		t.Fatal(err)
	}
	c.ConfigSet(ctx, "notify-keyspace-events", "Ee")
	val := strings.Repeat("x", 1000)
	for i := range 2000 {
		c.Set(ctx, fmt.Sprintf("k%d", i), val, 0)
	}
	runtime.GC()
	time.Sleep(150 * time.Millisecond) // a cron tick measures memory
	used := infoField(t, c, "memory", "used_memory")
	c.ConfigSet(ctx, "maxmemory-policy", "allkeys-random")
	c.ConfigSet(ctx, "maxmemory", strconv.FormatInt(used, 10))
	time.Sleep(150 * time.Millisecond)
	for i := range 2000 {
		if err := c.Set(ctx, fmt.Sprintf("n%d", i), val, 0).Err(); err != nil {
			t.Fatal(err)
		}
	}
	c.ConfigSet(ctx, "maxmemory", "0")
	evicted := infoField(t, c, "stats", "evicted_keys")
	if evicted == 0 {
		t.Fatal("nothing was evicted")
	}
	for range evicted {
		m := nextMsg(t, ps)
		if m.Channel != "__keyevent@0__:evicted" || !(strings.HasPrefix(m.Payload, "k") || strings.HasPrefix(m.Payload, "n")) {
			t.Fatalf("got %s %s", m.Channel, m.Payload)
		}
		if n, _ := c.Exists(ctx, m.Payload).Result(); n != 0 {
			t.Fatalf("%s announced evicted but still exists", m.Payload)
		}
	}
}

// TestKeyspaceEventsOwnRESP3: a RESP3 client subscribed to its own keys'
// events gets the push before the reply of the command that raised it, as
// from Redis.
func TestKeyspaceEventsOwnRESP3(t *testing.T) {
	s := startServer(t)
	r := dialRaw(t, s)
	r.do("CONFIG", "SET", "notify-keyspace-events", "K$")
	r.reply()
	r.do("HELLO", "3")
	r.reply()
	r.do("SUBSCRIBE", "__keyspace@0__:k")
	r.reply()
	r.do("SET", "k", "v")
	got := strings.Join(r.reply(), " ")
	if got != ">3 $7 message $16 __keyspace@0__:k $3 set" {
		t.Fatalf("first: %q, want the push", got)
	}
	if got := strings.Join(r.reply(), " "); got != "+OK" {
		t.Fatalf("then %q, want +OK", got)
	}
}

// TestKeyspaceEventsOwnOrderAgainstRedis: a RESP3 client subscribed to
// its own keys gets the same bytes, pushes and replies in the same order,
// as from redis-server 7.0. Some commands notify before they reply (SET,
// SADD), others after (RPUSH, LPOP, HSET), some both (LMOVE, ZMPOP). Each
// row runs on one connection per server, keys of its own, and is compared
// up to a PING's reply. Where redis-server 7.0 writes a push inside a
// reply (ZPOPMIN after its deferred length, XAUTOCLAIM and XREADGROUP
// where they create the consumer), breaking RESP3's framing, ours comes
// before that reply: its pushes are compared as if set before the reply,
// and ours must never need that.
func TestKeyspaceEventsOwnOrderAgainstRedis(t *testing.T) {
	cases := []struct {
		name string
		cmds [][]string
	}{
		{"lists-pop", [][]string{
			{"SET", "k", "v"}, {"RPUSH", "l", "a", "b", "c", "d"}, {"LPOP", "l"},
			{"RPOP", "l", "2"}, {"LMPOP", "1", "l", "LEFT"},
		}},
		{"strings-set", [][]string{
			{"SET", "s1", "a", "NX"}, {"SET", "s1", "b", "XX", "GET"}, {"SET", "s1", "c", "EX", "1000"},
			{"SET", "s1", "d", "KEEPTTL"}, {"SET", "s1", "e", "NX"}, {"SET", "s1", "f", "PX", "100000", "GET"},
			{"SETNX", "s2", "a"}, {"SETNX", "s2", "b"}, {"SETEX", "s3", "1000", "x"},
			{"PSETEX", "s3", "1000000", "y"}, {"GETSET", "s2", "c"}, {"GETDEL", "s2"}, {"GETDEL", "s2"},
		}},
		{"strings-getex-mset", [][]string{
			{"SET", "g1", "v"}, {"GETEX", "g1", "EX", "1000"}, {"GETEX", "g1", "PERSIST"},
			{"GETEX", "g1"}, {"GETEX", "g1", "PX", "0"}, {"MSET", "m1", "a", "m2", "b"},
			{"MSETNX", "m3", "c", "m4", "d"}, {"APPEND", "m1", "xyz"}, {"APPEND", "m5", "new"},
		}},
		{"strings-counters", [][]string{
			{"INCR", "n1"}, {"INCRBY", "n1", "5"}, {"DECR", "n1"}, {"DECRBY", "n1", "2"},
			{"INCRBYFLOAT", "n2", "1.5"}, {"INCRBYFLOAT", "n2", "2.25"},
			{"SETRANGE", "r1", "3", "abc"}, {"SETRANGE", "r1", "0", "xy"}, {"SETRANGE", "r1", "0", ""},
		}},
		{"keys", [][]string{
			{"MSET", "d1", "a", "d2", "b", "d3", "c"}, {"DEL", "d1", "d2", "nope"}, {"UNLINK", "d3"},
			{"SET", "e1", "v"}, {"EXPIRE", "e1", "1000"}, {"PEXPIRE", "e1", "1000000"},
			{"PERSIST", "e1"}, {"EXPIREAT", "e1", "4000000000"}, {"EXPIRE", "e1", "-1"},
			{"SET", "e2", "v"}, {"RENAME", "e2", "e3"}, {"SET", "e4", "w"}, {"RENAME", "e3", "e4"},
			{"RENAMENX", "e4", "e5"}, {"COPY", "e5", "e6"}, {"COPY", "e5", "e6", "REPLACE"},
			{"MOVE", "e6", "1"}, {"SET", "e7", "v", "EX", "0"}, {"EXPIRE", "e5", "100", "NX"}, {"PEXPIREAT", "e5", "1"},
		}},
		{"hashes", [][]string{
			{"HSET", "h", "a", "1", "b", "2"}, {"HSETNX", "h", "c", "3"}, {"HSETNX", "h", "c", "4"},
			{"HMSET", "h", "d", "5"}, {"HDEL", "h", "a", "zz"}, {"HINCRBY", "h", "b", "10"},
			{"HINCRBYFLOAT", "h", "f", "1.5"}, {"HDEL", "h", "b", "c", "d", "f"},
		}},
		{"sets", [][]string{
			{"SADD", "s", "a", "b", "c"}, {"SADD", "s", "a"}, {"SREM", "s", "a", "zz"},
			{"SADD", "t", "only"}, {"SPOP", "t"}, {"SADD", "t", "x"}, {"SPOP", "t", "5"},
			{"SMOVE", "s", "u", "b"}, {"SMOVE", "s", "u", "c"}, {"SADD", "v", "b", "q"},
			{"SINTERSTORE", "w", "u", "v"}, {"SINTERSTORE", "w", "u", "nope"},
			{"SUNIONSTORE", "w", "u", "v"}, {"SDIFFSTORE", "w", "v", "u"},
		}},
		{"zsets", [][]string{
			{"ZADD", "z", "1", "a", "2", "b", "3", "c"}, {"ZADD", "z", "XX", "5", "a"},
			{"ZINCRBY", "z", "2", "b"}, {"ZREM", "z", "c", "zz"}, {"ZADD", "z", "INCR", "1", "n"},
			{"ZRANGESTORE", "x", "z", "0", "-1"}, {"ZRANGESTORE", "x", "nope", "0", "-1"},
			{"ZUNIONSTORE", "u", "2", "z", "x"}, {"ZINTERSTORE", "u", "2", "z", "nope"},
			{"ZREMRANGEBYSCORE", "u", "1", "1"}, {"ZREMRANGEBYRANK", "u", "0", "0"}, {"ZREMRANGEBYLEX", "u", "-", "+"},
		}},
		{"zset-pops", [][]string{
			{"ZADD", "z", "1", "a", "2", "b", "3", "c", "4", "d"}, {"ZPOPMIN", "z"}, {"ZPOPMAX", "z", "2"},
			{"ZMPOP", "1", "z", "MIN"}, {"ZADD", "z", "1", "a", "2", "b"}, {"BZPOPMIN", "z", "0"},
			{"BZMPOP", "0", "1", "z", "MAX", "COUNT", "5"}, {"ZADD", "y", "1", "a"}, {"ZPOPMIN", "y", "1"},
			{"ZPOPMIN", "y"},
		}},
		{"lists", [][]string{
			{"RPUSH", "l", "a", "b", "c", "b"}, {"LINSERT", "l", "BEFORE", "c", "x"},
			{"LSET", "l", "0", "A"}, {"LREM", "l", "0", "b"}, {"LTRIM", "l", "0", "1"},
			{"LMOVE", "l", "m", "LEFT", "RIGHT"}, {"RPOPLPUSH", "l", "m"}, {"RPOPLPUSH", "m", "m"},
			{"LPUSHX", "m", "y"}, {"RPUSHX", "none", "y"}, {"LTRIM", "m", "5", "6"},
		}},
		{"streams", [][]string{
			{"XADD", "x", "1-1", "f", "v"}, {"XADD", "x", "2-1", "f", "v"}, {"XADD", "x", "MAXLEN", "2", "3-1", "f", "v"},
			{"XDEL", "x", "2-1", "9-9"}, {"XTRIM", "x", "MAXLEN", "0"}, {"XADD", "y", "NOMKSTREAM", "1-1", "f", "v"},
		}},
		{"stream-groups", [][]string{
			{"XADD", "x", "1-1", "f", "v"}, {"XADD", "x", "2-1", "f", "v"}, {"XGROUP", "CREATE", "x", "g", "0"},
			{"XGROUP", "CREATECONSUMER", "x", "g", "c2"}, {"XREADGROUP", "GROUP", "g", "c", "COUNT", "1", "STREAMS", "x", ">"},
			{"XCLAIM", "x", "g", "c3", "0", "1-1"}, {"XAUTOCLAIM", "x", "g", "c4", "0", "0"}, {"XACK", "x", "g", "1-1"},
			{"XGROUP", "SETID", "x", "g", "0"}, {"XGROUP", "DELCONSUMER", "x", "g", "c"}, {"XSETID", "x", "5-5"},
			{"XGROUP", "DESTROY", "x", "g"}, {"XGROUP", "CREATE", "x2", "g", "$", "MKSTREAM"},
		}},
		{"other-writes", [][]string{
			{"GEOADD", "g", "13.361389", "38.115556", "Palermo", "15.087269", "37.502669", "Catania"},
			{"GEOSEARCHSTORE", "gs", "g", "FROMLONLAT", "15", "37", "BYRADIUS", "200", "km", "ASC"},
			{"RPUSH", "sl", "3", "1", "2"}, {"SORT", "sl", "STORE", "so"}, {"SORT", "nope", "STORE", "so"},
			{"PFADD", "p", "a", "b"}, {"PFADD", "p", "a"}, {"PFMERGE", "p2", "p"},
			{"SETBIT", "bt", "7", "1"}, {"BITOP", "OR", "bo", "bt"}, {"BITFIELD", "bf", "SET", "u8", "0", "255"},
		}},
		{"exec-and-scripts", [][]string{
			{"MULTI"}, {"SET", "k", "v"}, {"RPUSH", "l", "a", "b"}, {"LMOVE", "l", "m", "LEFT", "LEFT"}, {"EXEC"},
			{"MULTI"}, {"RPUSH", "l", "c"}, {"EXEC"},
			{"EVAL", "redis.call('set','k','w'); redis.call('lpush','l2','a'); return 7", "0"},
			{"MULTI"}, {"EVAL", "return redis.call('rpush','l3','a')", "0"}, {"RPUSH", "l3", "b"}, {"EXEC"},
		}},
		{"blocking-pops-without-blocking", [][]string{
			{"RPUSH", "b", "a", "b"}, {"BLPOP", "b", "0"}, {"BRPOP", "b", "0"},
			{"RPUSH", "bm", "a"}, {"BLMOVE", "bm", "bn", "LEFT", "LEFT", "0"},
		}},
	}
	redisAddr := startRedis(t)
	s := startServer(t)
	ours, theirs := dialOwnEvents(t, s.Addr()), dialOwnEvents(t, redisAddr)
	run := func(r *rawConn, cmds [][]string) (string, bool) {
		r.do("FLUSHALL")
		r.reply()
		for _, cmd := range cmds {
			r.do(cmd...)
		}
		r.do("PING")
		// Everything the server sent, in order, up to PING's reply.
		var out strings.Builder
		inside := false
		for got := ""; got != "+PONG"; {
			var in bool
			got, in = replyHoisting(r)
			inside = inside || in
			fmt.Fprintf(&out, "%s\n", got)
		}
		return out.String(), inside
	}
	for _, tc := range cases {
		got, inside := run(ours, tc.cmds)
		want, _ := run(theirs, tc.cmds)
		if got != want {
			t.Errorf("%s: Damselfly:\n%s\nredis-server (pushes inside a reply set before it):\n%s", tc.name, got, want)
		}
		if inside {
			t.Errorf("%s: Damselfly wrote a push inside a reply:\n%s", tc.name, got)
		}
	}
}

// TestKeyspaceEventsOwnBlockedAgainstRedis: a blocked client served by
// another's write gets its own events around its reply as from
// redis-server 7.0. The waking client's drain may take the served
// client's events first (they then go out ahead of its reply: a known
// limit, see notify.go), so a case passes when one of three tries
// matches; a push inside a reply fails at once.
func TestKeyspaceEventsOwnBlockedAgainstRedis(t *testing.T) {
	cases := []struct {
		name        string
		setup       [][]string
		block, wake []string
	}{
		{"xreadgroup-new-consumer", [][]string{{"XADD", "x", "1-1", "f", "v"}, {"XGROUP", "CREATE", "x", "g", "$"}},
			[]string{"XREADGROUP", "GROUP", "g", "newc", "BLOCK", "0", "STREAMS", "x", ">"}, []string{"XADD", "x", "2-1", "f", "v"}},
		{"blmove", nil, []string{"BLMOVE", "src", "dst", "RIGHT", "LEFT", "0"}, []string{"RPUSH", "src", "z"}},
		{"bzpopmin", nil, []string{"BZPOPMIN", "z", "0"}, []string{"ZADD", "z", "1", "a"}},
		{"bzmpop", nil, []string{"BZMPOP", "0", "1", "z", "MIN", "COUNT", "3"}, []string{"ZADD", "z", "1", "a", "2", "b"}},
		{"xread-missing-key", nil, []string{"XREAD", "BLOCK", "0", "STREAMS", "nokey", "$"}, []string{"XADD", "nokey", "1-1", "f", "v"}},
	}
	redisAddr := startRedis(t)
	s := startServer(t)
	run := func(addr string, setup [][]string, block, wake []string) (string, bool) {
		a, b := dialOwnEvents(t, addr), dialAddr(t, addr)
		for _, cmd := range append([][]string{{"FLUSHALL"}}, setup...) {
			b.do(cmd...)
			b.reply()
		}
		a.do(block...)
		for i := 0; ; i++ { // wait until a is blocked
			b.do("INFO", "clients")
			if strings.Contains(strings.Join(b.reply(), "\n"), "blocked_clients:1") {
				break
			}
			if i == 500 {
				t.Fatal("the client never blocked")
			}
			time.Sleep(2 * time.Millisecond)
		}
		b.do(wake...)
		b.reply()
		a.do("PING")
		var out strings.Builder
		inside := false
		for got := ""; got != "+PONG"; {
			var in bool
			got, in = replyHoisting(a)
			inside = inside || in
			fmt.Fprintf(&out, "%s\n", got)
		}
		return out.String(), inside
	}
	for _, tc := range cases {
		want, _ := run(redisAddr, tc.setup, tc.block, tc.wake)
		var got string
		for try := 0; try < 3; try++ {
			var inside bool
			got, inside = run(s.Addr(), tc.setup, tc.block, tc.wake)
			if inside {
				t.Fatalf("%s: Damselfly wrote a push inside a reply:\n%s", tc.name, got)
			}
			if got == want {
				break
			}
		}
		if got != want {
			t.Errorf("%s: Damselfly:\n%s\nredis-server (pushes inside a reply set before it):\n%s", tc.name, got, want)
		}
	}
}

// dialOwnEvents connects a RESP3 client subscribed to every key's
// keyspace events in database 0, with every class enabled.
func dialOwnEvents(t *testing.T, addr string) *rawConn {
	r := dialAddr(t, addr)
	for _, cmd := range [][]string{
		{"CONFIG", "SET", "notify-keyspace-events", "KEAm"},
		{"HELLO", "3"},
		{"PSUBSCRIBE", "__keyspace@0__:*"},
	} {
		r.do(cmd...)
		r.reply()
	}
	return r
}

// replyHoisting reads one reply as lines joined by spaces, each push found
// inside it (redis-server 7.0 writes some there) first, on lines of their
// own; inside reports whether there was one.
func replyHoisting(r *rawConn) (lines string, inside bool) {
	r.t.Helper()
	r.nc.SetReadDeadline(time.Now().Add(5 * time.Second))
	var pushes []string
	var walk func(depth int) []string
	walk = func(depth int) []string {
		typ, err := r.rd.Peek()
		if err != nil {
			r.t.Fatalf("reading reply: %v", err)
		}
		if typ == '>' && depth > 0 {
			v, err := r.rd.ReadValue()
			if err != nil {
				r.t.Fatalf("reading a push: %v", err)
			}
			pushes = append(pushes, strings.Join(replyLines(v, nil), " "))
			return nil
		}
		if typ != '*' && typ != '%' && typ != '~' && typ != '|' {
			v, err := r.rd.ReadValue()
			if err != nil {
				r.t.Fatalf("reading reply: %v", err)
			}
			return replyLines(v, nil)
		}
		ln, err := r.rd.ReadLine()
		if err != nil {
			r.t.Fatalf("reading reply: %v", err)
		}
		head := string(ln)
		n, _ := strconv.Atoi(head[1:])
		if typ == '%' || typ == '|' {
			n *= 2
		}
		out := []string{head}
		for i := 0; i < n; {
			if typ, _ := r.rd.Peek(); typ == '>' {
				walk(depth + 1) // a push: set aside, not an element
				continue
			}
			out = append(out, walk(depth+1)...)
			i++
		}
		return out
	}
	reply := strings.Join(walk(0), " ")
	if len(pushes) == 0 {
		return reply, false
	}
	return strings.Join(pushes, "\n") + "\n" + reply, true
}

// TestKeyspaceEventQueueing: raising an event allocates nothing; the cron
// leaves a running command's events to that command's own drain for a
// tick, and the events of one that panicked (disowned) to the next drain.
func TestKeyspaceEventQueueing(t *testing.T) {
	s := New(Config{Shards: 1, DBNum: 16, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}) // no cron
	s.setKeyspaceEvents(kseKeyspace | kseAll)
	c := &Client{srv: s}
	key := []byte("k")
	if n := testing.AllocsPerRun(100, func() {
		c.notify(kseString, "set", key)
		s.kseAfter(c)
	}); n != 0 {
		t.Fatalf("%v allocations per event", n)
	}
	c.notify(kseString, "set", key)
	s.kseAfterCron()
	if !s.kse.queued.Load() {
		t.Fatal("the cron drained a running command's event")
	}
	s.kseAfterCron()
	if s.kse.queued.Load() {
		t.Fatal("the cron left a command's event queued for a second tick")
	}
	c.notify(kseString, "set", key)
	s.kse.disown(c)
	s.kseAfterCron()
	if s.kse.queued.Load() {
		t.Fatal("a disowned event stayed queued")
	}
}

// TestKeyspaceEventsConcurrent: writers on many connections and shards,
// one subscriber; every event arrives once (run with -race).
func TestKeyspaceEventsConcurrent(t *testing.T) {
	s := startServer(t)
	ctx := context.Background()
	c := newClient(t, s)
	c.ConfigSet(ctx, "notify-keyspace-events", "E$")
	sub := redis.NewClient(&redis.Options{Addr: s.Addr(), Protocol: 2})
	defer sub.Close()
	ps := sub.Subscribe(ctx, "__keyevent@0__:incrby")
	defer ps.Close()
	if _, err := ps.Receive(ctx); err != nil {
		t.Fatal(err)
	}
	const writers, each = 4, 200
	var wg sync.WaitGroup
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			wc := redis.NewClient(&redis.Options{Addr: s.Addr(), Protocol: 2})
			defer wc.Close()
			for i := range each {
				wc.Incr(ctx, fmt.Sprintf("w%d:%d", w, i%10))
			}
		}()
	}
	wg.Wait()
	seen := map[string]int{}
	for range writers * each {
		seen[nextMsg(t, ps).Payload]++
	}
	for w := range writers {
		for i := range 10 {
			if n := seen[fmt.Sprintf("w%d:%d", w, i)]; n != each/10 {
				t.Fatalf("w%d:%d: %d events, want %d", w, i, n, each/10)
			}
		}
	}
}
