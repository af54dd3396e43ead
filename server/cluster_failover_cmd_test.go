package server

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// TestClusterFailoverErrorsMatchRedis: CLUSTER FAILOVER's refusals on a
// primary, byte for byte against redis-server 7.0 in cluster mode.
func TestClusterFailoverErrorsMatchRedis(t *testing.T) {
	redisAddr := startRedisCluster(t)
	s := startServer(t, clusterEmulated)
	for _, cmd := range [][]string{
		{"CLUSTER", "FAILOVER"}, {"CLUSTER", "FAILOVER", "FORCE"}, {"CLUSTER", "FAILOVER", "takeover"},
		{"CLUSTER", "FAILOVER", "bad"}, {"CLUSTER", "FAILOVER", "FORCE", "x"}, {"CLUSTER", "FAILOVER", "a", "b", "c"},
	} {
		var got [2]string
		for i, addr := range []string{redisAddr, s.Addr()} {
			r := dialAddr(t, addr)
			r.do(cmd...)
			got[i] = strings.Join(r.reply(), "\n")
		}
		if got[0] != got[1] {
			t.Errorf("%q: redis %q, damselfly %q", cmd, got[0], got[1])
		}
	}
}

// roleOf is a node's role in its own INFO replication.
func roleOf(t *testing.T, s *Server) string {
	info, _ := newClient(t, s).Info(context.Background(), "replication").Result()
	return peerInfoField(info, "role")
}

// TestClusterFailoverCommand: CLUSTER FAILOVER sent through go-redis to a
// replica in cluster mode swaps it with its primary while go-redis
// ClusterClient writers run, twice (there and back), losing no
// acknowledged write; every node learns the new layout; a replica whose
// primary is gone fails over with FORCE, and TAKEOVER works too.
func TestClusterFailoverCommand(t *testing.T) {
	tc := startTestCluster(t)
	ctx := context.Background()
	waitFor(t, "replica 3 online", func() bool {
		info, _ := newClient(t, tc.nodes[0]).Info(ctx, "replication").Result()
		return peerInfoField(info, "connected_slaves") == "1"
	})
	if err := newClient(t, tc.nodes[0]).Do(ctx, "CLUSTER", "FAILOVER").Err(); err == nil ||
		err.Error() != "ERR You should send CLUSTER FAILOVER to a replica" {
		t.Fatalf("CLUSTER FAILOVER on a primary: %v", err)
	}

	cc := redis.NewClusterClient(&redis.ClusterOptions{
		Addrs: tc.addrs(), MaxRedirects: 16, MaxRetries: 16,
		MinRetryBackoff: time.Millisecond, MaxRetryBackoff: 20 * time.Millisecond,
	})
	defer cc.Close()
	var (
		stop    atomic.Bool
		wg      sync.WaitGroup
		mu      sync.Mutex
		acked   []string
		written atomic.Int64
	)
	for w := 0; w < 8; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for j := 0; !stop.Load(); j++ {
				k := fmt.Sprintf("mf:%d:%d", w, j)
				if cc.Set(ctx, k, j, 0).Err() != nil {
					continue
				}
				written.Add(1)
				mu.Lock()
				acked = append(acked, k)
				mu.Unlock()
			}
		}(w)
	}
	waitWrites := func(n int64) {
		t.Helper()
		target := written.Load() + n
		waitFor(t, "writes to go on", func() bool { return written.Load() >= target })
	}
	failover := func(from, to int, opt ...any) {
		t.Helper()
		args := append([]any{"CLUSTER", "FAILOVER"}, opt...)
		if err := newClient(t, tc.nodes[to]).Do(ctx, args...).Err(); err != nil {
			t.Fatalf("CLUSTER FAILOVER %v on node %d: %v", opt, to, err)
		}
		waitFor(t, fmt.Sprintf("node %d to be primary", to), func() bool { return roleOf(t, tc.nodes[to]) == "master" })
		tc.swapRoles(from, to)
		want := tc.topology()
		for i, s := range tc.nodes {
			if s == nil {
				continue
			}
			waitFor(t, fmt.Sprintf("node %d to learn the failover", i), func() bool {
				return s.cluster.view.Load().topo.Text() == want
			})
		}
	}

	waitWrites(300)
	failover(0, 3)
	waitFor(t, "node 0 to follow node 3", func() bool {
		info, _ := newClient(t, tc.nodes[0]).Info(ctx, "replication").Result()
		return peerInfoField(info, "master_link_status") == "up"
	})
	waitWrites(300)
	failover(3, 0)
	waitFor(t, "node 3 to follow node 0", func() bool {
		info, _ := newClient(t, tc.nodes[3]).Info(ctx, "replication").Result()
		return peerInfoField(info, "master_link_status") == "up"
	})
	waitWrites(300)
	stop.Store(true)
	wg.Wait()
	missing := 0
	for _, k := range acked {
		if err := cc.Get(ctx, k).Err(); err != nil {
			if missing < 5 {
				t.Errorf("acknowledged %s is lost: %v", k, err)
			}
			missing++
		}
	}
	if missing > 0 {
		t.Fatalf("%d of %d acknowledged writes lost", missing, len(acked))
	}
	t.Logf("%d acknowledged writes across two CLUSTER FAILOVERs", len(acked))

	// TAKEOVER with the primary up: no agreement asked, same outcome.
	failover(1, 4, "TAKEOVER")
	// FORCE with the primary gone; the default refuses first.
	tc.nodes[2].Close()
	tc.nodes[2] = nil
	r5 := newClient(t, tc.nodes[5])
	waitFor(t, "node 5 to lose its link", func() bool {
		info, _ := r5.Info(ctx, "replication").Result()
		return peerInfoField(info, "master_link_status") != "up"
	})
	if err := r5.Do(ctx, "CLUSTER", "FAILOVER").Err(); err == nil ||
		err.Error() != "ERR Master is down or failed, please use CLUSTER FAILOVER FORCE" {
		t.Fatalf("CLUSTER FAILOVER with the primary down: %v", err)
	}
	failover(2, 5, "FORCE")
	k := keyInSlotRange(10923, 16383)
	cc2 := redis.NewClusterClient(&redis.ClusterOptions{Addrs: []string{tc.nodes[0].Addr()}})
	defer cc2.Close()
	if err := cc2.Set(ctx, k, "after", 0).Err(); err != nil {
		t.Fatalf("write to the forced primary's slots: %v", err)
	}
}
