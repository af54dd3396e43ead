package server

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/damselflydb/damselfly/snapshot"
)

// TestDBDirsStriping: with --dbdirs a native SAVE spreads its shard files
// round-robin over the directories, the summary names where each lives,
// CONFIG GET/SET dbdirs read and change the list, and a restart with
// another shard count loads every key and the FUNCTION library back. A
// missing or corrupt stripe file fails the load naming its path (and the
// offset), and nothing is kept.
func TestDBDirsStriping(t *testing.T) {
	ctx := context.Background()
	dir, d1, d2 := t.TempDir(), t.TempDir(), t.TempDir()
	cfg := func(c *Config) {
		c.Dir, c.DBFormat, c.DBDirs, c.Shards = dir, "native", []string{d1, d2}, 4
	}
	s := startServer(t, cfg)
	rc := newClient(t, s)
	if err := rc.Do(ctx, "DEBUG", "POPULATE", 20000, "key", 100).Err(); err != nil {
		t.Fatal(err)
	}
	lib := "#!lua name=stripelib\nredis.register_function('stripef', function() return 7 end)"
	if err := rc.FunctionLoad(ctx, lib).Err(); err != nil {
		t.Fatal(err)
	}
	if got := rc.ConfigGet(ctx, "dbdirs").Val()["dbdirs"]; got != d1+","+d2 {
		t.Fatalf("CONFIG GET dbdirs = %q", got)
	}
	if err := rc.Save(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "dump.rdb")
	sum, err := snapshot.ReadSummary(path)
	if err != nil {
		t.Fatal(err)
	}
	for i, f := range sum.Files {
		want := []string{d1, d2}[i%2]
		if f.Dir != want {
			t.Errorf("shard file %d in %q, want %q", i, f.Dir, want)
		}
		if _, err := os.Stat(filepath.Join(want, f.Name)); err != nil {
			t.Error(err)
		}
	}
	// A second save replaces the first's stripe files, and leaves another
	// server's alone.
	other := filepath.Join(d1, "dump.rdb.00000000.x.0.dfs")
	os.WriteFile(other, []byte("not ours"), 0o644)
	if err := rc.Save(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{d1, d2} {
		if m, _ := filepath.Glob(filepath.Join(d, "*.dfs")); len(m) != 2+boolInt(d == d1) {
			t.Errorf("%s holds %v after a second save", d, m)
		}
	}
	if _, err := os.Stat(other); err != nil {
		t.Errorf("another server's stripe file was removed: %v", err)
	}
	// CONFIG SET checks the directories.
	if err := rc.ConfigSet(ctx, "dbdirs", filepath.Join(d1, "missing")).Err(); err == nil {
		t.Error("CONFIG SET dbdirs accepted a missing directory")
	}
	s.Close()

	s2 := startServer(t, func(c *Config) { cfg(c); c.Shards = 3 })
	if err := s2.LoadDump(); err != nil {
		t.Fatal(err)
	}
	rc2 := newClient(t, s2)
	if n := rc2.DBSize(ctx).Val(); n != 20000 {
		t.Fatalf("%d keys after loading the striped dump, want 20000", n)
	}
	if v := rc2.FCall(ctx, "stripef", nil).Val(); v != int64(7) {
		t.Errorf("FCALL after loading: %v", v)
	}
	s2.Close()

	sum, _ = snapshot.ReadSummary(path)
	victim := filepath.Join(sum.Files[1].Dir, sum.Files[1].Name)
	orig, _ := os.ReadFile(victim)
	for _, c := range []struct {
		name, want string
		mut        func()
	}{
		{"missing", "no such file", func() { os.Remove(victim) }},
		{"corrupt", "offset", func() {
			b := append([]byte(nil), orig...)
			b[len(b)/2] ^= 0x20
			os.WriteFile(victim, b, 0o644)
		}},
	} {
		c.mut()
		s3 := startServer(t, cfg)
		err := s3.LoadDump()
		if err == nil || !strings.Contains(err.Error(), victim) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s stripe file: load error %v, want one naming %s and %q", c.name, err, victim, c.want)
		}
		if n := newClient(t, s3).DBSize(ctx).Val(); n != 0 {
			t.Errorf("%s stripe file: %d keys kept", c.name, n)
		}
		s3.Close()
		os.WriteFile(victim, orig, 0o644)
	}
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}
