package replication_test

import (
	"context"
	"io"
	"log/slog"
	"path/filepath"
	"testing"
	"time"

	"github.com/damselflydb/damselfly/internal/redistest"
	"github.com/damselflydb/damselfly/server"
)

// TestDataCommandsRDBWithRedis: the bitmap, HyperLogLog, GEO and SORT
// workload saved by Damselfly loads in redis-server 7.0 with an equal
// DEBUG DIGEST, and the same workload saved by redis-server loads in
// Damselfly with an equal DEBUG DIGEST (RDB both ways).
func TestDataCommandsRDBWithRedis(t *testing.T) {
	ctx := context.Background()
	t.Run("damselfly-to-redis", func(t *testing.T) {
		dir := t.TempDir()
		d := startServer(t, func(c *server.Config) { c.Dir = dir })
		dc := protocol2(t, d.Addr())
		dataWorkload(t, dc)
		if err := dc.Save(ctx).Err(); err != nil {
			t.Fatal(err)
		}
		want := digest(t, dc)
		r := redistest.Start(t, "", "--save", "", "--appendonly", "no", "--enable-debug-command", "yes",
			"--dir", dir, "--dbfilename", "dump.rdb", "--logfile", filepath.Join(dir, "redis.log"))
		if got := digest(t, protocol2(t, r.Addr)); got != want {
			t.Fatalf("redis-server loaded our RDB to digest %s, ours %s", got, want)
		}
	})
	t.Run("redis-to-damselfly", func(t *testing.T) {
		dir := t.TempDir()
		r := redistest.Start(t, "", "--save", "", "--appendonly", "no", "--enable-debug-command", "yes",
			"--dir", dir, "--dbfilename", "dump.rdb")
		rc := protocol2(t, r.Addr)
		dataWorkload(t, rc)
		if err := rc.Save(ctx).Err(); err != nil {
			t.Fatal(err)
		}
		want := digest(t, rc)
		d := startLoaded(t, dir)
		dc := protocol2(t, d.Addr())
		waitFor(t, 10*time.Second, "the load", func() bool { return info(dc, "persistence")["loading"] == "0" })
		if n := dc.DBSize(ctx).Val(); n == 0 {
			t.Fatalf("nothing loaded from %s", dir)
		}
		if got := digest(t, dc); got != want {
			t.Fatalf("Damselfly loaded redis-server's RDB to digest %s, redis %s", got, want)
		}
	})
}

// startLoaded is startServer that loads dir's dump.rdb as the binary does
// (StartAndLoad).
func startLoaded(t *testing.T, dir string) *server.Server {
	t.Helper()
	cfg := server.Config{Port: 0, Bind: "127.0.0.1", Shards: 4, DBNum: 16, Dir: dir, DBFilename: "dump.rdb", EnableDebugCommand: "local",
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}
	s := server.New(cfg)
	if err := s.StartAndLoad(cfg); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}
