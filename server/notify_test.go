package server

import (
	"context"
	"fmt"
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

// TestKeyspaceEventsOwnOrderAgainstRedis: a RESP3 client subscribed to its
// own keys gets the same bytes, pushes and replies in the same order, as
// from redis-server 7.0, for commands that notify before they reply (SET,
// RPUSH) and after (LPOP, RPOP with a count, LMPOP).
func TestKeyspaceEventsOwnOrderAgainstRedis(t *testing.T) {
	redisAddr := startRedis(t)
	s := startServer(t)
	run := func(addr string) string {
		r := dialAddr(t, addr)
		var out strings.Builder
		for _, cmd := range [][]string{
			{"CONFIG", "SET", "notify-keyspace-events", "KEA"},
			{"HELLO", "3"},
			{"SUBSCRIBE", "__keyspace@0__:k", "__keyspace@0__:l"},
		} {
			r.do(cmd...)
			r.reply()
		}
		r.reply() // the second channel's subscribe confirmation
		for _, cmd := range [][]string{
			{"SET", "k", "v"}, {"RPUSH", "l", "a", "b", "c", "d"}, {"LPOP", "l"},
			{"RPOP", "l", "2"}, {"LMPOP", "1", "l", "LEFT"}, {"PING"},
		} {
			r.do(cmd...)
		}
		// Everything the server sent, in order, up to PING's reply.
		for got := ""; got != "+PONG"; {
			got = strings.Join(r.reply(), " ")
			fmt.Fprintf(&out, "%s\n", got)
		}
		return out.String()
	}
	if got, want := run(s.Addr()), run(redisAddr); got != want {
		t.Fatalf("Damselfly:\n%s\nredis-server:\n%s", got, want)
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
