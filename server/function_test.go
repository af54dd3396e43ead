package server

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"
)

const testLib = "#!lua name=plib\nredis.register_function('bump', function(keys) return redis.call('incr', keys[1]) end)\n" +
	"redis.register_function{function_name='look', callback=function(keys) return redis.call('get', keys[1]) end, flags={'no-writes'}, description='reads'}"

func fcallBump(t *testing.T, c *redis.Client, want int64) {
	t.Helper()
	if v, err := c.FCall(context.Background(), "bump", []string{"n"}).Int64(); err != nil || v != want {
		t.Fatalf("FCALL bump = %v, %v; want %d", v, err, want)
	}
}

// A FUNCTION library survives DEBUG RELOAD and a restart (issue 17).
func TestFunctionPersistence(t *testing.T) {
	dir := t.TempDir()
	s := startServer(t, func(c *Config) { c.Dir = dir })
	rc := newClient(t, s)
	ctx := context.Background()
	if err := rc.FunctionLoad(ctx, testLib).Err(); err != nil {
		t.Fatal(err)
	}
	fcallBump(t, rc, 1)
	if err := rc.Do(ctx, "DEBUG", "RELOAD").Err(); err != nil {
		t.Fatal(err)
	}
	fcallBump(t, rc, 2)
	if err := rc.Save(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	s.Close()

	s2 := New(Config{Dir: dir, DBFilename: "dump.rdb", Shards: 4, Logger: s.log})
	if err := s2.LoadDump(); err != nil {
		t.Fatal(err)
	}
	if err := s2.Start(Config{Bind: "127.0.0.1"}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s2.Close() })
	rc2 := newClient(t, s2)
	fcallBump(t, rc2, 3)
	libs, err := rc2.FunctionList(ctx, redis.FunctionListQuery{WithCode: true}).Result()
	if err != nil || len(libs) != 1 || libs[0].Code != testLib || len(libs[0].Functions) != 2 {
		t.Fatalf("FUNCTION LIST after restart: %+v, %v", libs, err)
	}
}

// Libraries in a dump written by redis-server load, and FUNCTION DUMP
// payloads go both ways between Redis and Damselfly.
func TestFunctionInteropWithRedis(t *testing.T) {
	ctx := context.Background()
	rdir := t.TempDir()
	raddr := startRedis(t, "--dir", rdir)
	r := redis.NewClient(&redis.Options{Addr: raddr})
	t.Cleanup(func() { r.Close() })
	// A long body, so that Redis compresses it (LZF) in dump and payload.
	big := testLib + "\n-- " + strings.Repeat("padding padding ", 40)
	if err := r.FunctionLoad(ctx, big).Err(); err != nil {
		t.Fatal(err)
	}
	r.Set(ctx, "n", "41", 0)
	if err := r.Save(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	payload, err := r.FunctionDump(ctx).Result()
	if err != nil {
		t.Fatal(err)
	}

	dir := t.TempDir()
	data, err := os.ReadFile(filepath.Join(rdir, "dump.rdb"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "dump.rdb"), data, 0o644); err != nil {
		t.Fatal(err)
	}
	s := New(Config{Dir: dir, DBFilename: "dump.rdb", Shards: 4})
	if err := s.LoadDump(); err != nil {
		t.Fatal(err)
	}
	if err := s.Start(Config{Bind: "127.0.0.1"}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	c := newClient(t, s)
	fcallBump(t, c, 42)

	// Redis's payload into Damselfly; Damselfly's into Redis.
	if err := c.FunctionFlush(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	if err := c.FunctionRestore(ctx, payload).Err(); err != nil {
		t.Fatal(err)
	}
	fcallBump(t, c, 43)
	if err := c.FunctionRestore(ctx, payload).Err(); err == nil || err.Error() != "ERR Library plib already exists" {
		t.Fatalf("second FUNCTION RESTORE (APPEND): %v", err)
	}
	if err := c.Do(ctx, "FUNCTION", "RESTORE", payload, "REPLACE").Err(); err != nil {
		t.Fatal(err)
	}
	ours, err := c.FunctionDump(ctx).Result()
	if err != nil {
		t.Fatal(err)
	}
	if err := r.FunctionFlush(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	if err := r.FunctionRestore(ctx, ours).Err(); err != nil {
		t.Fatalf("redis-server refuses Damselfly's FUNCTION DUMP: %v", err)
	}
	if v, err := r.FCall(ctx, "bump", []string{"n"}).Int64(); err != nil || v != 42 {
		t.Fatalf("FCALL on redis-server after RESTORE = %v, %v", v, err)
	}
	// A corrupt payload is refused and changes nothing.
	bad := []byte(ours)
	bad[3] ^= 0xff
	if err := c.FunctionRestore(ctx, string(bad)).Err(); err == nil || err.Error() != "ERR DUMP payload version or checksum are wrong" {
		t.Fatalf("corrupt payload: %v", err)
	}
	fcallBump(t, c, 44)
}

// Past maxmemory, scripts may not write unless flagged allow-oom (Redis 7).
func TestScriptOOM(t *testing.T) {
	s := startServer(t, func(c *Config) { c.MaxMemory = 1 })
	r := dialRaw(t, s)
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"EVAL", "return redis.call('set','k','v')", "0"}, "-OOM command not allowed when used memory > 'maxmemory'. script: "},
		{[]string{"EVAL", "#!lua\nreturn redis.call('set','k','v')", "0"}, "-OOM allow-oom flag is not set on the script, can not run it when used memory > 'maxmemory'"},
		{[]string{"EVAL", "#!lua flags=allow-oom\nreturn redis.call('set','k','v')", "0"}, "+OK"},
		{[]string{"EVAL", "#!lua flags=no-writes\nreturn redis.call('get','k')", "0"}, "$1"},
		{[]string{"FUNCTION", "LOAD", "#!lua name=o\nredis.register_function('w', function() return redis.call('set','k','w') end)"}, "-OOM command not allowed when used memory > 'maxmemory'."},
	} {
		r.do(c.args...)
		if got := r.reply(); !strings.HasPrefix(got[0], c.want) {
			t.Errorf("%q: got %q, want %q", c.args, got, c.want)
		}
	}
}

// INFO memory counts scripts, functions and libraries as Redis 7.0 does.
func TestInfoScripting(t *testing.T) {
	s := startServer(t)
	c := newClient(t, s)
	ctx := context.Background()
	c.Eval(ctx, "return 1", nil)
	c.Eval(ctx, "return 2", nil)
	if err := c.FunctionLoad(ctx, testLib).Err(); err != nil {
		t.Fatal(err)
	}
	info := c.Info(ctx, "memory").Val()
	for _, want := range []string{"number_of_cached_scripts:2\r\n", "number_of_functions:2\r\n", "number_of_libraries:1\r\n"} {
		if !strings.Contains(info, want) {
			t.Errorf("INFO memory lacks %q", want)
		}
	}
}
