package server

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"
)

// rdb-save-incremental-fsync and aof-rewrite-incremental-fsync as Redis
// 7.0 has them: CONFIG GET/SET replies and errors, run against Damselfly
// and redis-server alike.
func TestIncrementalFsyncConfigAgainstRedis(t *testing.T) {
	redisAddr := startRedis(t)
	s := startServer(t, func(c *Config) { c.Save = "" })
	script := [][]any{
		{"CONFIG", "GET", "rdb-save-incremental-fsync"},
		{"CONFIG", "GET", "aof-rewrite-incremental-fsync"},
		{"CONFIG", "SET", "rdb-save-incremental-fsync", "maybe"},
		{"CONFIG", "SET", "rdb-save-incremental-fsync", "1"},
		{"CONFIG", "SET", "rdb-save-incremental-fsync", ""},
		{"CONFIG", "SET", "rdb-save-incremental-fsync", "NO"},
		{"CONFIG", "GET", "rdb-save-incremental-fsync"},
		{"CONFIG", "SET", "aof-rewrite-incremental-fsync", "off"},
		{"CONFIG", "SET", "aof-rewrite-incremental-fsync", "no"},
		{"CONFIG", "GET", "*-incremental-fsync"},
		{"CONFIG", "SET", "rdb-save-incremental-fsync", "Yes", "aof-rewrite-incremental-fsync", "yes"},
		{"CONFIG", "GET", "*-incremental-fsync"},
		{"CONFIG", "SET", "rdb-save-incremental-fsync"},
	}
	compareConfigReplies(t, script, s.Addr(), redisAddr)
	// The config file sets it too (as CONFIG SET would).
	s2 := startServer(t, func(c *Config) { c.Save = "" })
	if err := s2.ApplyConfig("rdb-save-incremental-fsync", "no"); err != nil {
		t.Fatal(err)
	}
	if v := newClient(t, s2).ConfigGet(context.Background(), "rdb-save-incremental-fsync").Val(); v["rdb-save-incremental-fsync"] != "no" {
		t.Fatalf("after the config file's no: %v", v)
	}
}

// compareConfigReplies runs a script of CONFIG commands against Damselfly
// and redis-server and fails unless every reply and error is the same.
func compareConfigReplies(t *testing.T, script [][]any, addr, redisAddr string) {
	t.Helper()
	run := func(addr string) string {
		rc := redis.NewClient(&redis.Options{Addr: addr, Protocol: 2})
		defer rc.Close()
		var out strings.Builder
		for _, cmd := range script {
			v, err := rc.Do(context.Background(), cmd...).Result()
			if m, ok := v.([]any); ok { // CONFIG GET of a pattern: any order
				pairs := make(map[any]any)
				for i := 0; i+1 < len(m); i += 2 {
					pairs[m[i]] = m[i+1]
				}
				v = pairs
			}
			fmt.Fprintf(&out, "%v -> %v %v\n", cmd, v, err)
		}
		return out.String()
	}
	if got, want := run(addr), run(redisAddr); got != want {
		t.Fatalf("Damselfly:\n%s\nredis-server:\n%s", got, want)
	}
}

// TestImmutableConfigAgainstRedis: parameters fixed at start answer CONFIG
// GET and refuse CONFIG SET as redis-server 7.0 does (disable-thp: yes by
// default in both).
func TestImmutableConfigAgainstRedis(t *testing.T) {
	redisAddr := startRedis(t)
	s := startServer(t, func(c *Config) { c.Save = "" })
	compareConfigReplies(t, [][]any{
		{"CONFIG", "GET", "disable-thp"},
		{"CONFIG", "SET", "disable-thp", "no"},
		{"CONFIG", "SET", "disable-thp", "yes"},
		{"CONFIG", "SET", "disable-thp", "maybe"},
		{"CONFIG", "SET", "aclfile", "/tmp/users.acl"},
		{"CONFIG", "SET", "appendfilename", "other.aof"},
		{"CONFIG", "GET", "disable-thp"},
	}, s.Addr(), redisAddr)
}

