package server

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/damselflydb/damselfly/aof"
)

// aofOn turns the AOF on in a test server's config.
func aofOn(dir, fsync string) func(*Config) {
	return func(c *Config) {
		c.Dir = dir
		c.AOF = AOFConfig{Enabled: true, Fsync: fsync}
	}
}

func digestOf(t *testing.T, rc *redis.Client) string {
	t.Helper()
	d, err := rc.Do(context.Background(), "DEBUG", "DIGEST").Text()
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// aofWorkload writes every kind of value, with the commands whose logged
// form differs from what the client sent (EXPIRE, SPOP, INCRBYFLOAT,
// scripts, MULTI/EXEC), over several databases.
func aofWorkload(t *testing.T, rc *redis.Client, tag string) {
	t.Helper()
	ctx := context.Background()
	for db := 0; db < 3; db++ {
		c := rc.Conn()
		must := func(cmd redis.Cmder) {
			if err := cmd.Err(); err != nil && err != redis.Nil {
				t.Fatalf("%v: %v", cmd.Args(), err)
			}
		}
		must(c.Select(ctx, db))
		for i := 0; i < 50; i++ {
			must(c.Set(ctx, fmt.Sprintf("%s:s%d", tag, i), strings.Repeat("v", i), 0))
		}
		must(c.Set(ctx, tag+":ttl", "x", time.Hour))
		must(c.Expire(ctx, tag+":s1", 90*time.Minute))
		must(c.IncrByFloat(ctx, tag+":f", 1.25))
		must(c.RPush(ctx, tag+":l", "a", "b", "c", "d"))
		must(c.LPop(ctx, tag+":l"))
		must(c.HSet(ctx, tag+":h", "f1", "v1", "f2", "v2"))
		must(c.SAdd(ctx, tag+":set", "m1", "m2", "m3", "m4"))
		must(c.SPop(ctx, tag+":set"))
		must(c.ZAdd(ctx, tag+":z", redis.Z{Score: 1.5, Member: "a"}, redis.Z{Score: 2, Member: "b"}))
		must(c.XAdd(ctx, &redis.XAddArgs{Stream: tag + ":x", Values: []string{"k", "v"}}))
		must(c.Eval(ctx, "redis.call('set', KEYS[1], 'fromlua'); return redis.call('incr', KEYS[2])", []string{tag + ":lua", tag + ":ctr"}))
		_, err := c.TxPipelined(ctx, func(p redis.Pipeliner) error {
			p.Incr(ctx, tag+":ctr")
			p.Set(ctx, tag+":tx", "1", 0)
			p.Del(ctx, tag+":s2")
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		c.Close()
	}
}

// TestAOFRestart: the dataset survives restarts from the AOF alone (no
// dump), before and after BGREWRITEAOF, and INFO shows the AOF.
func TestAOFRestart(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	s := startServer(t, aofOn(dir, "always"), func(c *Config) { c.Save = "" })
	rc := newClient(t, s)
	aofWorkload(t, rc, "a")
	want := digestOf(t, rc)
	s.Close()
	if _, err := os.Stat(filepath.Join(dir, "dump.rdb")); err == nil {
		t.Fatal("a dump was written; the test must restart from the AOF alone")
	}

	s2 := startServer(t, aofOn(dir, "everysec"))
	rc2 := newClient(t, s2)
	if got := digestOf(t, rc2); got != want {
		t.Fatalf("digest after restart %s, want %s", got, want)
	}
	if err := rc2.Do(ctx, "BGREWRITEAOF").Err(); err != nil {
		t.Fatal(err)
	}
	aofWorkload(t, rc2, "b") // concurrent with the rewrite
	waitRewrite(t, rc2)
	info := rc2.Info(ctx, "persistence").Val()
	for _, f := range []string{"aof_enabled:1", "aof_last_bgrewrite_status:ok", "aof_last_write_status:ok", "aof_rewrite_in_progress:0"} {
		if !strings.Contains(info, f+"\r\n") {
			t.Errorf("INFO persistence lacks %q:\n%s", f, info)
		}
	}
	aofWorkload(t, rc2, "c")
	want = digestOf(t, rc2)
	m, err := aof.ReadManifest(filepath.Join(dir, "appendonlydir"), "appendonly.aof")
	if err != nil || m == nil || m.Base == nil || len(m.Incrs) != 1 || len(m.History) != 0 {
		t.Fatalf("manifest after rewrite: %+v %v", m, err)
	}
	s2.Close()
	entries, _ := os.ReadDir(filepath.Join(dir, "appendonlydir"))
	if len(entries) != 3 {
		t.Errorf("AOF directory holds %d files after a rewrite, want base, incr and manifest", len(entries))
	}
	s3 := startServer(t, aofOn(dir, "no"))
	if got := digestOf(t, newClient(t, s3)); got != want {
		t.Fatalf("digest after rewrite and restart %s, want %s", got, want)
	}
}

func waitRewrite(t *testing.T, rc *redis.Client) {
	t.Helper()
	for i := 0; i < 500; i++ {
		info := rc.Info(context.Background(), "persistence").Val()
		if strings.Contains(info, "aof_rewrite_in_progress:0\r\n") && strings.Contains(info, "aof_rewrites:") &&
			!strings.Contains(info, "aof_rewrite_scheduled:1") {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatal("rewrite did not finish")
}

// TestAOFConfigSetAppendonly: CONFIG SET appendonly yes starts a rewrite
// holding the data written before; no stops logging.
func TestAOFConfigSetAppendonly(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	s := startServer(t, func(c *Config) { c.Dir = dir; c.Save = "" })
	rc := newClient(t, s)
	aofWorkload(t, rc, "pre")
	if v := rc.ConfigGet(ctx, "appendonly").Val()["appendonly"]; v != "no" {
		t.Fatalf("appendonly %q", v)
	}
	if err := rc.Do(ctx, "WAITAOF", "1", "0", "0").Err(); err == nil ||
		err.Error() != "ERR WAITAOF cannot be used when numlocal is set but appendonly is disabled." {
		t.Fatalf("WAITAOF with appendonly no: %v", err)
	}
	if err := rc.ConfigSet(ctx, "appendonly", "yes").Err(); err != nil {
		t.Fatal(err)
	}
	aofWorkload(t, rc, "post")
	waitRewrite(t, rc)
	if err := rc.ConfigSet(ctx, "appendfsync", "always").Err(); err != nil {
		t.Fatal(err)
	}
	if err := rc.ConfigSet(ctx, "appendfsync", "sometimes").Err(); err == nil {
		t.Fatal("appendfsync sometimes accepted")
	}
	rc.Set(ctx, "last", "1", 0)
	if v, err := rc.Do(ctx, "WAITAOF", "1", "0", "0").Slice(); err != nil || fmt.Sprint(v) != "[1 0]" {
		t.Fatalf("WAITAOF 1 0 0: %v %v", v, err)
	}
	if v, err := rc.Do(ctx, "WAITAOF", "0", "1", "50").Slice(); err != nil || fmt.Sprint(v) != "[1 0]" {
		t.Fatalf("WAITAOF 0 1 50: %v %v", v, err)
	}
	want := digestOf(t, rc)
	s.Close()
	s2 := startServer(t, aofOn(dir, "everysec"))
	if got := digestOf(t, newClient(t, s2)); got != want {
		t.Fatalf("digest %s, want %s", got, want)
	}
}

func needBin(t *testing.T, bins ...string) {
	t.Helper()
	for _, b := range bins {
		if _, err := exec.LookPath(b); err != nil {
			t.Skipf("%s not installed (apt-get install -y redis-server redis-tools); skipping", b)
		}
	}
}

// TestAOFRedisInterop: redis-check-aof accepts our directory and
// redis-server 7.0 loads it with an equal DEBUG DIGEST; we load the
// directory redis-server wrote (base, several incr files) with an equal
// digest too.
func TestAOFRedisInterop(t *testing.T) {
	needBin(t, "redis-server", "redis-check-aof")
	ctx := context.Background()
	dir := t.TempDir()
	s := startServer(t, aofOn(dir, "always"), func(c *Config) { c.Save = "" })
	rc := newClient(t, s)
	aofWorkload(t, rc, "a")
	rc.Do(ctx, "BGREWRITEAOF")
	waitRewrite(t, rc)
	aofWorkload(t, rc, "b")
	want := digestOf(t, rc)
	s.Close()
	out, err := exec.Command("redis-check-aof", filepath.Join(dir, "appendonlydir", "appendonly.aof.manifest")).CombinedOutput()
	if err != nil || !strings.Contains(string(out), "All AOF files and manifest are valid") {
		t.Fatalf("redis-check-aof: %v\n%s", err, out)
	}
	addr := startRedisOn(t, dir)
	r := redis.NewClient(&redis.Options{Addr: addr})
	defer r.Close()
	if got := digestOf(t, r); got != want {
		t.Fatalf("redis-server's digest of our AOF %s, want %s", got, want)
	}
	// Now redis-server's own AOF: more writes, a rewrite, more writes.
	aofWorkload(t, r, "r1")
	if err := r.Do(ctx, "BGREWRITEAOF").Err(); err != nil {
		t.Fatal(err)
	}
	waitRewrite(t, r)
	aofWorkload(t, r, "r2")
	want = digestOf(t, r)
	if err := r.Do(ctx, "SHUTDOWN", "NOSAVE").Err(); err != nil && !strings.Contains(err.Error(), "EOF") {
		t.Log("SHUTDOWN NOSAVE:", err)
	}
	time.Sleep(200 * time.Millisecond)
	s2 := startServer(t, aofOn(dir, "everysec"))
	if got := digestOf(t, newClient(t, s2)); got != want {
		t.Fatalf("our digest of redis-server's AOF %s, want %s", got, want)
	}
}

// startRedisOn starts redis-server with appendonly yes on dir.
func startRedisOn(t *testing.T, dir string) string {
	t.Helper()
	return startRedisDir(t, dir, "--appendonly", "yes", "--enable-debug-command", "yes")
}

// startRedisDir is startRedis on a given directory.
func startRedisDir(t *testing.T, dir string, extra ...string) string {
	t.Helper()
	addr := startRedis(t, append([]string{"--dir", dir}, extra...)...)
	return addr
}

// TestAOFToggleDuringRewrite: turning appendonly off while its first
// rewrite runs, then on again, leaves one consistent AOF.
func TestAOFToggleDuringRewrite(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	s := startServer(t, func(c *Config) { c.Dir = dir; c.Save = "" })
	rc := newClient(t, s)
	if err := rc.Do(ctx, "DEBUG", "POPULATE", "5000").Err(); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 5; i++ {
		rc.ConfigSet(ctx, "appendonly", "yes")
		rc.Set(ctx, fmt.Sprint("t", i), i, 0)
		rc.ConfigSet(ctx, "appendonly", "no")
	}
	rc.ConfigSet(ctx, "appendonly", "yes")
	rc.Set(ctx, "final", "1", 0)
	waitRewrite(t, rc)
	want := digestOf(t, rc)
	s.Close()
	s2 := startServer(t, aofOn(dir, "everysec"))
	if got := digestOf(t, newClient(t, s2)); got != want {
		t.Fatalf("digest %s, want %s", got, want)
	}
}
