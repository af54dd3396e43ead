package server

import (
	"context"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// TestXReadBlock: XREAD BLOCK waits for entries after $, every blocked
// reader gets a new entry, a timeout answers nil.
func TestXReadBlock(t *testing.T) {
	s := startServer(t)
	ctx := context.Background()
	c := newClient(t, s)
	c.XAdd(ctx, &redis.XAddArgs{Stream: "s", ID: "1-1", Values: []string{"old", "x"}})
	var wg sync.WaitGroup
	got := make([]any, 3)
	for i := 0; i < 3; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := newClient(t, s)
			got[i], _ = r.Do(ctx, "XREAD", "BLOCK", 0, "STREAMS", "other", "s", "0", "$").Result()
		}()
	}
	waitBlocked(t, s, 3)
	c.XAdd(ctx, &redis.XAddArgs{Stream: "s", ID: "2-1", Values: []string{"f", "v"}})
	wg.Wait()
	want := []any{[]any{"s", []any{[]any{"2-1", []any{"f", "v"}}}}}
	for i, g := range got {
		if !reflect.DeepEqual(g, want) {
			t.Errorf("reader %d got %v", i, g)
		}
	}
	start := time.Now()
	if err := c.Do(ctx, "XREAD", "BLOCK", 100, "STREAMS", "s", "$").Err(); err != redis.Nil {
		t.Fatalf("timeout: %v", err)
	}
	if d := time.Since(start); d < 90*time.Millisecond || d > 2*time.Second {
		t.Fatalf("timed out after %v", d)
	}
	// A stream created by RENAME wakes readers of its new name.
	wg.Add(1)
	var r1 any
	go func() {
		defer wg.Done()
		r1, _ = newClient(t, s).Do(ctx, "XREAD", "BLOCK", 0, "COUNT", 1, "STREAMS", "moved", "0").Result()
	}()
	waitBlocked(t, s, 1)
	c.Rename(ctx, "s", "moved")
	wg.Wait()
	if want := []any{[]any{"moved", []any{[]any{"1-1", []any{"old", "x"}}}}}; !reflect.DeepEqual(r1, want) {
		t.Fatalf("after RENAME got %v", r1)
	}
}

// TestXReadGroupBlock: consumers of one group blocked on ">" share new
// entries (each entry goes to one of them and into its PEL); destroying the
// group answers its blocked readers with NOGROUP.
func TestXReadGroupBlock(t *testing.T) {
	s := startServer(t)
	ctx := context.Background()
	c := newClient(t, s)
	if err := c.XGroupCreateMkStream(ctx, "s", "g", "$").Err(); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	var ids []string
	for _, name := range []string{"alice", "bob"} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			res, err := newClient(t, s).XReadGroup(ctx, &redis.XReadGroupArgs{Group: "g", Consumer: name, Streams: []string{"s", ">"}, Block: 0}).Result()
			if err != nil {
				t.Errorf("%s: %v", name, err)
				return
			}
			mu.Lock()
			ids = append(ids, name+":"+res[0].Messages[0].ID)
			mu.Unlock()
		}()
	}
	waitBlocked(t, s, 2)
	c.XAdd(ctx, &redis.XAddArgs{Stream: "s", ID: "1-1", Values: []string{"f", "1"}})
	waitBlocked(t, s, 1)
	c.XAdd(ctx, &redis.XAddArgs{Stream: "s", ID: "2-1", Values: []string{"f", "2"}})
	wg.Wait()
	// The readers append in whatever order their goroutines run.
	slices.SortFunc(ids, func(a, b string) int { return strings.Compare(strings.Split(a, ":")[1], strings.Split(b, ":")[1]) })
	if len(ids) != 2 || strings.Split(ids[0], ":")[1] != "1-1" || strings.Split(ids[1], ":")[1] != "2-1" {
		t.Fatalf("deliveries %v", ids)
	}
	p, err := c.XPending(ctx, "s", "g").Result()
	if err != nil || p.Count != 2 || len(p.Consumers) != 2 {
		t.Fatalf("XPENDING %+v %v", p, err)
	}
	wg.Add(1)
	var gerr error
	go func() {
		defer wg.Done()
		gerr = newClient(t, s).XReadGroup(ctx, &redis.XReadGroupArgs{Group: "g", Consumer: "carol", Streams: []string{"s", ">"}, Block: 0}).Err()
	}()
	waitBlocked(t, s, 1)
	c.XGroupDestroy(ctx, "s", "g")
	wg.Wait()
	if gerr == nil || gerr.Error() != "NOGROUP the consumer group this client was blocked on no longer exists" {
		t.Fatalf("after XGROUP DESTROY: %v", gerr)
	}
}

