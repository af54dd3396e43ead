package snapshot

import (
	"bytes"
	"context"
	"os"
	"testing"

	"github.com/damselflydb/damselfly/shard"
	"github.com/damselflydb/damselfly/shard/types"
	"github.com/damselflydb/damselfly/snapshot/rdb"
)

func TestPruneExpiredFields(t *testing.T) {
	e := &rdb.Entry{Type: rdb.Hash, Hash: [][2][]byte{{[]byte("gone"), []byte("1")}, {[]byte("live"), []byte("2")}, {[]byte("plain"), []byte("3")}},
		HashFieldExpireAtMs: map[string]int64{"gone": 1000, "live": 5000, "plain": 0}}
	expired := pruneExpiredFields(e, 2000)
	if expired != 1 || len(e.Hash) != 2 || string(e.Hash[0][0]) != "live" || string(e.Hash[1][0]) != "plain" || e.HashFieldExpireAtMs["live"] != 5000 {
		t.Fatalf("expired %d hash %q ttls %v", expired, e.Hash, e.HashFieldExpireAtMs)
	}
	v, err := Value(e)
	if err != nil {
		t.Fatal(err)
	}
	h := v.Obj.(*types.Hash)
	if h.FieldExpireAt([]byte("live")) != 5000 || h.FieldExpireAt([]byte("plain")) != 0 || h.FieldTTLs() != 1 {
		t.Fatalf("deadlines: live %d plain %d", h.FieldExpireAt([]byte("live")), h.FieldExpireAt([]byte("plain")))
	}
}

// TestLoadFieldTTLDump: the dumps of a real Redis 7.4 (types 24 and 25)
// and 8.0 load with their hash fields' TTLs intact, without warnings, and
// a save of what was loaded writes them back (RDB_TYPE_HASH_METADATA) so
// that they load again unchanged.
func TestLoadFieldTTLDump(t *testing.T) {
	for _, name := range []string{"redis-7.4", "redis-8.0"} {
		t.Run(name, func(t *testing.T) {
			f, err := os.Open("../testdata/" + name + "-all-types.rdb")
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			st := shard.NewStore(2, 16)
			stats, err := Load(st, f, name+".rdb")
			if err != nil {
				t.Fatal(err)
			}
			if len(stats.Warnings) != 0 {
				t.Fatalf("warnings: %q", stats.Warnings)
			}
			want := map[string]map[string]int64{
				"hfe:small": {"f1": 4102444800500, "f2": 4102444800500, "f3": 0},
				"hfe:big":   {"field-1": 4102444800600, "field-2": 4102444800600, "field-3": 4102444800600, "field-200": 4102444800700, "field-4": 0, "longfield": 0},
			}
			check := func(st *shard.Store, when string) {
				for key, fields := range want {
					sh, h := st.ShardOf([]byte(key))
					sh.Lock()
					e, ok := sh.Lookup(0, h, []byte(key), 0)
					if !ok {
						sh.Unlock()
						t.Fatalf("%s: %s missing", when, key)
					}
					hs := e.Obj().(*types.Hash)
					for f, at := range fields {
						if !hs.Exists([]byte(f)) || hs.FieldExpireAt([]byte(f)) != at {
							sh.Unlock()
							t.Fatalf("%s: %s %s: exists %v deadline %d, want %d", when, key, f, hs.Exists([]byte(f)), hs.FieldExpireAt([]byte(f)), at)
						}
					}
					sh.Unlock()
				}
			}
			check(st, "loaded")
			var buf bytes.Buffer
			if _, err := Write(context.Background(), st, &buf, Options{}); err != nil {
				t.Fatal(err)
			}
			st2 := shard.NewStore(2, 16)
			if _, err := Load(st2, &buf, "again.rdb"); err != nil {
				t.Fatal(err)
			}
			check(st2, "saved and loaded again")
		})
	}
}
