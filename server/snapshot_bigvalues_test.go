package server

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// TestSnapshotCutBigValues: big strings (100 KB, 2 MB), which a save
// captures by reference and encodes off the shard lock, are overwritten by
// go-redis clients during a BGSAVE with values of the same size (the chunk
// would be reused in place), of another size, and changed in place
// (APPEND, SETRANGE, SETBIT) or deleted; the dump, loaded into a fresh
// server, equals the dataset at the cut (DEBUG DIGEST). A second wave
// overwrites other keys with values of the same size once the save has
// written some of the chunks the first left it, so they take those chunks
// (spares, shard.ChunkRecycler): the dump still equals the cut, and the
// store holds every value last written.
func TestSnapshotCutBigValues(t *testing.T) {
	dir := t.TempDir()
	s := startServer(t, func(c *Config) { c.Dir = dir; c.Shards = 2 })
	ctx := context.Background()
	rdb := redis.NewClient(&redis.Options{Addr: s.Addr(), Protocol: 2, PoolSize: 8})
	defer rdb.Close()
	const keys = 120
	size := func(i int) int {
		if i%40 == 0 {
			return 2 << 20
		}
		return 100_000
	}
	val := func(i int, tag string) string {
		return strings.Repeat(fmt.Sprintf("%s%d.", tag, i), size(i)/4)[:size(i)]
	}
	const wave2 = 8
	for i := 0; i < keys; i++ {
		if err := rdb.Set(ctx, fmt.Sprint("big:", i), val(i, "old"), 0).Err(); err != nil {
			t.Fatal(err)
		}
		rdb.Set(ctx, fmt.Sprint("small:", i), i, 0)
		if i%40 != 0 && i < 2*wave2 {
			rdb.Set(ctx, fmt.Sprint("big2:", i), val(i, "old"), 0)
		}
	}
	atCut, err := rdb.Do(ctx, "DEBUG", "DIGEST").Text()
	if err != nil {
		t.Fatal(err)
	}
	rdb.ConfigSet(ctx, "rdb-key-save-delay", "50000")
	if err := rdb.BgSave(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for w := 0; w < 4; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; i < keys; i += 4 {
				k := fmt.Sprint("big:", i)
				switch i % 6 {
				case 0:
					rdb.Set(ctx, k, val(i, "new"), 0) // same size
				case 1:
					rdb.Set(ctx, k, val(i, "new")+"longer", 0)
				case 2:
					rdb.Append(ctx, k, "tail")
				case 3:
					rdb.SetRange(ctx, k, 10, "in place")
				case 4:
					rdb.SetBit(ctx, k, 8*50_000+3, 1)
				default:
					rdb.Del(ctx, k)
				}
				rdb.Incr(ctx, fmt.Sprint("small:", i))
			}
		}()
	}
	wg.Wait()
	for i := 0; i < 2*wave2; i++ {
		if i%40 != 0 {
			time.Sleep(60 * time.Millisecond) // one value written at rdb-key-save-delay
			rdb.Set(ctx, fmt.Sprint("big2:", i), val(i, "wave2"), 0)
		}
	}
	if !strings.Contains(rdb.Info(ctx, "persistence").Val(), "rdb_bgsave_in_progress:1") {
		t.Fatal("the BGSAVE finished before the writes did: raise rdb-key-save-delay")
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
	if st := s.persist.lastStats.Load(); st.SparesReused == 0 {
		t.Errorf("no overwrite took a chunk the save had written (%d kept)", st.SparesKept)
	} else {
		t.Logf("spares kept %d, reused %d", st.SparesKept, st.SparesReused)
	}
	for i := 0; i < keys; i++ {
		k := fmt.Sprint("big:", i)
		if i%6 == 0 && rdb.Get(ctx, k).Val() != val(i, "new") {
			t.Errorf("%s is not the value last written", k)
		}
		if k := fmt.Sprint("big2:", i); i%40 != 0 && i < 2*wave2 && rdb.Get(ctx, k).Val() != val(i, "wave2") {
			t.Errorf("%s is not the value last written", k)
		}
	}
	fresh := startServer(t, func(c *Config) { c.Dir = dir; c.Shards = 3 })
	if err := fresh.LoadDump(); err != nil {
		t.Fatal(err)
	}
	got, err := newClient(t, fresh).Do(ctx, "DEBUG", "DIGEST").Text()
	if err != nil {
		t.Fatal(err)
	}
	if got != atCut {
		t.Fatalf("the dump's digest %s differs from the dataset's at the cut %s", got, atCut)
	}
}
