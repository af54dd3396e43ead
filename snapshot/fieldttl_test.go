package snapshot

import (
	"os"
	"strings"
	"testing"

	"github.com/damselflydb/damselfly/shard"
	"github.com/damselflydb/damselfly/snapshot/rdb"
)

func TestDropFieldTTLs(t *testing.T) {
	e := &rdb.Entry{Type: rdb.Hash, Hash: [][2][]byte{{[]byte("gone"), []byte("1")}, {[]byte("live"), []byte("2")}, {[]byte("plain"), []byte("3")}},
		HashFieldExpireAtMs: map[string]int64{"gone": 1000, "live": 5000, "plain": 0}}
	ttls, expired := dropFieldTTLs(e, 2000)
	if ttls != 1 || expired != 1 || len(e.Hash) != 2 || string(e.Hash[0][0]) != "live" || string(e.Hash[1][0]) != "plain" || e.HashFieldExpireAtMs != nil {
		t.Fatalf("ttls %d expired %d hash %q", ttls, expired, e.Hash)
	}
	if _, err := Value(e); err != nil {
		t.Fatal(err)
	}
}

// TestLoadFieldTTLDump: the Redis 7.4 dump's hashes with field TTLs load
// with every field, and each such key is named in a warning.
func TestLoadFieldTTLDump(t *testing.T) {
	f, err := os.Open("../testdata/redis-7.4-all-types.rdb")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	st := shard.NewStore(2, 16)
	stats, err := Load(st, f, "redis-7.4.rdb")
	if err != nil {
		t.Fatal(err)
	}
	w := strings.Join(stats.Warnings, "\n")
	if len(stats.Warnings) != 2 || !strings.Contains(w, `key "hfe:small" (DB 0): the TTLs of 2 hash fields were dropped`) ||
		!strings.Contains(w, `key "hfe:big" (DB 0): the TTLs of 4 hash fields were dropped`) {
		t.Fatalf("warnings:\n%s", w)
	}
	got := contents(st, 0, true)
	if !strings.Contains(got["0 hfe:small"], `"f3"="v3"`) || !strings.Contains(got["0 hfe:big"], `"field-200"="value-200"`) {
		t.Fatalf("hfe:small = %s", got["0 hfe:small"])
	}
}
