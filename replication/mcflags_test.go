package replication_test

import (
	"context"
	"testing"

	"github.com/bradfitz/gomemcache/memcache"

	"github.com/damselflydb/damselfly/server"
)

// TestFullSyncKeepsMCFlags: memcached items reach a Damselfly replica with
// their client flags through the full-sync RDB.
func TestFullSyncKeepsMCFlags(t *testing.T) {
	p := startServer(t, func(c *server.Config) { c.MemcachedPort = -1 })
	mc := memcache.New(p.MemcachedAddr())
	items := map[string]uint32{"a": 42, "b": 0, "c": 4294967295}
	for k, f := range items {
		if err := mc.Set(&memcache.Item{Key: k, Value: []byte("v" + k), Flags: f}); err != nil {
			t.Fatal(err)
		}
	}
	r := startServer(t, func(c *server.Config) { c.MemcachedPort = -1 })
	rc := client(t, r.Addr())
	replicaOf(t, rc, p.Addr())
	waitConverged(t, client(t, p.Addr()), rc)
	rmc := memcache.New(r.MemcachedAddr())
	for k, f := range items {
		it, err := rmc.Get(k)
		if err != nil || it.Flags != f || string(it.Value) != "v"+k {
			t.Fatalf("replica: get %s = %+v, %v; want flags %d", k, it, err, f)
		}
	}

	// A redis-server replica loads the same full sync (it ignores the
	// df-mc-flags AUX fields) and converges.
	h, port := hostPort(t, p.Addr())
	rs := client(t, redisServer(t, "--replicaof", h, port))
	waitConverged(t, client(t, p.Addr()), rs)
	if n := rs.DBSize(context.Background()).Val(); n != int64(len(items)) {
		t.Fatalf("redis-server replica has %d keys, want %d", n, len(items))
	}
}
