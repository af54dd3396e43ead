package replication_test

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/damselflydb/damselfly/server"
)

// A primary and two replicas attached while writes go on converge to equal
// digests, and WAIT-acknowledged writes are on the replicas.
func TestFullSyncTwoReplicasUnderWrites(t *testing.T) {
	p := startServer(t)
	pc := client(t, p.Addr())
	populate(t, pc, 50000)
	w := startWriter(t, p.Addr(), 3)
	r1, r2 := startServer(t), startServer(t)
	c1, c2 := client(t, r1.Addr()), client(t, r2.Addr())
	replicaOf(t, c1, p.Addr())
	time.Sleep(50 * time.Millisecond)
	replicaOf(t, c2, p.Addr())
	time.Sleep(500 * time.Millisecond)
	ctx := context.Background()
	// WAIT: what it acknowledges is on both replicas.
	if err := pc.Set(ctx, "acked", "yes", 0).Err(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 10*time.Second, "both replicas online", func() bool { return info(pc, "replication")["connected_slaves"] == "2" })
	// A replica counts as connected while its full sync still runs; WAIT's
	// timeout is generous since it returns as soon as both acknowledge (a
	// 50k-key sync under -race on a loaded machine took over 5 s).
	waitFor(t, 30*time.Second, "both replicas synced", func() bool {
		return info(c1, "replication")["master_link_status"] == "up" && info(c2, "replication")["master_link_status"] == "up"
	})
	n, err := pc.Do(ctx, "WAIT", 2, 30000).Int()
	if err != nil || n != 2 {
		t.Fatalf("WAIT = %d, %v", n, err)
	}
	if v := c1.Get(ctx, "acked").Val(); v != "yes" {
		t.Fatalf("replica 1 lacks a WAIT-acknowledged write: %q", v)
	}
	if v := c2.Get(ctx, "acked").Val(); v != "yes" {
		t.Fatalf("replica 2 lacks a WAIT-acknowledged write: %q", v)
	}
	time.Sleep(300 * time.Millisecond)
	w.halt()
	if w.count.Load() == 0 {
		t.Fatal("writer made no progress")
	}
	waitConverged(t, pc, c1, c2)
	// Replicas are read-only and say who they follow.
	if err := c1.Set(ctx, "x", 1, 0).Err(); err == nil || err.Error() != "READONLY You can't write against a read only replica." {
		t.Fatalf("write on replica: %v", err)
	}
	role, err := c1.Do(ctx, "ROLE").Slice()
	if err != nil || role[0] != "slave" || role[3] != "connected" {
		t.Fatalf("ROLE on replica = %v, %v", role, err)
	}
	role, err = pc.Do(ctx, "ROLE").Slice()
	if err != nil || role[0] != "master" || len(role[2].([]any)) != 2 {
		t.Fatalf("ROLE on primary = %v, %v", role, err)
	}
	ri := info(c1, "replication")
	for _, k := range []string{"master_host", "master_port", "master_last_io_seconds_ago", "master_sync_in_progress", "master_replid", "master_replid2", "second_repl_offset", "repl_backlog_active", "repl_backlog_size", "repl_backlog_first_byte_offset", "repl_backlog_histlen"} {
		if _, ok := ri[k]; !ok {
			t.Errorf("INFO replication lacks %s", k)
		}
	}
}