// TestIncrementalFsyncSaves: with the option on (the dump written back
// window by window) and off, SAVE writes dumps of the same data, which
// redis-check-rdb accepts and redis-server 7.0 loads with the same DEBUG
// DIGEST; the same for native snapshots (reloaded by Damselfly) and the
// AOF base written by BGREWRITEAOF (aof-rewrite-incremental-fsync). The
// data spans several writeback windows.
func TestIncrementalFsyncSaves(t *testing.T) {
	needBin(t, "redis-server", "redis-check-rdb")
	ctx := context.Background()
	fill := func(rc *redis.Client) {
		big := strings.Repeat("0123456789abcdef", 300<<10/16)
		for i := range 30 { // 9 MB: more than two windows
			if err := rc.Set(ctx, fmt.Sprint("big", i), fmt.Sprint(i)+big, 0).Err(); err != nil {
				t.Fatal(err)
			}
		}
		if err := rc.Do(ctx, "DEBUG", "POPULATE", "5000").Err(); err != nil {
			t.Fatal(err)
		}
		rc.HSet(ctx, "h", "f", "v", "g", "w")
		rc.ZAdd(ctx, "z", redis.Z{Score: 1.5, Member: "m"})
	}
	for _, format := range []string{"rdb", "native"} {
		for _, on := range []string{"yes", "no"} {
			t.Run(format+"/"+on, func(t *testing.T) {
				dir := t.TempDir()
				s := startServer(t, func(c *Config) {
					c.Dir, c.Save = dir, ""
					if format == "native" {
						c.DBFormat, c.DBCompression = "native", "s2"
					}
				})
				rc := newClient(t, s)
				if err := rc.ConfigSet(ctx, "rdb-save-incremental-fsync", on).Err(); err != nil {
					t.Fatal(err)
				}
				fill(rc)
				want := digestOf(t, rc)
				if err := rc.Save(ctx).Err(); err != nil {
					t.Fatal(err)
				}
				s.Close()
				path := filepath.Join(dir, "dump.rdb")
				if format == "rdb" {
					if out, err := exec.Command("redis-check-rdb", path).CombinedOutput(); err != nil {
						t.Fatalf("redis-check-rdb: %v\n%s", err, out)
					}
					addr := startRedis(t, "--dir", dir, "--dbfilename", "dump.rdb", "--enable-debug-command", "yes")
					if got := digestOf(t, redis.NewClient(&redis.Options{Addr: addr, Protocol: 2})); got != want {
						t.Fatalf("redis-server loaded digest %s, want %s", got, want)
					}
				}
				s2 := startServer(t, func(c *Config) { c.Dir, c.Save = dir, "" })
				if err := s2.LoadDump(); err != nil {
					t.Fatal(err)
				}
				if got := digestOf(t, newClient(t, s2)); got != want {
					t.Fatalf("reloaded digest %s, want %s", got, want)
				}
			})
		}
	}
	for _, on := range []string{"yes", "no"} {
		t.Run("aof/"+on, func(t *testing.T) {
			dir := t.TempDir()
			s := startServer(t, aofOn(dir, "everysec"), func(c *Config) { c.Save = "" })
			rc := newClient(t, s)
			if err := rc.ConfigSet(ctx, "aof-rewrite-incremental-fsync", on).Err(); err != nil {
				t.Fatal(err)
			}
			fill(rc)
			if err := rc.Do(ctx, "BGREWRITEAOF").Err(); err != nil {
				t.Fatal(err)
			}
			waitRewrite(t, rc)
			want := digestOf(t, rc)
			s.Close()
			bases, _ := filepath.Glob(filepath.Join(dir, "appendonlydir", "*.base.rdb"))
			if len(bases) != 1 {
				t.Fatalf("base files %v", bases)
			}
			if st, err := os.Stat(bases[0]); err != nil || st.Size() < 8<<20 {
				t.Fatalf("base %v: %v", st, err)
			}
			s2 := startServer(t, aofOn(dir, "everysec"))
			if got := digestOf(t, newClient(t, s2)); got != want {
				t.Fatalf("digest after reload %s, want %s", got, want)
			}
		})
	}
}
