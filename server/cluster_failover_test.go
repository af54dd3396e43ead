package server

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// pushOrder sends the next topology version to the nodes in the given
// order, as a control plane walks its node list.
func (tc *testCluster) pushOrder(order []int) {
	tc.t.Helper()
	tc.version++
	text := tc.topology()
	for _, i := range order {
		r := redis.NewClient(&redis.Options{Addr: tc.nodes[i].Addr()})
		err := r.Do(context.Background(), "CLUSTERX", "SETNODES", text, tc.version).Err()
		r.Close()
		if err != nil {
			tc.t.Fatalf("SETNODES on node %d: %v", i, err)
		}
	}
}

// swapRoles makes replica r the primary of p's slots and p its replica.
func (tc *testCluster) swapRoles(p, r int) {
	tc.role[r], tc.role[p] = "master", strconv.Itoa(r)
	tc.ranges[r], tc.ranges[p] = tc.ranges[p], nil
	for i := range tc.role {
		if tc.role[i] == strconv.Itoa(p) && i != r {
			tc.role[i] = strconv.Itoa(r)
		}
	}
}

// TestClusterPlannedFailover: go-redis ClusterClient writers run while the
// control plane swaps a primary and its replica three times: telling the
// old primary first, the new one first (a control plane may do either, and
// kvrocks-controller does no more), and with the control plane pausing
// the primary's writes itself until the replica caught up. Every
// acknowledged write is on the new primary afterwards.
func TestClusterPlannedFailover(t *testing.T) {
	tc := startTestCluster(t)
	ctx := context.Background()
	// The replica must be online before the first failover.
	waitFor(t, "replica 3 online", func() bool {
		info, _ := newClient(t, tc.nodes[0]).Info(ctx, "replication").Result()
		return peerInfoField(info, "connected_slaves") == "1"
	})

	cc := redis.NewClusterClient(&redis.ClusterOptions{
		Addrs: tc.addrs(), MaxRedirects: 16, MaxRetries: 16,
		MinRetryBackoff: time.Millisecond, MaxRetryBackoff: 20 * time.Millisecond,
	})
	defer cc.Close()

	const writers = 8
	var (
		stop    atomic.Bool
		wg      sync.WaitGroup
		mu      sync.Mutex
		acked   []string
		errs    atomic.Int64
		written atomic.Int64
	)
	for w := 0; w < writers; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for j := 0; !stop.Load(); j++ {
				k := fmt.Sprintf("fo:%d:%d", w, j)
				if err := cc.Set(ctx, k, j, 0).Err(); err != nil {
					errs.Add(1)
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

	waitWrites(300)
	// Old primary (0) told first, then the rest.
	tc.swapRoles(0, 3)
	tc.pushOrder([]int{0, 1, 2, 3, 4, 5})
	waitWrites(300)
	waitFor(t, "node 0 to follow node 3", func() bool {
		info, _ := newClient(t, tc.nodes[0]).Info(ctx, "replication").Result()
		return peerInfoField(info, "master_link_status") == "up"
	})
	// Back again, the new primary (0) told first.
	tc.swapRoles(3, 0)
	tc.pushOrder([]int{0, 1, 2, 4, 5, 3})
	waitWrites(300)
	// A control plane doing it all itself, as Redis's FAILOVER does: pause
	// the primary's writes, wait for the replica's offset, push (new
	// primary first), unpause.
	waitFor(t, "node 3 to follow node 0", func() bool {
		info, _ := newClient(t, tc.nodes[3]).Info(ctx, "replication").Result()
		return peerInfoField(info, "master_link_status") == "up"
	})
	p0, p3 := newClient(t, tc.nodes[0]), newClient(t, tc.nodes[3])
	if err := p0.Do(ctx, "CLIENT", "PAUSE", 5000, "WRITE").Err(); err != nil {
		t.Fatal(err)
	}
	info, _ := p0.Info(ctx, "replication").Result()
	target, _ := strconv.ParseInt(peerInfoField(info, "master_repl_offset"), 10, 64)
	waitFor(t, "the replica to reach the paused primary's offset", func() bool {
		info, _ := p3.Info(ctx, "replication").Result()
		off, _ := strconv.ParseInt(peerInfoField(info, "slave_repl_offset"), 10, 64)
		return off >= target
	})
	tc.swapRoles(0, 3)
	tc.pushOrder([]int{3, 1, 2, 4, 5, 0})
	if err := p0.Do(ctx, "CLIENT", "UNPAUSE").Err(); err != nil {
		t.Fatal(err)
	}
	waitWrites(300)
	stop.Store(true)
	wg.Wait()

	t.Logf("%d acknowledged writes, %d failed (redirect bounces, not acknowledged)", len(acked), errs.Load())
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
	// The old primary redirects writes once demoted.
	k := keyInSlotRange(0, 5460)
	if err := p0.Set(ctx, k, 1, 0).Err(); err == nil || err.Error()[:6] != "MOVED " {
		t.Fatalf("SET on the demoted node: %v", err)
	}
}
