package replication_test

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/damselflydb/damselfly/server"
)

// inTable reports whether key is stored in database 0 of s, expired or not.
func inTable(s *server.Server, key string) bool {
	sh, h := s.Store().ShardOf([]byte(key))
	sh.Lock()
	defer sh.Unlock()
	_, ok := sh.DB(0).Find(h, []byte(key))
	return ok
}

// TestReplicaDoesNotExpire: a Damselfly replica answers for a key past its
// deadline as if it were missing but keeps it until the primary's DEL
// arrives; after REPLICAOF NO ONE it expires keys itself again. The
// primary is redis-server with active expiry off, so the primary deletes
// the key only when we ask it to.
func TestReplicaDoesNotExpire(t *testing.T) {
	ctx := context.Background()
	raddr := redisServer(t)
	rs := client(t, raddr)
	if err := rs.Do(ctx, "DEBUG", "SET-ACTIVE-EXPIRE", "0").Err(); err != nil {
		t.Fatal(err)
	}
	d := startServer(t)
	dc := client(t, d.Addr())
	replicaOf(t, dc, raddr)
	// The stream of a diskless full sync flows once the replica has ACKed:
	// wait for a marker so that the keys below arrive well before their
	// deadline.
	waitFor(t, 10*time.Second, "link up", func() bool { return info(dc, "replication")["master_link_status"] == "up" })
	if err := rs.Set(ctx, "marker", "1", 0).Err(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 10*time.Second, "the stream to flow", func() bool {
		off := info(dc, "replication")["master_repl_offset"]
		return off != "0" && off == info(rs, "replication")["master_repl_offset"]
	})

	start := time.Now()
	for _, k := range []string{"k", "k2"} {
		if err := rs.Set(ctx, k, "v", 300*time.Millisecond).Err(); err != nil {
			t.Fatal(err)
		}
	}
	waitFor(t, 5*time.Second, "keys on the replica", func() bool { return dc.Exists(ctx, "k", "k2").Val() == 2 })
	time.Sleep(time.Until(start.Add(400 * time.Millisecond)))
	if err := dc.Get(ctx, "k").Err(); err != redis.Nil {
		t.Fatalf("GET of an expired key on the replica: %v", err)
	}
	if n := dc.Exists(ctx, "k").Val(); n != 0 {
		t.Fatalf("EXISTS = %d", n)
	}
	time.Sleep(250 * time.Millisecond) // a few expiry cycles
	if !inTable(d, "k") || !inTable(d, "k2") {
		t.Fatal("the replica deleted an expired key on its own")
	}
	// The primary expires k on access and sends DEL: the replica applies it
	// although the key is already past its deadline here.
	if err := rs.Get(ctx, "k").Err(); err != redis.Nil {
		t.Fatalf("GET on the primary: %v", err)
	}
	waitFor(t, 5*time.Second, "the primary's DEL to remove k", func() bool { return !inTable(d, "k") })
	if !inTable(d, "k2") {
		t.Fatal("k2 vanished without a DEL")
	}

	// Promoted, it expires keys itself.
	if err := dc.Do(ctx, "REPLICAOF", "NO", "ONE").Err(); err != nil {
		t.Fatal(err)
	}
	if err := dc.Get(ctx, "k2").Err(); err != redis.Nil {
		t.Fatalf("GET k2 after promotion: %v", err)
	}
	if inTable(d, "k2") {
		t.Fatal("a primary kept an expired key after reading it")
	}
}
