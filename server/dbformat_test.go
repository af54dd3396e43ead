package server

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/damselflydb/damselfly/snapshot"
)

// TestNativeDumpFormat: with --dbformat native, SAVE and BGSAVE write a
// native snapshot that a restart (with another shard count) and DEBUG
// RELOAD load back; a server configured for RDB loads it too (detected),
// and its next save is an RDB again.
func TestNativeDumpFormat(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	native := func(c *Config) { c.Dir, c.DBFormat, c.DBCompression = dir, "native", "zstd" }
	s := startServer(t, native)
	rc := newClient(t, s)
	for i := range 3000 {
		rc.Set(ctx, fmt.Sprint("k", i), fmt.Sprint("v", i), 0)
	}
	rc.HSet(ctx, "h", "f", "v")
	rc.ZAdd(ctx, "z", redis.Z{Score: 1.5, Member: "m"})
	rc.Set(ctx, "ttl", "x", time.Hour)
	if err := rc.Save(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "dump.rdb")
	if ok, err := snapshot.IsNative(path); !ok || err != nil {
		t.Fatalf("SAVE with --dbformat native wrote no native summary: %v", err)
	}
	rc.Set(ctx, "after", "1", 0)
	if err := rc.BgSave(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	waitBgsave(t, rc)
	want := dumpAll(t, s)
	s.Close()

	s2 := startServer(t, func(c *Config) { c.Dir, c.Shards = dir, 3 })
	if err := s2.LoadDump(); err != nil {
		t.Fatal(err)
	}
	compareDumps(t, want, dumpAll(t, s2))
	rc2 := newClient(t, s2)
	if ttl := rc2.TTL(ctx, "ttl").Val(); ttl <= 0 {
		t.Errorf("TTL after loading the native dump: %v", ttl)
	}
	if err := rc2.Do(ctx, "DEBUG", "RELOAD").Err(); err != nil {
		t.Fatal(err)
	}
	compareDumps(t, want, dumpAll(t, s2))
	if ok, _ := snapshot.IsNative(path); ok {
		t.Error("a server configured for RDB saved a native dump")
	}
}

func compareDumps(t *testing.T, want, got map[string]string) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%d keys, want %d", len(got), len(want))
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s: got %.80s want %.80s", k, got[k], v)
		}
	}
}

func waitBgsave(t *testing.T, rc *redis.Client) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		info := rc.Info(context.Background(), "persistence").Val()
		if strings.Contains(info, "rdb_bgsave_in_progress:0\r\n") {
			if !strings.Contains(info, "rdb_last_bgsave_status:ok\r\n") {
				t.Fatalf("BGSAVE failed:\n%s", info)
			}
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("BGSAVE did not finish")
		}
		time.Sleep(10 * time.Millisecond)
	}
}
