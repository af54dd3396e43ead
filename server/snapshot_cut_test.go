package server

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// scriptWrites returns every write command of the testdata scripts, in
// order, leaving out those that may block (a blocking pop would wait for
// its timeout; XREADGROUP only with BLOCK).
func scriptWrites(t *testing.T, s *Server) [][]any {
	t.Helper()
	files, _ := filepath.Glob("testdata/*.txt")
	var out [][]any
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, line := range strings.Split(string(data), "\n") {
			if !strings.HasPrefix(line, "> ") {
				continue
			}
			args, ok := splitArgs([]byte(line[2:]), nil)
			if !ok || len(args) == 0 {
				continue
			}
			cmd := s.cmds[strings.ToLower(string(args[0]))]
			// XREADGROUP without BLOCK does not block: it stays in.
			if cmd == nil || !cmd.write || cmd.mayBlock || cmd.blockOption && blockOptionGiven(args) {
				continue
			}
			a := make([]any, len(args))
			for i, b := range args {
				a[i] = string(b)
			}
			out = append(out, a)
		}
	}
	return out
}

// TestSnapshotCutUnderEveryWrite: every write command the testdata scripts
// use runs while a BGSAVE is in progress (stretched with
// rdb-key-save-delay), and the dump, loaded into a fresh server, equals the
// dataset at the cut (DEBUG DIGEST). A command that changed a value without
// the snapshot's pre-change hook would put its new value in the dump.
func TestSnapshotCutUnderEveryWrite(t *testing.T) {
	dir := t.TempDir()
	s := startServer(t, func(c *Config) { c.Dir = dir; c.Shards = 4 })
	ctx := context.Background()
	rdb := redis.NewClient(&redis.Options{Addr: s.Addr(), Protocol: 2, PoolSize: 1})
	defer rdb.Close()
	writes := scriptWrites(t, s)
	if len(writes) < 500 {
		t.Fatalf("only %d write commands in testdata", len(writes))
	}
	// The dataset at the cut: every write once, spread over the shards,
	// then without TTLs so that it cannot change by itself before the
	// comparison.
	for _, w := range writes {
		rdb.Do(ctx, w...)
	}
	if err := rdb.Do(ctx, "DEBUG", "POPULATE", 8000, "pop", 10).Err(); err != nil {
		t.Fatal(err)
	}
	for db := 0; db < 16; db++ {
		rdb.Do(ctx, "SELECT", db)
		iter := rdb.Scan(ctx, 0, "*", 1000).Iterator()
		for iter.Next(ctx) {
			rdb.Persist(ctx, iter.Val())
		}
	}
	rdb.Do(ctx, "SELECT", 0)
	atCut, err := rdb.Do(ctx, "DEBUG", "DIGEST").Text()
	if err != nil {
		t.Fatal(err)
	}

	rdb.ConfigSet(ctx, "rdb-key-save-delay", "2000")
	if err := rdb.BgSave(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	for _, w := range writes {
		rdb.Do(ctx, w...)
	}
	if !strings.Contains(rdb.Info(ctx, "persistence").Val(), "rdb_bgsave_in_progress:1") {
		t.Fatal("the BGSAVE finished before the writes did: raise rdb-key-save-delay")
	}
	after, _ := rdb.Do(ctx, "DEBUG", "DIGEST").Text()
	if after == atCut {
		t.Fatal("the writes changed nothing: the test proves nothing")
	}
	rdb.ConfigSet(ctx, "rdb-key-save-delay", "0")
	for deadline := time.Now().Add(60 * time.Second); strings.Contains(rdb.Info(ctx, "persistence").Val(), "rdb_bgsave_in_progress:1"); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("BGSAVE did not finish")
		}
	}
	if !strings.Contains(rdb.Info(ctx, "persistence").Val(), "rdb_last_bgsave_status:ok") {
		t.Fatal("BGSAVE failed")
	}

	fresh := startServer(t, func(c *Config) { c.Dir = dir; c.Shards = 3 })
	if err := fresh.LoadDump(); err != nil {
		t.Fatal(err)
	}
	fc := newClient(t, fresh)
	got, err := fc.Do(ctx, "DEBUG", "DIGEST").Text()
	if err != nil {
		t.Fatal(err)
	}
	if got != atCut {
		t.Fatalf("the dump's digest %s differs from the dataset's at the cut %s (%d writes ran during the save)", got, atCut, len(writes))
	}
	t.Logf("%d write commands ran during the save", len(writes))
}

