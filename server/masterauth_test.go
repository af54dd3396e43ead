package server

import (
	"context"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// TestMasterUserWithRedisPrimary: a replica authenticates to a
// redis-server 7.0 primary as an ACL user (masteruser + masterauth) whose
// default user has another password; the full sync and the stream follow.
func TestMasterUserWithRedisPrimary(t *testing.T) {
	ctx := context.Background()
	raddr := startRedis(t, "--requirepass", "not-this", "--user", "repl", "on", ">replpw", "~*", "&*", "+@all")
	primary := redis.NewClient(&redis.Options{Addr: raddr, Username: "repl", Password: "replpw", Protocol: 2})
	defer primary.Close()
	primary.Set(ctx, "before", "1", 0)
	host, port, _ := net.SplitHostPort(raddr)
	s := startServer(t, func(c *Config) {
		c.MasterUser, c.MasterAuth = "repl", "replpw"
		c.ReplicaOf = host + ":" + port
	})
	replica := newClient(t, s)
	waitUntil(t, "the full sync", func() bool { return replica.Get(ctx, "before").Val() == "1" })
	primary.Set(ctx, "after", "2", 0)
	waitUntil(t, "the stream", func() bool { return replica.Get(ctx, "after").Val() == "2" })
	if v := replica.ConfigGet(ctx, "masteruser").Val()["masteruser"]; v != "repl" {
		t.Fatalf("CONFIG GET masteruser = %q", v)
	}
}

// TestMasterUserConfigSet: CONFIG SET masteruser/masterauth take effect at
// the next handshake, between two Damselfly nodes; a wrong user keeps the
// link down.
func TestMasterUserConfigSet(t *testing.T) {
	ctx := context.Background()
	p := startServer(t)
	primary := newClient(t, p)
	if err := primary.Do(ctx, "ACL", "SETUSER", "repl", "on", ">replpw", "~*", "&*", "+@all").Err(); err != nil {
		t.Fatal(err)
	}
	primary.ConfigSet(ctx, "requirepass", "not-this")
	admin := redis.NewClient(&redis.Options{Addr: p.Addr(), Username: "repl", Password: "replpw", Protocol: 2})
	defer admin.Close()
	admin.Set(ctx, "k", "v", 0)

	r := startServer(t)
	replica := newClient(t, r)
	replica.ConfigSet(ctx, "masteruser", "repl")
	replica.ConfigSet(ctx, "masterauth", "wrong")
	host, port, _ := net.SplitHostPort(p.Addr())
	if err := replica.Do(ctx, "REPLICAOF", host, port).Err(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(700 * time.Millisecond) // a few refused handshakes
	if replica.Get(ctx, "k").Val() == "v" {
		t.Fatal("synced with a wrong masterauth")
	}
	replica.ConfigSet(ctx, "masterauth", "replpw")
	replica.Do(ctx, "REPLICAOF", "NO", "ONE")
	if err := replica.Do(ctx, "REPLICAOF", host, port).Err(); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, "the full sync", func() bool { return replica.Get(ctx, "k").Val() == "v" })
	if info := replica.Info(ctx, "replication").Val(); !strings.Contains(info, "master_link_status:up") {
		t.Fatalf("link not up:\n%s", info)
	}
}