// A replica whose link breaks continues with +CONTINUE while the backlog
// holds its offset, and does a full sync when it does not.
func TestPartialAndFullResync(t *testing.T) {
	p := startServer(t, func(c *server.Config) { c.ReplBacklogSize = 64 << 10 })
	pc := client(t, p.Addr())
	populate(t, pc, 5000)
	px := newProxy(t, p.Addr())
	r := startServer(t)
	rc := client(t, r.Addr())
	replicaOf(t, rc, px.addr())
	waitConverged(t, pc, rc)
	ctx := context.Background()

	// Short outage with a few writes: partial.
	px.held.Store(true)
	px.cut()
	for i := 0; i < 100; i++ {
		pc.Set(ctx, "during:"+strconv.Itoa(i), i, 0)
	}
	px.held.Store(false)
	waitConverged(t, pc, rc)
	st := info(pc, "stats")
	if st["sync_partial_ok"] != "1" || st["sync_full"] != "1" {
		t.Fatalf("after a short outage: sync_full=%s sync_partial_ok=%s, want 1 and 1", st["sync_full"], st["sync_partial_ok"])
	}

	// Long outage: more than the backlog written; full sync.
	px.held.Store(true)
	px.cut()
	big := make([]byte, 1000)
	for i := 0; i < 200; i++ {
		pc.Set(ctx, "big:"+strconv.Itoa(i), big, 0)
	}
	px.held.Store(false)
	waitConverged(t, pc, rc)
	st = info(pc, "stats")
	if st["sync_full"] != "2" || st["sync_partial_err"] != "1" {
		t.Fatalf("after a long outage: sync_full=%s sync_partial_err=%s, want 2 and 1", st["sync_full"], st["sync_partial_err"])
	}

	// A restarted replica process holds no replication state: full sync.
	r.Close()
	r2 := startServer(t)
	c2 := client(t, r2.Addr())
	replicaOf(t, c2, p.Addr())
	waitConverged(t, pc, c2)
}

// REPLICAOF NO ONE promotes a replica with its data; the other replica,
// re-pointed at it, continues with +CONTINUE thanks to replid2.
func TestPromotion(t *testing.T) {
	p := startServer(t)
	pc := client(t, p.Addr())
	populate(t, pc, 2000)
	r1, r2 := startServer(t), startServer(t)
	c1, c2 := client(t, r1.Addr()), client(t, r2.Addr())
	replicaOf(t, c1, p.Addr())
	replicaOf(t, c2, p.Addr())
	w := startWriter(t, p.Addr(), 2)
	time.Sleep(300 * time.Millisecond)
	w.halt()
	waitConverged(t, pc, c1, c2)
	ctx := context.Background()
	oldID := info(c1, "replication")["master_replid"]
	if err := c1.Do(ctx, "REPLICAOF", "NO", "ONE").Err(); err != nil {
		t.Fatal(err)
	}
	ri := info(c1, "replication")
	if ri["role"] != "master" || ri["master_replid2"] != oldID || ri["master_replid"] == oldID {
		t.Fatalf("after promotion: %v", ri)
	}
	if digest(t, c1) != digest(t, pc) {
		t.Fatal("promotion lost data")
	}
	p.Close()
	replicaOf(t, c2, r1.Addr())
	w = startWriter(t, r1.Addr(), 2)
	time.Sleep(300 * time.Millisecond)
	w.halt()
	waitConverged(t, c1, c2)
	if st := info(c1, "stats"); st["sync_partial_ok"] != "1" || st["sync_full"] != "0" {
		t.Fatalf("re-pointed replica: sync_full=%s sync_partial_ok=%s, want 0 and 1", st["sync_full"], st["sync_partial_ok"])
	}
	// REPLICAOF itself is refused.
	h, port := hostPort(t, r1.Addr())
	if err := c1.Do(ctx, "REPLICAOF", h, port).Err(); err == nil {
		t.Fatal("REPLICAOF to itself accepted")
	}
}