// TestBgsaveCutsWhenItRuns: the dump holds the dataset at the instant
// BGSAVE ran, as with Redis's fork, even when the next commands overwrite
// or flush everything while the save is still writing, and when the
// commands after it come in the same pipeline while it prepares a warm
// reserve for its big value (snapshot/reserve.go, off the event loop);
// inside MULTI/EXEC, exactly the writes queued before BGSAVE.
func TestBgsaveCutsWhenItRuns(t *testing.T) {
	dir := t.TempDir()
	s := startServer(t, func(c *Config) { c.Dir = dir })
	ctx := context.Background()
	rdb := redis.NewClient(&redis.Options{Addr: s.Addr(), Protocol: 2, PoolSize: 1})
	defer rdb.Close()
	rdb.Do(ctx, "DEBUG", "POPULATE", 2000, "pop", 10)
	rdb.ConfigSet(ctx, "rdb-key-save-delay", "1000")
	wait := func() {
		t.Helper()
		rdb.ConfigSet(ctx, "rdb-key-save-delay", "0")
		for deadline := time.Now().Add(30 * time.Second); strings.Contains(rdb.Info(ctx, "persistence").Val(), "rdb_bgsave_in_progress:1"); time.Sleep(10 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatal("BGSAVE did not finish")
			}
		}
	}
	loaded := func() *redis.Client {
		t.Helper()
		fresh := startServer(t, func(c *Config) { c.Dir = dir })
		if err := fresh.LoadDump(); err != nil {
			t.Fatal(err)
		}
		return newClient(t, fresh)
	}

	rdb.Set(ctx, "bigval", strings.Repeat("b", 3<<20), 0)
	cmds, err := rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		p.Set(ctx, "k", "1", 0)
		p.BgSave(ctx)
		p.Set(ctx, "k", "2", 0)
		p.Set(ctx, "bigval", "small now", 0)
		p.Set(ctx, "after", "x", 0)
		p.FlushAll(ctx)
		return nil
	})
	if err != nil || cmds[1].(*redis.StatusCmd).Val() != "Background saving started" {
		t.Fatalf("pipeline: %v %v", err, cmds)
	}
	wait()
	if st := s.persist.lastStats.Load(); st == nil || st.Reserve != 1 {
		t.Errorf("stats %+v: want a reserve of one chunk for the big value", st)
	}
	fc := loaded()
	if got := fc.Get(ctx, "k").Val(); got != "1" {
		t.Errorf("k in the dump: %q, want the value when BGSAVE ran", got)
	}
	if n := fc.DBSize(ctx).Val(); n != 2002 {
		t.Errorf("the dump holds %d keys, want 2002 (the flush came after BGSAVE)", n)
	}
	if got := fc.StrLen(ctx, "bigval").Val(); got != 3<<20 {
		t.Errorf("bigval in the dump has %d bytes, want its value when BGSAVE ran", got)
	}

	rdb.Do(ctx, "DEBUG", "POPULATE", 2000, "pop", 10)
	rdb.Set(ctx, "bigval", strings.Repeat("b", 3<<20), 0)
	rdb.ConfigSet(ctx, "rdb-key-save-delay", "1000")
	_, err = rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
		p.Set(ctx, "m", "1", 0)
		p.BgSave(ctx)
		p.Set(ctx, "m", "2", 0)
		p.Del(ctx, "pop:1")
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	wait()
	fc = loaded()
	if got := fc.Get(ctx, "m").Val(); got != "1" {
		t.Errorf("m in the dump of a BGSAVE inside MULTI: %q, want 1", got)
	}
	if fc.Exists(ctx, "pop:1").Val() != 1 {
		t.Error("a DEL queued after BGSAVE reached the dump")
	}
	if st := s.persist.lastStats.Load(); st == nil || st.Reserve != 0 {
		t.Errorf("stats %+v: inside EXEC there is no reserve", st)
	}
}

// TestBgsaveClientGoneBeforeReply: a client that sends BGSAVE and closes
// at once, while the save prepares its warm reserve off the event loop,
// still gets its save, and the server goes on.
func TestBgsaveClientGoneBeforeReply(t *testing.T) {
	s := startServer(t, func(c *Config) { c.Dir = t.TempDir() })
	ctx := context.Background()
	rc := newClient(t, s)
	for i := range 8 {
		rc.Set(ctx, fmt.Sprint("big", i), strings.Repeat("x", 4<<20), 0)
	}
	nc, err := net.Dial("tcp", s.Addr())
	if err != nil {
		t.Fatal(err)
	}
	nc.Write([]byte("BGSAVE\r\n"))
	nc.Close()
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		info := rc.Info(ctx, "persistence").Val()
		if strings.Contains(info, "rdb_bgsave_in_progress:0") && strings.Contains(info, "rdb_saves:1") {
			if !strings.Contains(info, "rdb_last_bgsave_status:ok") {
				t.Fatalf("save failed:\n%s", info)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no save:\n%s", info)
		}
	}
	if st := s.persist.lastStats.Load(); st.Reserve == 0 {
		t.Errorf("no reserve for 4 MB values: %+v", st)
	}
	if err := rc.Ping(ctx).Err(); err != nil {
		t.Fatal(err)
	}
}
