package server

import (
	"context"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/bradfitz/gomemcache/memcache"
)

// A pipelined command's duration starts at the previous command's end
// (cmdclock.go), but not across a wait: a write held by CLIENT PAUSE
// behind a GET in the same batch is not slow (Redis does not count the
// pause either), while a DEBUG SLEEP is, and the GET after it is not.
func TestCmdClockPipelineBoundary(t *testing.T) {
	ctx := context.Background()
	s := startServer(t, func(c *Config) { c.Save = "" })
	rdb := newClient(t, s)
	if err := rdb.ConfigSet(ctx, "slowlog-log-slower-than", "100000").Err(); err != nil {
		t.Fatal(err)
	}
	rdb.SlowLogReset(ctx)

	pipe := rdb.Pipeline()
	pipe.Set(ctx, "a", "1", 0)
	pipe.Do(ctx, "DEBUG", "SLEEP", "0.15")
	pipe.Get(ctx, "a")
	pipe.Incr(ctx, "n")
	if _, err := pipe.Exec(ctx); err != nil {
		t.Fatal(err)
	}

	pauser := newClient(t, s)
	if err := pauser.Do(ctx, "CLIENT", "PAUSE", "250", "WRITE").Err(); err != nil {
		t.Fatal(err)
	}
	pipe = rdb.Pipeline()
	pipe.Get(ctx, "a")
	pipe.Set(ctx, "a", "2", 0)
	t0 := time.Now()
	if _, err := pipe.Exec(ctx); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(t0); d < 150*time.Millisecond {
		t.Fatalf("the SET was not paused (%v)", d)
	}

	logs, err := rdb.SlowLogGet(ctx, -1).Result()
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, l := range logs {
		got = append(got, strings.Join(l.Args, " "))
	}
	if len(got) != 1 || got[0] != "DEBUG SLEEP 0.15" {
		t.Fatalf("SLOWLOG: %q, want only the DEBUG SLEEP", got)
	}
	if v := rdb.Get(ctx, "a").Val(); v != "2" {
		t.Fatalf("a = %q", v)
	}
}

// A memcached storage command whose data block arrives in a later read
// than its line keeps its line (copied when the first batch ended), and
// one whose block comes in the same read shows it too.
func TestMemcachedObservedSplitStore(t *testing.T) {
	ctx := context.Background()
	s := startServer(t, func(c *Config) { c.MemcachedPort = -1; c.Save = "" })
	rdb := newClient(t, s)
	if err := rdb.ConfigSet(ctx, "slowlog-log-slower-than", "0").Err(); err != nil {
		t.Fatal(err)
	}
	rdb.SlowLogReset(ctx)
	nc, err := net.Dial("tcp", s.MemcachedAddr())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	nc.SetDeadline(time.Now().Add(5 * time.Second))
	read := func(want string) {
		t.Helper()
		buf := make([]byte, 0, 64)
		for !strings.HasSuffix(string(buf), want) {
			tmp := make([]byte, 64)
			n, err := nc.Read(tmp)
			if err != nil {
				t.Fatalf("reply %q: %v", buf, err)
			}
			buf = append(buf, tmp[:n]...)
		}
	}
	nc.Write([]byte("set split 0 0 5\r\n"))
	time.Sleep(50 * time.Millisecond) // the server reads the line alone
	nc.Write([]byte("hello\r\n"))     // and this over it, at the buffer's start
	read("STORED\r\n")
	nc.Write([]byte("set whole 1 0 2\r\nhi\r\n"))
	read("STORED\r\n")

	logs, err := rdb.SlowLogGet(ctx, -1).Result()
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, l := range logs {
		if strings.HasPrefix(l.Args[0], "mc_") {
			got = append([]string{strings.Join(l.Args, " ")}, got...)
		}
	}
	want := []string{"mc_set split 0 0 5 hello", "mc_set whole 1 0 2 hi"}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Fatalf("SLOWLOG: %q, want %q", got, want)
	}
	mc := memcache.New(s.MemcachedAddr())
	if it, err := mc.Get("split"); err != nil || string(it.Value) != "hello" {
		t.Fatalf("get split: %+v %v", it, err)
	}
}
