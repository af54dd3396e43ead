package server

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// TestSnapshotCutInPlaceEdits complements TestSnapshotCutUnderEveryWrite
// for the writes issue 12 put behind the write gate: in-place string edits
// (SETRANGE and APPEND of big strings grown in place, SETBIT, BITFIELD,
// PFADD and PFCOUNT on a dense HyperLogLog) and every kind of stream
// change, consumer groups included (XREADGROUP's PEL and seen times,
// XACK, XCLAIM, XAUTOCLAIM, XGROUP *, XSETID, XDEL, XTRIM), which the
// scripts' pass misses (XREADGROUP may block, so it is left out there, and
// DEBUG DIGEST ignores groups, as Redis's does). They run while a BGSAVE
// is in progress; the loaded dump must equal the dataset at the cut, in
// its digest and in XINFO STREAM FULL.
func TestSnapshotCutInPlaceEdits(t *testing.T) {
	dir := t.TempDir()
	s := startServer(t, func(c *Config) { c.Dir = dir; c.Shards = 2 })
	ctx := context.Background()
	// The edited keys live in database 9 and 5000 others in database 0:
	// the save walks the databases in order, so it is still in database 0
	// (key-save-delay) while the edits run, and each edit finds its bucket
	// not yet captured: only the pre-change hook can put the old value in
	// the dump.
	rdb := redis.NewClient(&redis.Options{Addr: s.Addr(), Protocol: 2, PoolSize: 1, DB: 9})
	defer rdb.Close()
	r0 := newClient(t, s)
	do := func(c *redis.Client, args ...any) any {
		t.Helper()
		v, err := c.Do(ctx, args...).Result()
		if err != nil && err != redis.Nil {
			t.Fatalf("%v: %v", args, err)
		}
		return v
	}
	big := strings.Repeat("a", 20000) // a large slab chunk: grown in place, shared with the save
	setup := [][]any{
		{"SET", "gate:big", big}, {"SET", "gate:big2", big}, {"SET", "gate:small", "hello world"},
		{"SET", "gate:bits", strings.Repeat("\x00", 100)}, {"SET", "gate:n", "5"},
		{"PFADD", "gate:hll", "a", "b", "c"}, {"PFDEBUG", "TODENSE", "gate:hll"}, {"PFCOUNT", "gate:hll"},
		{"XADD", "gate:s", "1-1", "f", "v1"}, {"XADD", "gate:s", "2-1", "f", "v2"},
		{"XADD", "gate:s", "3-1", "f", "v3"}, {"XADD", "gate:s", "4-1", "f", "v4"},
		{"XGROUP", "CREATE", "gate:s", "g", "0"}, {"XGROUP", "CREATE", "gate:s", "old", "0"},
		{"XGROUP", "CREATECONSUMER", "gate:s", "g", "c0"},
		{"XREADGROUP", "GROUP", "g", "c0", "COUNT", "3", "STREAMS", "gate:s", ">"},
	}
	during := [][]any{
		{"SETRANGE", "gate:big", "100", "zzzz"}, {"SETRANGE", "gate:big", "20000", "tail"},
		{"APPEND", "gate:big2", "xyz"}, {"SETBIT", "gate:big2", "5", "1"},
		{"BITFIELD", "gate:big", "SET", "u8", "80", "255", "INCRBY", "u8", "8", "3"},
		{"SETBIT", "gate:bits", "3", "1"}, {"BITFIELD", "gate:bits", "INCRBY", "i16", "16", "300"},
		{"SETRANGE", "gate:small", "0", "J"}, {"APPEND", "gate:small", "!"}, {"INCR", "gate:n"},
		{"PFADD", "gate:hll", "x", "y", "z", "w"}, {"PFCOUNT", "gate:hll"},
		{"XADD", "gate:s", "5-1", "f", "v5"},
		{"XREADGROUP", "GROUP", "g", "c1", "COUNT", "1", "STREAMS", "gate:s", ">"},
		{"XREADGROUP", "GROUP", "g", "c0", "STREAMS", "gate:s", "0"},
		{"XACK", "gate:s", "g", "1-1"},
		{"XCLAIM", "gate:s", "g", "c1", "0", "2-1"},
		{"XAUTOCLAIM", "gate:s", "g", "c2", "0", "0-0", "COUNT", "1"},
		{"XGROUP", "SETID", "gate:s", "g", "3-1", "ENTRIESREAD", "3"},
		{"XGROUP", "CREATECONSUMER", "gate:s", "g", "c3"},
		{"XGROUP", "DELCONSUMER", "gate:s", "g", "c2"},
		{"XGROUP", "DESTROY", "gate:s", "old"},
		{"XGROUP", "CREATE", "gate:s", "new", "$"},
		{"XDEL", "gate:s", "4-1"}, {"XTRIM", "gate:s", "MAXLEN", "3"},
		{"XSETID", "gate:s", "10-1", "ENTRIESADDED", "20", "MAXDELETEDID", "4-1"},
	}
	for _, c := range setup {
		do(rdb, c...)
	}
	do(r0, "DEBUG", "POPULATE", 5000, "pop", 10)
	state := func(c *redis.Client) string {
		return fmt.Sprint(do(c, "DEBUG", "DIGEST"), do(c, "XINFO", "STREAM", "gate:s", "FULL"))
	}
	atCut := state(rdb)

	rdb.ConfigSet(ctx, "rdb-key-save-delay", "1000")
	if err := rdb.BgSave(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	for _, c := range during {
		do(rdb, c...)
	}
	if !strings.Contains(rdb.Info(ctx, "persistence").Val(), "rdb_bgsave_in_progress:1") {
		t.Fatal("the BGSAVE finished before the writes did: raise rdb-key-save-delay")
	}
	if state(rdb) == atCut {
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
	fc := redis.NewClient(&redis.Options{Addr: fresh.Addr(), Protocol: 2, PoolSize: 1, DB: 9})
	defer fc.Close()
	if got := state(fc); got != atCut {
		t.Fatalf("the dump differs from the dataset at the cut:\n got %s\nwant %s", got, atCut)
	}
}
