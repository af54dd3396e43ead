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

// TestSnapshotCutBigCollections: big lists, hashes, sets, sorted sets and
// streams, which a save captures by reference and encodes off the shard
// lock (snapshot/bigvalues.go), are changed in place by go-redis clients
// during a BGSAVE (the save must clone what it has not encoded yet),
// overwritten, renamed and deleted; the dump, loaded into a fresh server,
// equals the dataset at the cut (DEBUG DIGEST).
func TestSnapshotCutBigCollections(t *testing.T) {
	dir := t.TempDir()
	s := startServer(t, func(c *Config) { c.Dir = dir; c.Shards = 2 })
	ctx := context.Background()
	rdb := redis.NewClient(&redis.Options{Addr: s.Addr(), Protocol: 2, PoolSize: 8})
	defer rdb.Close()
	const keys, elems = 60, 400
	pad := strings.Repeat("p", 60)
	for i := 0; i < keys; i++ {
		p := rdb.Pipeline()
		for j := 0; j < elems; j++ {
			m := fmt.Sprint(j, pad)
			switch i % 5 {
			case 0:
				p.RPush(ctx, fmt.Sprint("c:", i), m)
			case 1:
				p.HSet(ctx, fmt.Sprint("c:", i), fmt.Sprint("f", j), m)
			case 2:
				p.SAdd(ctx, fmt.Sprint("c:", i), m)
			case 3:
				p.ZAdd(ctx, fmt.Sprint("c:", i), redis.Z{Score: float64(j), Member: m})
			default:
				p.XAdd(ctx, &redis.XAddArgs{Stream: fmt.Sprint("c:", i), Values: []string{"f", m}})
			}
		}
		if _, err := p.Exec(ctx); err != nil {
			t.Fatal(err)
		}
	}
	atCut, err := rdb.Do(ctx, "DEBUG", "DIGEST").Text()
	if err != nil {
		t.Fatal(err)
	}
	rdb.ConfigSet(ctx, "rdb-key-save-delay", "100000")
	if err := rdb.BgSave(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for w := 0; w < 4; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; i < keys; i += 4 {
				k := fmt.Sprint("c:", i)
				switch {
				case i%13 == 0:
					rdb.Del(ctx, k)
				case i%11 == 0:
					rdb.Set(ctx, k, "now a string", 0)
				case i%7 == 0:
					rdb.Rename(ctx, k, fmt.Sprint("renamed:", i))
				}
				switch i % 5 {
				case 0:
					rdb.RPush(ctx, k, "new")
					rdb.LPop(ctx, k)
					rdb.LSet(ctx, k, 100, "set")
				case 1:
					rdb.HSet(ctx, k, "f1", "new")
					rdb.HDel(ctx, k, "f2")
				case 2:
					rdb.SAdd(ctx, k, "new")
					rdb.SRem(ctx, k, fmt.Sprint(3, pad))
				case 3:
					rdb.ZAdd(ctx, k, redis.Z{Score: -1, Member: "new"})
					rdb.ZIncrBy(ctx, k, 5, fmt.Sprint(4, pad))
				default:
					rdb.XAdd(ctx, &redis.XAddArgs{Stream: k, Values: []string{"f", "new"}})
					rdb.XTrimMaxLen(ctx, k, elems/2)
				}
				rdb.Incr(ctx, fmt.Sprint("small:", i))
			}
		}()
	}
	wg.Wait()
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
