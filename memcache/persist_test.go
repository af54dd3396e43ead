package memcache_test

import (
	"context"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/bradfitz/gomemcache/memcache"
	"github.com/redis/go-redis/v9"

	"github.com/damselflydb/damselfly/server"
)

// startIn runs the whole server with both protocols on dir, loading its
// dump first when load is set.
func startIn(t *testing.T, dir string, load bool) *server.Server {
	t.Helper()
	cfg := server.Config{Port: 0, Bind: "127.0.0.1", Shards: 4, DBNum: 16, Dir: dir, DBFilename: "dump.rdb",
		EnableDebugCommand: "local", MemcachedPort: -1, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}
	s := server.New(cfg)
	if load {
		if err := s.LoadDump(); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Start(cfg); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// wantItems checks the memcached items mcItems wrote, and that cas works on
// a loaded item (it gets a fresh CAS unique).
func wantItems(t *testing.T, s *server.Server, when string) {
	t.Helper()
	c := memcache.New(s.MemcachedAddr())
	for key, flags := range map[string]uint32{"k": 42, "zero": 0, "max": 4294967295, "ttl": 7} {
		it, err := c.Get(key)
		if err != nil || it.Flags != flags || string(it.Value) != "v-"+key {
			t.Fatalf("%s: get %s = %+v, %v; want flags %d", when, key, it, err, flags)
		}
	}
	it, err := c.Get("k")
	if err != nil {
		t.Fatal(err)
	}
	it.Value = []byte("v-k")
	if err := c.CompareAndSwap(it); err != nil {
		t.Fatalf("%s: cas on a loaded item: %v", when, err)
	}
	if it, err := c.Get("k"); err != nil || it.Flags != 42 {
		t.Fatalf("%s: after cas: %+v, %v", when, it, err)
	}
}

func TestFlagsSurviveSaveRestartAndReload(t *testing.T) {
	dir := t.TempDir()
	s := startIn(t, dir, false)
	c := memcache.New(s.MemcachedAddr())
	for key, flags := range map[string]uint32{"k": 42, "zero": 0, "max": 4294967295} {
		if err := c.Set(&memcache.Item{Key: key, Value: []byte("v-" + key), Flags: flags}); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.Set(&memcache.Item{Key: "ttl", Value: []byte("v-ttl"), Flags: 7, Expiration: 3600}); err != nil {
		t.Fatal(err)
	}
	rc := redis.NewClient(&redis.Options{Addr: s.Addr(), Protocol: 2})
	defer rc.Close()
	ctx := context.Background()
	if err := rc.Set(ctx, "resp", "x", 0).Err(); err != nil {
		t.Fatal(err)
	}
	if err := rc.Save(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	s.Close()

	s2 := startIn(t, dir, true)
	wantItems(t, s2, "after restart")
	rc2 := redis.NewClient(&redis.Options{Addr: s2.Addr(), Protocol: 2})
	defer rc2.Close()
	if ttl := rc2.PTTL(ctx, "ttl").Val(); ttl <= 0 || ttl > time.Hour {
		t.Fatalf("PTTL ttl = %v", ttl)
	}
	if it, err := memcache.New(s2.MemcachedAddr()).Get("resp"); err != nil || it.Flags != 0 || string(it.Value) != "x" {
		t.Fatalf("RESP key via memcached: %+v, %v", it, err)
	}
	if err := rc2.Do(ctx, "DEBUG", "RELOAD").Err(); err != nil {
		t.Fatal(err)
	}
	wantItems(t, s2, "after DEBUG RELOAD")

	// BGSAVE then a restart.
	if err := rc2.BgSave(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		info := rc2.Info(ctx, "persistence").Val()
		if strings.Contains(info, "rdb_bgsave_in_progress:0") && strings.Contains(info, "rdb_last_bgsave_status:ok") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("BGSAVE did not finish:\n%s", info)
		}
	}
	s2.Close()
	wantItems(t, startIn(t, dir, true), "after BGSAVE and restart")
}
