package server

import (
	"context"
	"fmt"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// monitorSession runs the same commands against addr with a MONITOR
// watching, and returns the monitor's lines with the timestamp and the
// client port removed.
func monitorSession(t *testing.T, addr string) []string {
	t.Helper()
	mon := dialAddr(t, addr)
	mon.do("MONITOR")
	if got := mon.reply(); got[0] != "+OK" {
		t.Fatalf("MONITOR: %q", got)
	}
	c := dialAddr(t, addr)
	cmds := [][]string{
		{"FLUSHALL"},
		{"SET", "a b", "x\"y\\z\n\r\t\a\b\x01\xc3\xa9\x7f"},
		{"GET", "a b"},
		{"get"},                        // refused (arity): not shown
		{"NOSUCHCOMMAND", "x"},         // unknown: not shown
		{"CONFIG", "GET", "maxmemory"}, // admin: not shown
		{"LPUSH", "a b", "x"},          // ran and failed: shown
		{"EVAL", "redis.call('set','k','v'); return redis.call('get','k')", "0"},
		{"EVAL", "return redis.pcall('incr','a b')", "0"},
		{"AUTH", "user", "pass"},
		{"HELLO", "2", "AUTH", "default", "secret"},
		{"HELLO", "2", "SETNAME", "n1"},
		{"MULTI"}, {"SET", "m", "1"}, {"INCR", "m"}, {"EXEC"},
		{"SELECT", "3"}, {"SET", "x", "12345"}, {"SELECT", "0"},
		{"CLIENT", "SETNAME", "cli"},
		{"FCALL", "nosuch", "0"},
		{"DEL", "a b", "m", "k"},
		{"PING", ""},
	}
	for _, cmd := range cmds {
		c.do(cmd...)
		c.reply()
	}
	c.do("ECHO", "last")
	c.reply()
	var lines []string
	ts := regexp.MustCompile(`^\+\d+\.\d{6} \[(\d+) ([^\]]*)\] (.*)$`)
	for {
		got := mon.reply()
		m := ts.FindStringSubmatch(got[0])
		if m == nil {
			t.Fatalf("monitor line %q", got[0])
		}
		who := m[2]
		if who != "lua" {
			who = "addr"
		}
		lines = append(lines, m[1]+" "+who+" "+m[3])
		if m[3] == `"ECHO" "last"` {
			return lines
		}
	}
}

// TestMonitorMatchesRedis compares MONITOR's lines with redis-server's for
// the same commands (timestamps and ports aside).
func TestMonitorMatchesRedis(t *testing.T) {
	s := startServer(t)
	ours := monitorSession(t, s.Addr())
	raddr := startRedis(t)
	theirs := monitorSession(t, raddr)
	if strings.Join(ours, "\n") != strings.Join(theirs, "\n") {
		t.Errorf("MONITOR differs from Redis's\n ours:\n%s\nredis:\n%s", strings.Join(ours, "\n"), strings.Join(theirs, "\n"))
	}
}

// TestMonitorOwnCommands: a monitor sees its own commands after their
// replies, may not touch keys, and RESET ends monitoring.
func TestMonitorOwnCommands(t *testing.T) {
	run := func(addr string) []string {
		r := dialAddr(t, addr)
		r.do("MONITOR")
		r.reply()
		r.do("PING")
		r.do("GET", "x")
		r.do("RESET")
		r.do("PING")
		var out []string
		for i := 0; i < 5; i++ {
			line := r.reply()[0]
			out = append(out, regexp.MustCompile(`^\+\d+\.\d+ \[0 [^\]]*\]`).ReplaceAllString(line, "+T [0 addr]"))
		}
		return out
	}
	ours := strings.Join(run(startServer(t).Addr()), "\n")
	want := "+PONG\n+T [0 addr] \"PING\"\n-ERR Replica can't interact with the keyspace\n+RESET\n+PONG"
	if ours != want {
		t.Errorf("got\n%s\nwant\n%s", ours, want)
	}
	if _, err := exec.LookPath("redis-server"); err == nil {
		if theirs := strings.Join(run(startRedis(t)), "\n"); theirs != want {
			t.Errorf("redis-server: %s", theirs)
		}
	}
}

// TestMonitorSlowReaderNeverBlocks: a monitor that never reads is
// disconnected at its output limit while writers go on at full speed.
func TestMonitorSlowReaderNeverBlocks(t *testing.T) {
	s := startServer(t)
	mon := dialRaw(t, s)
	mon.do("CONFIG", "SET", "client-output-buffer-limit", "normal 256kb 0 0")
	mon.reply()
	mon.do("MONITOR")
	mon.reply()
	rdb := newClient(t, s)
	ctx := context.Background()
	big := strings.Repeat("v", 10000)
	deadline := time.Now().Add(10 * time.Second)
	for i := 0; i < 3000; i++ {
		if err := rdb.Set(ctx, "k", big, 0).Err(); err != nil {
			t.Fatal(err)
		}
	}
	if time.Now().After(deadline) {
		t.Fatal("writers slowed down by a monitor that does not read")
	}
	// The monitor was dropped: CLIENT LIST no longer shows an O client.
	for i := 0; ; i++ {
		list, _ := rdb.ClientList(ctx).Result()
		if !strings.Contains(list, "flags=O") {
			break
		}
		if i > 100 {
			t.Fatalf("monitor still connected: %s", list)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func infoFields(t *testing.T, rdb *redis.Client, section string) map[string]string {
	t.Helper()
	txt, err := rdb.Info(context.Background(), section).Result()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, line := range strings.Split(txt, "\r\n") {
		if k, v, ok := strings.Cut(line, ":"); ok {
			out[k] = v
		}
	}
	return out
}

// TestCommandStats checks calls, rejections, failures, errorstats and
// latencystats through go-redis, EXEC and scripts included, and RESETSTAT.
func TestCommandStats(t *testing.T) {
	s := startServer(t)
	// One connection, no CLIENT SETINFO (an error before 7.2) to count.
	rdb := redis.NewClient(&redis.Options{Addr: s.Addr(), Protocol: 2, PoolSize: 1, DisableIdentity: true})
	defer rdb.Close()
	ctx := context.Background()
	rdb.ConfigResetStat(ctx)
	rdb.Set(ctx, "a", "1", 0)
	rdb.Get(ctx, "a")
	rdb.Do(ctx, "get")                                                          // rejected: arity
	rdb.LPush(ctx, "a", "x")                                                    // failed: WRONGTYPE
	rdb.Do(ctx, "nosuchcmd")                                                    // an error, no command
	rdb.Eval(ctx, "redis.pcall('lpush', KEYS[1], 'x') return 1", []string{"a"}) // failed inside a script
	rdb.Do(ctx, "multi")
	rdb.Do(ctx, "get", "a")   // queued
	rdb.Do(ctx, "nosuchcmd2") // an error, no command: not get's rejection
	rdb.Do(ctx, "discard")
	pipe := rdb.TxPipeline()
	pipe.Incr(ctx, "n")
	pipe.LPush(ctx, "a", "x") // failed inside EXEC
	pipe.Exec(ctx)
	f := infoFields(t, rdb, "commandstats")
	check := func(name, want string) {
		t.Helper()
		got := f["cmdstat_"+name]
		re := regexp.MustCompile(`^calls=(\d+),usec=(\d+),usec_per_call=(\d+\.\d\d),rejected_calls=(\d+),failed_calls=(\d+)$`)
		m := re.FindStringSubmatch(got)
		if m == nil {
			t.Fatalf("cmdstat_%s = %q", name, got)
		}
		if s := "calls=" + m[1] + ",rejected_calls=" + m[4] + ",failed_calls=" + m[5]; s != want {
			t.Errorf("cmdstat_%s: %s, want %s", name, s, want)
		}
	}
	check("set", "calls=1,rejected_calls=0,failed_calls=0")
	check("get", "calls=1,rejected_calls=1,failed_calls=0")
	check("discard", "calls=1,rejected_calls=0,failed_calls=0")
	check("lpush", "calls=3,rejected_calls=0,failed_calls=3")
	check("eval", "calls=1,rejected_calls=0,failed_calls=0")
	check("incr", "calls=1,rejected_calls=0,failed_calls=0")
	check("exec", "calls=1,rejected_calls=0,failed_calls=0")
	check("config|resetstat", "calls=1,rejected_calls=0,failed_calls=0")
	e := infoFields(t, rdb, "errorstats")
	if e["errorstat_ERR"] != "count=3" || e["errorstat_WRONGTYPE"] != "count=3" {
		t.Errorf("errorstats %v", e)
	}
	st := infoFields(t, rdb, "stats")
	// Everything that ran: the calls above plus the INFO calls.
	var sum int64
	for k, v := range infoFields(t, rdb, "commandstats") {
		if strings.HasPrefix(k, "cmdstat_") {
			n, _ := strconv.ParseInt(strings.TrimPrefix(strings.Split(v, ",")[0], "calls="), 10, 64)
			sum += n
		}
	}
	if got, _ := strconv.ParseInt(st["total_commands_processed"], 10, 64); got+1 != sum { // one more INFO since
		t.Errorf("total_commands_processed %d, sum of calls %d", got, sum)
	}
	if st["total_error_replies"] != "6" {
		t.Errorf("total_error_replies %s", st["total_error_replies"])
	}
	l := infoFields(t, rdb, "latencystats")
	if !regexp.MustCompile(`^p50=\d+\.\d{3},p99=\d+\.\d{3},p99\.9=\d+\.\d{3}$`).MatchString(l["latency_percentiles_usec_set"]) {
		t.Errorf("latencystats %v", l)
	}
	rdb.ConfigSet(ctx, "latency-tracking-info-percentiles", "50 90")
	l = infoFields(t, rdb, "latencystats")
	if !regexp.MustCompile(`^p50=\d+\.\d{3},p90=\d+\.\d{3}$`).MatchString(l["latency_percentiles_usec_set"]) {
		t.Errorf("latencystats with 50 90: %v", l)
	}
	// Default INFO has errorstats but not commandstats or latencystats.
	all, _ := rdb.Info(ctx).Result()
	if !strings.Contains(all, "# Errorstats") || strings.Contains(all, "# Commandstats") || strings.Contains(all, "# Latencystats") {
		t.Error("default INFO sections")
	}
	rdb.ConfigResetStat(ctx)
	f = infoFields(t, rdb, "commandstats")
	if _, ok := f["cmdstat_set"]; ok || len(f) != 1 { // config|resetstat only... and INFO
		if len(f) > 2 {
			t.Errorf("after RESETSTAT: %v", f)
		}
	}
	if e := infoFields(t, rdb, "errorstats"); len(e) != 0 {
		t.Errorf("errorstats after RESETSTAT: %v", e)
	}
}

// TestCommandStatsConcurrent runs commands from many clients under -race
// and checks that no call is lost.
func TestCommandStatsConcurrent(t *testing.T) {
	s := startServer(t)
	ctx := context.Background()
	rdb := redis.NewClient(&redis.Options{Addr: s.Addr(), PoolSize: 8})
	defer rdb.Close()
	rdb.ConfigResetStat(ctx)
	var wg sync.WaitGroup
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			for i := 0; i < 200; i++ {
				rdb.Set(ctx, fmt.Sprint("k", g), i, 0)
			}
		}(g)
	}
	wg.Wait()
	f := infoFields(t, rdb, "commandstats")
	if !strings.HasPrefix(f["cmdstat_set"], "calls=1600,") {
		t.Errorf("cmdstat_set %s", f["cmdstat_set"])
	}
}

// TestSlowlogEntries checks an entry's shape, truncation and redaction.
func TestSlowlogEntries(t *testing.T) {
	s := startServer(t)
	rdb := newClient(t, s)
	ctx := context.Background()
	rdb.ConfigSet(ctx, "slowlog-log-slower-than", "0")
	rdb.SlowLogReset(ctx)
	rdb.Do(ctx, "client", "setname", "slowpoke")
	args := []any{"rpush", "list"}
	for i := 0; i < 40; i++ {
		args = append(args, strings.Repeat("z", 130))
	}
	rdb.Do(ctx, args...)
	rdb.Do(ctx, "config", "set", "requirepass", "")
	logs, err := rdb.SlowLogGet(ctx, -1).Result()
	if err != nil {
		t.Fatal(err)
	}
	if len(logs) != 4 {
		t.Fatalf("%d entries", len(logs))
	}
	cs := logs[0]
	if strings.Join(cs.Args, " ") != "config set requirepass (redacted)" {
		t.Errorf("config set entry %q", cs.Args)
	}
	e := logs[1]
	if len(e.Args) != 32 || e.Args[31] != "... (11 more arguments)" || e.Args[2] != strings.Repeat("z", 128)+"... (2 more bytes)" {
		t.Errorf("rpush entry %q", e.Args)
	}
	if e.ClientName != "slowpoke" || !strings.HasPrefix(e.ClientAddr, "127.0.0.1:") || e.ID != logs[2].ID+1 {
		t.Errorf("entry %+v", e)
	}
	rdb.ConfigSet(ctx, "slowlog-max-len", "2")
	if n, _ := rdb.Do(ctx, "slowlog", "len").Int(); n != 2 {
		t.Errorf("len after max-len 2: %d", n)
	}
	rdb.ConfigSet(ctx, "slowlog-log-slower-than", "-1")
	rdb.SlowLogReset(ctx)
	rdb.Get(ctx, "x")
	if n, _ := rdb.Do(ctx, "slowlog", "len").Int(); n != 0 {
		t.Errorf("len with -1: %d", n)
	}
}

// TestLatencyMonitor: a slow command becomes a "command" sample, and the
// histogram of a command has Redis's shape.
func TestLatencyMonitor(t *testing.T) {
	s := startServer(t)
	rdb := newClient(t, s)
	ctx := context.Background()
	rdb.ConfigSet(ctx, "latency-monitor-threshold", "5")
	// A script spinning for ~20 ms holds every shard: a "command" event.
	rdb.Eval(ctx, "local t = redis.call('time'); local s = t[1]*1e6+t[2]; repeat t = redis.call('time') until t[1]*1e6+t[2] - s > 20000", nil)
	latest, err := rdb.Do(ctx, "latency", "latest").Slice()
	if err != nil || len(latest) != 1 {
		t.Fatalf("latest %v %v", latest, err)
	}
	row := latest[0].([]any)
	if row[0] != "command" || row[2].(int64) < 20 || row[3].(int64) < 20 {
		t.Errorf("latest %v", row)
	}
	hist, _ := rdb.Do(ctx, "latency", "history", "command").Slice()
	if len(hist) != 1 {
		t.Errorf("history %v", hist)
	}
	graph, err := rdb.Do(ctx, "latency", "graph", "command").Text()
	if err != nil || !strings.HasPrefix(graph, "command - high ") {
		t.Errorf("graph %q %v", graph, err)
	}
	doc, _ := rdb.Do(ctx, "latency", "doctor").Text()
	if !strings.Contains(doc, "1. command: 1 latency spikes") {
		t.Errorf("doctor %q", doc)
	}
	if n, _ := rdb.Do(ctx, "latency", "reset").Int(); n != 1 {
		t.Errorf("reset %d", n)
	}
	rdb.Set(ctx, "a", "1", 0)
	rdb = redis.NewClient(&redis.Options{Addr: s.Addr(), Protocol: 3})
	defer rdb.Close()
	h, err := rdb.Do(ctx, "latency", "histogram", "set", "nosuch").Result()
	if err != nil {
		t.Fatal(err)
	}
	m := h.(map[any]any)["set"].(map[any]any)
	if m["calls"].(int64) != 1 || len(m["histogram_usec"].(map[any]any)) != 1 {
		t.Errorf("histogram %v", h)
	}
	// CONFIG's subcommands under their full names.
	h, _ = rdb.Do(ctx, "latency", "histogram", "config").Result()
	if _, ok := h.(map[any]any)["config|set"]; !ok {
		t.Errorf("histogram config %v", h)
	}
}

// TestMonitorUnixSocket: a Unix socket client shows as unix:<path>, as in
// Redis.
func TestMonitorUnixSocket(t *testing.T) {
	s, path := startUnixServer(t)
	mon := dialRaw(t, s)
	mon.do("MONITOR")
	mon.reply()
	u := dialAddr(t, path)
	u.do("SET", "k", "v")
	u.reply()
	line := mon.reply()[0]
	if !strings.HasSuffix(line, ` [0 unix:`+path+`] "SET" "k" "v"`) {
		t.Errorf("monitor line %q", line)
	}
}

// TestScriptErrorStatsMatchRedis: errors inside and out of scripts count
// as in Redis (an error redis.call got and the script passes on counts
// once; the script's command fails).
func TestScriptErrorStatsMatchRedis(t *testing.T) {
	run := func(addr string) string {
		rdb := redis.NewClient(&redis.Options{Addr: addr, Protocol: 2, PoolSize: 1, DisableIdentity: true})
		defer rdb.Close()
		ctx := context.Background()
		rdb.Set(ctx, "strkey", "v", 0)
		rdb.ConfigResetStat(ctx)
		for _, src := range []string{
			"return redis.error_reply('MY err')",
			"return redis.call('lpush','strkey','x')",
			"return redis.pcall('lpush','strkey','x')",
			"redis.pcall('lpush','strkey','x') return 1",
			"error('boom')",
		} {
			rdb.Eval(ctx, src, nil)
		}
		var out []string
		for _, sec := range []string{"errorstats", "commandstats"} {
			f := infoFields(t, rdb, sec)
			for _, k := range sortedInfoKeys(f) {
				if strings.HasPrefix(k, "errorstat_") || k == "cmdstat_eval" || k == "cmdstat_lpush" {
					out = append(out, k+":"+regexp.MustCompile(`usec=\d+,usec_per_call=[\d.]+,`).ReplaceAllString(f[k], ""))
				}
			}
		}
		return strings.Join(out, "\n")
	}
	ours := run(startServer(t).Addr())
	want := "errorstat_ERR:count=1\nerrorstat_MY:count=1\nerrorstat_WRONGTYPE:count=3\n" +
		"cmdstat_eval:calls=5,rejected_calls=0,failed_calls=4\ncmdstat_lpush:calls=3,rejected_calls=0,failed_calls=3"
	if ours != want {
		t.Errorf("ours:\n%s\nwant:\n%s", ours, want)
	}
	if _, err := exec.LookPath("redis-server"); err == nil {
		if theirs := run(startRedis(t)); theirs != want {
			t.Errorf("redis-server:\n%s", theirs)
		}
	}
}
