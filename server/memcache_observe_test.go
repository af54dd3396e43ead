package server

import (
	"context"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/bradfitz/gomemcache/memcache"
)

// TestMemcachedObserved: commands a gomemcache client (and a raw meta
// protocol client) runs on the memcached port show in INFO commandstats,
// latencystats, total_commands_processed, SLOWLOG and MONITOR as mc_
// commands, read through go-redis; CONFIG RESETSTAT clears them.
func TestMemcachedObserved(t *testing.T) {
	ctx := context.Background()
	s := startServer(t, func(c *Config) { c.MemcachedPort = -1; c.Save = "" })
	rdb := newClient(t, s)
	if err := rdb.ConfigSet(ctx, "slowlog-log-slower-than", "0").Err(); err != nil {
		t.Fatal(err)
	}
	mon := dialRaw(t, s)
	mon.do("MONITOR")
	if got := mon.reply(); got[0] != "+OK" {
		t.Fatalf("MONITOR: %q", got)
	}
	before := infoFields(t, rdb, "stats")["total_commands_processed"]

	mc := memcache.New(s.MemcachedAddr())
	mc.Timeout = 5 * time.Second
	if err := mc.Set(&memcache.Item{Key: "k", Value: []byte("hello")}); err != nil {
		t.Fatal(err)
	}
	if it, err := mc.Get("k"); err != nil || string(it.Value) != "hello" {
		t.Fatalf("get: %+v %v", it, err)
	}
	if _, err := mc.Get("missing"); err != memcache.ErrCacheMiss {
		t.Fatalf("get missing: %v", err)
	}
	if _, err := mc.Increment("k", 1); err == nil { // CLIENT_ERROR: not a number
		t.Fatal("incr of a non-number succeeded")
	}
	nc, err := net.Dial("tcp", s.MemcachedAddr())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	nc.SetDeadline(time.Now().Add(5 * time.Second))
	nc.Write([]byte("ms mk 2\r\nhi\r\nmg mk v\r\nmn\r\n"))
	buf := make([]byte, 0, 64)
	for !strings.HasSuffix(string(buf), "MN\r\n") {
		tmp := make([]byte, 64)
		n, err := nc.Read(tmp)
		if err != nil {
			t.Fatalf("meta replies %q: %v", buf, err)
		}
		buf = append(buf, tmp[:n]...)
	}
	if string(buf) != "HD\r\nVA 2\r\nhi\r\nMN\r\n" {
		t.Fatalf("meta replies %q", buf)
	}

	cs := infoFields(t, rdb, "commandstats")
	for name, want := range map[string]string{
		"mc_set": "calls=1,", "mc_gets": "calls=2,", "mc_incr": "calls=1,", "mc_ms": "calls=1,", "mc_mg": "calls=1,", "mc_mn": "calls=1,",
	} {
		if v := cs["cmdstat_"+name]; !strings.HasPrefix(v, want) {
			t.Fatalf("cmdstat_%s:%s, want %s...", name, v, want)
		}
	}
	if v := cs["cmdstat_mc_incr"]; !strings.HasSuffix(v, "rejected_calls=0,failed_calls=1") {
		t.Fatalf("cmdstat_mc_incr:%s, want one failed call", v)
	}
	if v := cs["cmdstat_mc_set"]; !strings.HasSuffix(v, "rejected_calls=0,failed_calls=0") {
		t.Fatalf("cmdstat_mc_set:%s", v)
	}
	if ls := infoFields(t, rdb, "latencystats"); !strings.HasPrefix(ls["latency_percentiles_usec_mc_gets"], "p50=") {
		t.Fatalf("latencystats: %v", ls)
	}
	after := infoFields(t, rdb, "stats")["total_commands_processed"]
	if atoi(after)-atoi(before) < 7 {
		t.Fatalf("total_commands_processed %s -> %s: memcached commands not counted", before, after)
	}

	logs, err := rdb.SlowLogGet(ctx, -1).Result()
	if err != nil {
		t.Fatal(err)
	}
	var slow []string
	for _, l := range logs {
		slow = append(slow, strings.Join(l.Args, " "))
		if l.Args[0] == "mc_set" && l.ClientAddr == "" {
			t.Fatalf("slowlog entry without the client: %+v", l)
		}
	}
	for _, want := range []string{"mc_set k 0 0 5 hello", "mc_gets k", "mc_ms mk 2 hi", "mc_mg mk v"} {
		found := false
		for _, got := range slow {
			found = found || got == want
		}
		if !found {
			t.Fatalf("SLOWLOG %q lacks %q", slow, want)
		}
	}

	var lines []string
	for len(lines) < 7 {
		got := mon.reply()
		line := got[0]
		i := strings.Index(line, "] ")
		if !strings.HasPrefix(line, "+") || !strings.Contains(line, " [0 127.0.0.1:") || i < 0 {
			t.Fatalf("monitor line %q", line)
		}
		if strings.Contains(line, `"mc_`) {
			lines = append(lines, line[i+2:])
		}
	}
	want := []string{`"mc_set" "k" "0" "0" "5" "hello"`, `"mc_gets" "k"`, `"mc_gets" "missing"`, `"mc_incr" "k" "1"`,
		`"mc_ms" "mk" "2" "hi"`, `"mc_mg" "mk" "v"`, `"mc_mn"`}
	if strings.Join(lines, "\n") != strings.Join(want, "\n") {
		t.Fatalf("MONITOR shows\n%s\nwant\n%s", strings.Join(lines, "\n"), strings.Join(want, "\n"))
	}

	if err := rdb.ConfigResetStat(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	if v, ok := infoFields(t, rdb, "commandstats")["cmdstat_mc_set"]; ok {
		t.Fatalf("after RESETSTAT: cmdstat_mc_set:%s", v)
	}
}