// TestStreamsAgainstRedis: DEBUG DIGEST(-VALUE) of streams equals Redis's,
// DUMP payloads restore both ways, and the replies that carry times (XINFO
// ... FULL, XPENDING's extended form) match once times are masked.
func TestStreamsAgainstRedis(t *testing.T) {
	raddr := startRedis(t, "--enable-debug-command", "yes")
	s := startServer(t)
	ctx := context.Background()
	rc := redis.NewClient(&redis.Options{Addr: raddr, Protocol: 2})
	t.Cleanup(func() { rc.Close() })
	dc := newClient(t, s)
	script := func(c *redis.Client) {
		t.Helper()
		do := func(args ...any) {
			t.Helper()
			if err := c.Do(ctx, args...).Err(); err != nil && err != redis.Nil {
				t.Fatalf("%v: %v", args, err)
			}
		}
		for i := 1; i <= 700; i++ {
			do("XADD", "s", fmt.Sprintf("%d-%d", i/4+1, i%4), "n", i, "text", strings.Repeat("t", i%90))
		}
		do("XDEL", "s", "3-1", "50-2", "51-0")
		do("XTRIM", "s", "MAXLEN", "600")
		do("XADD", "small", "1-1", "a", "1", "a", "2")
		do("XGROUP", "CREATE", "s", "g", "0")
		do("XGROUP", "CREATE", "s", "h", "100-0")
		do("XREADGROUP", "GROUP", "g", "c1", "COUNT", 30, "STREAMS", "s", ">")
		do("XREADGROUP", "GROUP", "g", "c2", "COUNT", 5, "STREAMS", "s", ">")
		do("XACK", "s", "g", "26-1", "27-0")
		do("XCLAIM", "s", "g", "c3", 0, "28-0", "28-1")
		do("XGROUP", "CREATE", "empty", "g", "$", "MKSTREAM")
	}
	script(rc)
	script(dc)
	for _, k := range []string{"s", "small", "empty"} {
		a, _ := rc.Do(ctx, "DEBUG", "DIGEST-VALUE", k).Result()
		b, _ := dc.Do(ctx, "DEBUG", "DIGEST-VALUE", k).Result()
		if !reflect.DeepEqual(a, b) {
			t.Errorf("DIGEST-VALUE %s: redis %v, ours %v", k, a, b)
		}
	}
	if a, b := rc.Do(ctx, "DEBUG", "DIGEST").Val(), dc.Do(ctx, "DEBUG", "DIGEST").Val(); a != b {
		t.Errorf("DEBUG DIGEST: redis %v, ours %v", a, b)
	}
	masked := func(c *redis.Client, args ...any) string {
		v, err := c.Do(ctx, args...).Result()
		if err != nil {
			t.Fatalf("%v: %v", args, err)
		}
		var b strings.Builder
		var render func(x any)
		render = func(x any) {
			if l, ok := x.([]any); ok {
				b.WriteString("[")
				for i := 0; i < len(l); i++ {
					if s, ok := l[i].(string); ok && (s == "seen-time" || s == "idle") && i+1 < len(l) {
						i++
						continue
					}
					render(l[i])
					b.WriteString(" ")
				}
				b.WriteString("]")
				return
			}
			if n, ok := x.(int64); ok && n > 1_600_000_000_000 {
				b.WriteString("<time>")
				return
			}
			fmt.Fprint(&b, x)
		}
		render(v)
		return b.String()
	}
	for _, args := range [][]any{
		{"XINFO", "STREAM", "s", "FULL", "COUNT", 0},
		{"XINFO", "STREAM", "empty", "FULL"},
		{"XINFO", "CONSUMERS", "s", "g"},
		{"XINFO", "GROUPS", "s"},
		{"XPENDING", "s", "g", "-", "+", 100},
		{"XPENDING", "s", "g", "IDLE", 0, "-", "+", 100, "c3"},
	} {
		a, b := masked(rc, args...), masked(dc, args...)
		// XPENDING's idle times are small but not equal: compare shapes.
		if args[0] == "XPENDING" {
			a, b = maskSmallInts(a), maskSmallInts(b)
		}
		if a != b {
			t.Errorf("%v:\n redis %.2000s\n ours  %.2000s", args, a, b)
		}
	}
	// DUMP/RESTORE both ways.
	for _, k := range []string{"s", "small", "empty"} {
		rp, _ := rc.Dump(ctx, k).Result()
		dp, _ := dc.Dump(ctx, k).Result()
		if err := dc.RestoreReplace(ctx, k+":r", 0, rp).Err(); err != nil {
			t.Fatalf("RESTORE of Redis's %s here: %v", k, err)
		}
		if err := rc.RestoreReplace(ctx, k+":d", 0, dp).Err(); err != nil {
			t.Fatalf("RESTORE of our %s in Redis: %v", k, err)
		}
		want := masked(rc, "XINFO", "STREAM", k, "FULL", "COUNT", 0)
		if got := masked(dc, "XINFO", "STREAM", k+":r", "FULL", "COUNT", 0); got != want {
			t.Errorf("%s restored here:\n got  %.1000s\n want %.1000s", k, got, want)
		}
		if got := masked(rc, "XINFO", "STREAM", k+":d", "FULL", "COUNT", 0); got != want {
			t.Errorf("%s restored in Redis:\n got  %.1000s\n want %.1000s", k, got, want)
		}
	}
	if n := dc.MemoryUsage(ctx, "s").Val(); n < 20000 {
		t.Errorf("MEMORY USAGE s = %d", n)
	}
}

