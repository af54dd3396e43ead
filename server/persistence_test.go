package server

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/damselflydb/damselfly/shard"
	"github.com/damselflydb/damselfly/shard/types"
	"github.com/damselflydb/damselfly/snapshot/rdb"
)

// dumpAll returns "db key" -> DUMP payload + PEXPIRETIME of every key.
func dumpAll(t *testing.T, s *Server) map[string]string {
	t.Helper()
	ctx := context.Background()
	out := map[string]string{}
	rc := newClient(t, s)
	for db := 0; db < 16; db++ {
		c := rc.Conn()
		c.Select(ctx, db)
		keys, err := c.Keys(ctx, "*").Result()
		if err != nil {
			t.Fatal(err)
		}
		for _, k := range keys {
			p, err := c.Dump(ctx, k).Result()
			if err != nil {
				t.Fatal(err)
			}
			e, err := rdb.Restore([]byte(p))
			if err != nil {
				t.Fatal(err)
			}
			var parts []string
			for _, h := range e.Hash {
				parts = append(parts, string(h[0])+"="+string(h[1]))
			}
			for _, m := range e.Set {
				parts = append(parts, string(m))
			}
			for _, z := range e.ZSet {
				parts = append(parts, fmt.Sprint(string(z.Member), "=", z.Score))
			}
			slices.Sort(parts)
			out[fmt.Sprint(db, " ", k)] = fmt.Sprintf("%v %q %q %q@%d", e.Type, e.String, e.List, parts, c.Do(ctx, "PEXPIRETIME", k).Val())
		}
		c.Close()
	}
	return out
}

// TestSaveRestart: every type, TTLs and several databases survive SAVE
// and a restart on the same directory.
func TestSaveRestart(t *testing.T) {
	dir := t.TempDir()
	s := startServer(t, func(c *Config) { c.Dir = dir })
	rc := newClient(t, s)
	ctx := context.Background()
	for db := 0; db < 3; db++ {
		c := rc.Conn()
		c.Select(ctx, db)
		c.Set(ctx, "str", strings.Repeat("v", db*50), 0)
		c.Set(ctx, "int", 42+db, 0)
		c.Set(ctx, "ttl", "x", time.Hour)
		c.Close()
	}
	lim := &types.DefaultLimits
	st := s.Store()
	putObj := func(db int, key string, typ shard.Type, obj any) {
		sh, h := st.ShardOf([]byte(key))
		sh.Lock()
		sh.DB(db).Put(h, []byte(key), shard.Value{Type: typ, Obj: obj})
		sh.Unlock()
	}
	for _, n := range []int{5, 1000} {
		l, lw := types.NewList()
		set, sw := types.NewSet()
		z, zw := types.NewZSet()
		hs, hw := types.NewHash()
		for i := 0; i < n; i++ {
			v := []byte(fmt.Sprint("e", i))
			l.PushBack(lw, lim, v)
			hs.Set(hw, v, v, lim)
			set.Add(sw, v, lim)
			z.Add(zw, v, float64(i), 0, lim)
		}
		putObj(0, fmt.Sprint("list", n), shard.TypeList, l)
		putObj(1, fmt.Sprint("hash", n), shard.TypeHash, hs)
		putObj(2, fmt.Sprint("set", n), shard.TypeSet, set)
		putObj(15, fmt.Sprint("zset", n), shard.TypeZSet, z)
	}
	want := dumpAll(t, s)
	before := rc.LastSave(ctx).Val()
	time.Sleep(1100 * time.Millisecond)
	if err := rc.Save(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	if after := rc.LastSave(ctx).Val(); after <= before {
		t.Fatalf("LASTSAVE %d -> %d", before, after)
	}
	info := rc.Info(ctx, "persistence").Val()
	for _, f := range []string{"rdb_changes_since_last_save:0", "rdb_last_bgsave_status:ok", "rdb_bgsave_in_progress:0", "loading:0"} {
		if !strings.Contains(info, f+"\r\n") {
			t.Errorf("INFO persistence lacks %q:\n%s", f, info)
		}
	}
	s.Close()
	s2 := startServer(t, func(c *Config) { c.Dir = dir })
	if err := s2.LoadDump(); err != nil {
		t.Fatal(err)
	}
	got := dumpAll(t, s2)
	if len(got) != len(want) {
		t.Fatalf("%d keys after restart, want %d", len(got), len(want))
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s: got %.100s want %.100s", k, got[k], v)
		}
	}
	// DEBUG RELOAD keeps everything too.
	if err := newClient(t, s2).Do(ctx, "DEBUG", "RELOAD").Err(); err != nil {
		t.Fatal(err)
	}
	if got := dumpAll(t, s2); len(got) != len(want) {
		t.Fatalf("%d keys after DEBUG RELOAD, want %d", len(got), len(want))
	}
}