// Faults: the primary's socket closed in the middle of the RDB leaves the
// old dataset and link down, then converges; a replica killed mid-sync and
// a restarted primary converge too.
func TestFaults(t *testing.T) {
	ctx := context.Background()
	p := startServer(t)
	pc := client(t, p.Addr())
	populate(t, pc, 200000)
	px := newProxy(t, p.Addr())
	r := startServer(t)
	rc := client(t, r.Addr())
	rc.Set(ctx, "old", "data", 0)
	// Stretch the full sync (Redis's rdb-key-save-delay, µs per key) so
	// that the cut lands inside it: compressed for a Damselfly replica, the
	// whole payload otherwise crossed the proxy before the cut.
	pc.ConfigSet(ctx, "rdb-key-save-delay", "50")
	replicaOf(t, rc, px.addr())
	waitFor(t, 5*time.Second, "sync to start", func() bool { return info(rc, "replication")["master_sync_in_progress"] == "1" })
	px.held.Store(true)
	px.cut()
	pc.ConfigSet(ctx, "rdb-key-save-delay", "0")
	waitFor(t, 5*time.Second, "link down", func() bool {
		ri := info(rc, "replication")
		return ri["master_link_status"] == "down" && ri["master_sync_in_progress"] == "0"
	})
	if v := rc.Get(ctx, "old").Val(); v != "data" {
		t.Fatalf("interrupted sync lost the old dataset: old=%q", v)
	}
	px.held.Store(false)
	waitConverged(t, pc, rc)

	// Replica killed mid-sync; a new one converges, the primary is fine.
	r2 := startServer(t)
	c2 := client(t, r2.Addr())
	replicaOf(t, c2, p.Addr())
	waitFor(t, 5*time.Second, "sync to start", func() bool { return info(c2, "replication")["master_sync_in_progress"] == "1" })
	r2.Close()
	r3 := startServer(t)
	c3 := client(t, r3.Addr())
	replicaOf(t, c3, p.Addr())
	waitConverged(t, pc, rc, c3)

	// Primary restarted (same address, new process and dataset).
	addr := p.Addr()
	p.Close()
	_, port := hostPort(t, addr)
	pn, _ := strconv.Atoi(port)
	p2 := startServer(t, func(c *server.Config) { c.Port = pn })
	pc2 := client(t, p2.Addr())
	pc2.Set(ctx, "fresh", "primary", 0)
	px.target.Store(p2.Addr())
	waitConverged(t, pc2, c3)
	if v := c3.Get(ctx, "fresh").Val(); v != "primary" {
		t.Fatal("replica did not follow the restarted primary")
	}
}

// Damselfly replicates redis-server and redis-server replicates Damselfly,
// under continuous writes; digests agree.
func TestInteropWithRedis(t *testing.T) {
	ctx := context.Background()
	raddr := redisServer(t)
	rs := client(t, raddr)
	// Every type, via Redis.
	if err := rs.Eval(ctx, `
redis.call('rpush','l1','a','b','c','1','2'); for i=1,200 do redis.call('rpush','l2','elem'..i) end
redis.call('sadd','st1','1','2','3'); redis.call('sadd','st2','a','b'); for i=1,600 do redis.call('sadd','st3','m'..i) end
redis.call('hset','h1','f1','v1'); for i=1,600 do redis.call('hset','h2','f'..i,'v'..i) end
redis.call('zadd','z1',1,'a',2.5,'b',-3,'c'); for i=1,200 do redis.call('zadd','z2',i/3,'m'..i) end
redis.call('zadd','z3','inf','x','-inf','y',1e300,'big',1e-7,'tiny')
redis.call('set','e1','x','EX','1000'); redis.call('select',2); redis.call('set','db2','v')
return 1`, nil).Err(); err != nil {
		t.Fatal(err)
	}
	w := startWriter(t, raddr, 2)
	d := startServer(t)
	dc := client(t, d.Addr())
	replicaOf(t, dc, raddr)
	time.Sleep(500 * time.Millisecond)
	w.halt()
	waitConverged(t, rs, dc)
	for _, k := range []string{"l1", "l2", "st1", "st2", "st3", "h1", "h2", "z1", "z2", "z3", "e1"} {
		a := rs.Do(ctx, "DEBUG", "DIGEST-VALUE", k).Val()
		b := dc.Do(ctx, "DEBUG", "DIGEST-VALUE", k).Val()
		if a == nil || len(a.([]any)) != 1 || a.([]any)[0] != b.([]any)[0] {
			t.Errorf("DIGEST-VALUE %s: redis %v, damselfly %v", k, a, b)
		}
	}

	// The other direction: redis-server replicates Damselfly.
	p := startServer(t)
	pc := client(t, p.Addr())
	populate(t, pc, 20000)
	w = startWriter(t, p.Addr(), 2)
	h, port := hostPort(t, p.Addr())
	raddr2 := redisServer(t, "--replicaof", h, port)
	rs2 := client(t, raddr2)
	time.Sleep(700 * time.Millisecond)
	w.halt()
	waitConverged(t, pc, rs2)
}