// maskSmallInts hides the idle-time column of XPENDING's extended reply
// (the third field of each entry).
func maskSmallInts(s string) string {
	parts := strings.Split(s, " ")
	for i := range parts {
		if strings.HasPrefix(parts[i], "[") && i+2 < len(parts) {
			parts[i+2] = "<idle>"
		}
	}
	return strings.Join(parts, " ")
}

// TestStreamSaveRestart: streams (entries, tombstones, metadata, groups,
// PELs with their times and counts, consumers) survive SAVE and a restart,
// and DEBUG RELOAD, exactly.
func TestStreamSaveRestart(t *testing.T) {
	dir := t.TempDir()
	s := startServer(t, func(c *Config) { c.Dir = dir })
	ctx := context.Background()
	c := newClient(t, s)
	for i := 0; i < 1000; i++ {
		c.Do(ctx, "XADD", "s", "*", "n", i, "pad", strings.Repeat("p", i%50))
	}
	c.Do(ctx, "XTRIM", "s", "MAXLEN", 900)
	c.Do(ctx, "XGROUP", "CREATE", "s", "g", "0")
	c.Do(ctx, "XREADGROUP", "GROUP", "g", "a", "COUNT", 300, "STREAMS", "s", ">")
	c.Do(ctx, "XREADGROUP", "GROUP", "g", "b", "COUNT", 10, "STREAMS", "s", ">")
	c.Do(ctx, "XGROUP", "CREATE", "e", "g", "$", "MKSTREAM")
	c.Do(ctx, "XADD", "ttl", "1-1", "f", "v")
	c.Do(ctx, "PEXPIRE", "ttl", 3600000)
	state := func(c *redis.Client) string {
		var b strings.Builder
		for _, k := range []string{"s", "e", "ttl"} {
			fmt.Fprintln(&b, c.Do(ctx, "XINFO", "STREAM", k, "FULL", "COUNT", 0).Val(), c.PExpireTime(ctx, k).Val())
		}
		return b.String()
	}
	want := state(c)
	if err := c.Save(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	s.Close()
	s2 := startServer(t, func(c *Config) { c.Dir = dir })
	if err := s2.LoadDump(); err != nil {
		t.Fatal(err)
	}
	c2 := newClient(t, s2)
	if got := state(c2); got != want {
		t.Fatalf("after restart:\n got  %.1500s\n want %.1500s", got, want)
	}
	if err := c2.Do(ctx, "DEBUG", "RELOAD").Err(); err != nil {
		t.Fatal(err)
	}
	if got := state(c2); got != want {
		t.Fatalf("after DEBUG RELOAD:\n got  %.1500s\n want %.1500s", got, want)
	}
}

// TestStreamsRESP3AgainstRedis: the stream replies in RESP3 (maps for XINFO
// and XREAD, nulls) are Redis's byte for byte.
func TestStreamsRESP3AgainstRedis(t *testing.T) {
	raddr := startRedis(t)
	s := startServer(t)
	cmds := [][]string{
		{"XADD", "s", "1-1", "a", "1", "b", "2"},
		{"XADD", "s", "2-1", "a", "3"},
		{"XADD", "t", "1-1", "x", "y"},
		{"XRANGE", "s", "-", "+"},
		{"XRANGE", "s", "-", "+", "COUNT", "0"},
		{"XREAD", "STREAMS", "s", "t", "0", "0"},
		{"XREAD", "STREAMS", "s", "$"},
		{"XREAD", "BLOCK", "10", "STREAMS", "s", "$"},
		{"XINFO", "STREAM", "s"},
		{"XINFO", "STREAM", "s", "FULL"},
		{"XGROUP", "CREATE", "s", "g", "0"},
		{"XREADGROUP", "GROUP", "g", "c", "STREAMS", "s", "t", ">", ">"},
		{"XREADGROUP", "GROUP", "g", "c", "STREAMS", "s", ">"},
		{"XREADGROUP", "GROUP", "g", "c", "COUNT", "1", "STREAMS", "s", ">"},
		{"XGROUP", "CREATE", "t", "g", "0"},
		{"XREADGROUP", "GROUP", "g", "c", "COUNT", "1", "STREAMS", "s", "t", ">", ">"},
		{"XINFO", "GROUPS", "s"},
		{"XPENDING", "s", "g"},
		{"XPENDING", "s", "nog"},
		{"XCLAIM", "s", "g", "d", "0", "1-1", "JUSTID"},
		{"XAUTOCLAIM", "s", "g", "e", "0", "0", "JUSTID"},
		{"XDEL", "s", "1-1"},
		{"XREADGROUP", "GROUP", "g", "e", "STREAMS", "s", "0"},
		{"XINFO", "STREAM", "t"},
	}
	run := func(addr string) [][]string {
		r := dialAddr(t, addr)
		r.do("FLUSHALL")
		r.reply()
		r.do("HELLO", "3")
		r.reply()
		var out [][]string
		for _, c := range cmds {
			r.do(c...)
			out = append(out, r.reply())
		}
		return out
	}
	want, got := run(raddr), run(s.Addr())
	for i := range cmds {
		if strings.Join(got[i], "\n") != strings.Join(want[i], "\n") {
			t.Errorf("%v:\n got  %q\n want %q", cmds[i], got[i], want[i])
		}
	}
}