func TestBgsave(t *testing.T) {
	s := startServer(t)
	rc := newClient(t, s)
	ctx := context.Background()
	rc.Do(ctx, "DEBUG", "POPULATE", 300000)
	rc.ConfigSet(ctx, "rdbcompression", "no") // a save long enough to overlap the next commands
	if v := rc.Do(ctx, "BGSAVE").Val(); v != "Background saving started" {
		t.Fatalf("BGSAVE: %v", v)
	}
	if err := rc.Do(ctx, "BGSAVE").Err(); err == nil || err.Error() != "ERR Background save already in progress" {
		t.Fatalf("second BGSAVE: %v", err)
	}
	if v := rc.Do(ctx, "BGSAVE", "SCHEDULE").Val(); v != "Background saving scheduled" {
		t.Fatalf("BGSAVE SCHEDULE: %v", v)
	}
	// The scheduled one runs after the first: two saves in all.
	deadline := time.Now().Add(20 * time.Second)
	for !strings.Contains(rc.Info(ctx, "persistence").Val(), "rdb_saves:2\r\n") {
		if time.Now().After(deadline) {
			t.Fatalf("scheduled BGSAVE never ran:\n%s", rc.Info(ctx, "persistence").Val())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestMisconf: a failed save refuses writes with -MISCONF until a save
// succeeds (when a save schedule is configured).
func TestMisconf(t *testing.T) {
	dir := t.TempDir()
	gone := filepath.Join(dir, "gone")
	if err := os.Mkdir(gone, 0o755); err != nil {
		t.Fatal(err)
	}
	s := startServer(t, func(c *Config) { c.Dir = gone; c.Save = "3600 1" })
	rc := newClient(t, s)
	ctx := context.Background()
	rc.Set(ctx, "k", "v", 0)
	os.Remove(gone)
	if err := rc.Save(ctx).Err(); err == nil || err.Error() != "ERR" {
		t.Fatalf("SAVE into a missing dir: %v", err)
	}
	if !strings.Contains(rc.Info(ctx, "persistence").Val(), "rdb_last_bgsave_status:err\r\n") {
		t.Fatal("status not err")
	}
	if err := rc.Set(ctx, "k", "w", 0).Err(); err == nil || err.Error() != misconfErr {
		t.Fatalf("SET after a failed save: %v", err)
	}
	if v, _ := rc.Get(ctx, "k").Result(); v != "v" {
		t.Fatalf("GET = %q", v)
	}
	// Without a save schedule writes are allowed (like Redis).
	rc.ConfigSet(ctx, "save", "")
	if err := rc.Set(ctx, "k", "w", 0).Err(); err != nil {
		t.Fatal(err)
	}
	rc.ConfigSet(ctx, "save", "3600 1")
	rc.ConfigSet(ctx, "dir", dir)
	if err := rc.Save(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	if err := rc.Set(ctx, "k", "x", 0).Err(); err != nil {
		t.Fatalf("SET after a good save: %v", err)
	}
}

// TestSaveSchedule: "1 1" saves within about a second of a write.
func TestSaveSchedule(t *testing.T) {
	dir := t.TempDir()
	s := startServer(t, func(c *Config) { c.Dir = dir; c.Save = "1 1" })
	rc := newClient(t, s)
	ctx := context.Background()
	rc.Set(ctx, "k", "v", 0)
	deadline := time.Now().Add(5 * time.Second)
	for {
		if _, err := os.Stat(filepath.Join(dir, "dump.rdb")); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the schedule never saved")
		}
		time.Sleep(50 * time.Millisecond)
	}
}
