package server

import (
	"context"
	"fmt"
	"net"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/damselflydb/damselfly/cluster"
)

// testCluster is three primaries and three replicas on loopback, with the
// test acting as the control plane (kvrocks-controller's CLUSTERX calls).
type testCluster struct {
	t       *testing.T
	nodes   []*Server
	ids     []string
	ports   []int
	version int64
	role    []string // "master" or the primary's index as a replica's master
	ranges  [][]string
}

func startTestCluster(t *testing.T) *testCluster {
	t.Helper()
	tc := &testCluster{t: t}
	for i := 0; i < 6; i++ {
		s := startServer(t, func(c *Config) { c.ClusterMode = "yes"; c.Shards = 2; c.Save = "" })
		_, p, _ := net.SplitHostPort(s.Addr())
		tc.nodes = append(tc.nodes, s)
		tc.ports = append(tc.ports, atoi(p))
		tc.ids = append(tc.ids, fmt.Sprintf("%040x", 0xd00+i))
	}
	// Primaries 0-2 own a third of the slots each; replica 3+i follows i.
	tc.ranges = [][]string{{"0-5460"}, {"5461-10922"}, {"10923-16383"}, nil, nil, nil}
	tc.role = []string{"master", "master", "master", "0", "1", "2"}
	for i := range tc.nodes {
		r := newClient(t, tc.nodes[i])
		if i != 0 { // node 0 finds itself by its address, as kvrocks does
			if err := r.Do(context.Background(), "CLUSTERX", "SETNODEID", tc.ids[i]).Err(); err != nil {
				t.Fatal(err)
			}
		}
	}
	tc.push()
	return tc
}

// topology renders the controller's text for the current layout.
func (tc *testCluster) topology() string {
	var b strings.Builder
	for i := range tc.nodes {
		if tc.role[i] == "" {
			continue // removed
		}
		fmt.Fprintf(&b, "%s 127.0.0.1 %d ", tc.ids[i], tc.ports[i])
		if tc.role[i] == "master" {
			b.WriteString("master -")
			for _, r := range tc.ranges[i] {
				b.WriteString(" " + r)
			}
		} else {
			b.WriteString("slave " + tc.ids[atoi(tc.role[i])])
		}
		b.WriteString("\n")
	}
	return b.String()
}

// push sends the next topology version to every live node.
func (tc *testCluster) push() {
	tc.t.Helper()
	tc.version++
	text := tc.topology()
	for i, s := range tc.nodes {
		if s == nil {
			continue
		}
		r := redis.NewClient(&redis.Options{Addr: s.Addr()})
		err := r.Do(context.Background(), "CLUSTERX", "SETNODES", text, tc.version).Err()
		r.Close()
		if err != nil {
			tc.t.Fatalf("SETNODES on node %d: %v", i, err)
		}
	}
}

func (tc *testCluster) addrs() []string {
	var out []string
	for _, s := range tc.nodes {
		if s != nil {
			out = append(out, s.Addr())
		}
	}
	return out
}

// TestClusterYes: the controller contract, go-redis's ClusterClient
// across slots with MOVED, READONLY reads from replicas, redis-cli -c, and
// a primary killed and its replica promoted by a new topology.
func TestClusterYes(t *testing.T) {
	tc := startTestCluster(t)
	ctx := context.Background()
	r0 := newClient(t, tc.nodes[0])
	if v, _ := r0.Do(ctx, "CLUSTERX", "VERSION").Text(); v != "1" {
		t.Fatalf("CLUSTERX VERSION = %q", v)
	}
	if id, _ := r0.Do(ctx, "CLUSTER", "MYID").Text(); id != tc.ids[0] {
		t.Fatalf("node 0 did not find itself: MYID %q", id)
	}
	info, _ := r0.Do(ctx, "CLUSTER", "INFO").Text()
	for _, f := range []string{"cluster_state:ok", "cluster_slots_assigned:16384", "cluster_known_nodes:6", "cluster_size:3", "cluster_current_epoch:1", "cluster_my_epoch:1"} {
		if !strings.Contains(info, f+"\r\n") {
			t.Fatalf("CLUSTER INFO lacks %s:\n%s", f, info)
		}
	}
	// Stale and invalid pushes are refused with kvrocks's texts.
	if err := r0.Do(ctx, "CLUSTERX", "SETNODES", tc.topology(), 0).Err(); err == nil || err.Error() != "ERR Invalid cluster version" {
		t.Fatalf("stale SETNODES: %v", err)
	}
	if err := r0.Do(ctx, "CLUSTERX", "SETNODES", "x 1 2 master -", 5).Err(); err == nil || err.Error() != "ERR Invalid cluster node id" {
		t.Fatalf("bad SETNODES: %v", err)
	}
	// Redirections a plain client sees.
	key0, key1 := keyInSlotRange(0, 5460), keyInSlotRange(5461, 10922)
	if err := r0.Set(ctx, key1, "v", 0).Err(); err == nil || err.Error() != fmt.Sprintf("MOVED %d 127.0.0.1:%d", cluster.KeySlot([]byte(key1)), tc.ports[1]) {
		t.Fatalf("SET on the wrong node: %v", err)
	}
	if err := r0.MSet(ctx, key0, "1", key1, "2").Err(); err == nil || !strings.HasPrefix(err.Error(), "CROSSSLOT") {
		t.Fatalf("MSET across slots: %v", err)
	}
	if err := r0.Eval(ctx, "return redis.pcall('set', ARGV[1], 1)", nil, key1).Err(); err == nil ||
		err.Error() != "ERR Script attempted to access a non local key in a cluster node" {
		t.Fatalf("script writing another node's key: %v", err)
	}
	if err := r0.Eval(ctx, "return redis.pcall('set', ARGV[1], 1)", nil, key0).Err(); err != nil || r0.Del(ctx, key0).Val() != 1 {
		t.Fatalf("script writing a local key: %v", err)
	}

	cc := redis.NewClusterClient(&redis.ClusterOptions{Addrs: []string{tc.nodes[0].Addr()}, MaxRedirects: 8})
	defer cc.Close()
	const n = 300
	for i := 0; i < n; i++ {
		if err := cc.Set(ctx, "key:"+strconv.Itoa(i), i, 0).Err(); err != nil {
			t.Fatal(err)
		}
	}
	for i := 0; i < n; i += 7 {
		if v, err := cc.Get(ctx, "key:"+strconv.Itoa(i)).Result(); err != nil || v != strconv.Itoa(i) {
			t.Fatalf("GET key:%d = %q, %v", i, v, err)
		}
	}
	// Each primary holds exactly its slots' keys; replicas follow.
	total := 0
	for i := 0; i < 3; i++ {
		size, _ := newClient(t, tc.nodes[i]).DBSize(ctx).Result()
		total += int(size)
		waitFor(t, fmt.Sprintf("replica %d to catch up", 3+i), func() bool {
			rs, _ := newClient(t, tc.nodes[3+i]).DBSize(ctx).Result()
			return rs == size
		})
	}
	if total != n {
		t.Fatalf("primaries hold %d keys, want %d", total, n)
	}
	// A replica redirects unless READONLY, then serves reads of its primary's slots.
	r3 := newClient(t, tc.nodes[3])
	if err := r3.Get(ctx, key0).Err(); err == nil || !strings.HasPrefix(err.Error(), "MOVED ") {
		t.Fatalf("GET on a replica without READONLY: %v", err)
	}
	ro := redis.NewClusterClient(&redis.ClusterOptions{Addrs: []string{tc.nodes[3].Addr()}, ReadOnly: true})
	defer ro.Close()
	if v, err := ro.Get(ctx, "key:5").Result(); err != nil || v != "5" {
		t.Fatalf("READONLY GET = %q, %v", v, err)
	}

	// MOVED following after the controller moves slots: SETSLOT on every node.
	slot := cluster.KeySlot([]byte("key:1"))
	owner := 0
	for i := 0; i < 3; i++ {
		for _, r := range tc.ranges[i] {
			rg, _ := cluster.ParseRange(r)
			if slot >= rg.Start && slot <= rg.End {
				owner = i
			}
		}
	}
	target := (owner + 1) % 3
	tc.version++
	for _, s := range tc.nodes {
		if err := newClient(t, s).Do(ctx, "CLUSTERX", "SETSLOT", slot, "NODE", tc.ids[target], tc.version).Err(); err != nil {
			t.Fatal(err)
		}
	}
	if err := cc.Set(ctx, "key:1", "moved", 0).Err(); err != nil {
		t.Fatal(err)
	}
	if v, _ := newClient(t, tc.nodes[target]).Get(ctx, "key:1").Result(); v != "moved" {
		t.Fatalf("after SETSLOT the write went elsewhere (target has %q)", v)
	}
	tc.ranges[target] = append(tc.ranges[target], strconv.Itoa(slot))
	tc.ranges[owner] = splitOut(tc.ranges[owner], slot)

	// redis-cli -c follows MOVED.
	if _, err := exec.LookPath("redis-cli"); err == nil {
		out, err := exec.Command("redis-cli", "-c", "-p", strconv.Itoa(tc.ports[0]), "GET", "key:150").CombinedOutput()
		if err != nil || strings.TrimSpace(string(out)) != "150" {
			t.Fatalf("redis-cli -c GET: %q, %v", out, err)
		}
	}

	// redis-benchmark --cluster reads CLUSTER NODES and spreads its keys.
	if _, err := exec.LookPath("redis-benchmark"); err == nil {
		out, err := exec.Command("redis-benchmark", "--cluster", "-p", strconv.Itoa(tc.ports[2]), "-n", "3000", "-c", "4",
			"-t", "set,get", "-r", "10000", "-q").CombinedOutput()
		if err != nil || !strings.Contains(string(out), "SET: ") || !strings.Contains(string(out), "GET: ") || strings.Contains(string(out), "rror") {
			t.Fatalf("redis-benchmark --cluster: %v\n%s", err, out)
		}
		for i := 0; i < 3; i++ {
			if size, _ := newClient(t, tc.nodes[i]).DBSize(ctx).Result(); size <= n/3 {
				t.Fatalf("after redis-benchmark --cluster node %d holds only %d keys", i, size)
			}
		}
	}

	// Kill primary 1; the controller promotes replica 4.
	var wg sync.WaitGroup
	stop := make(chan struct{})
	errs := make(chan error, 100)
	wg.Add(1)
	go func() { // a client keeps writing across the failover
		defer wg.Done()
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			cc.Set(ctx, "during:"+strconv.Itoa(i), i, 0)
			time.Sleep(time.Millisecond)
		}
	}()
	tc.nodes[1].Close()
	tc.nodes[1] = nil
	tc.role[1] = ""
	tc.role[4] = "master"
	tc.ranges[4], tc.ranges[1] = tc.ranges[1], nil
	tc.push()
	waitFor(t, "node 4 to become a primary", func() bool {
		role, _ := newClient(t, tc.nodes[4]).Do(ctx, "ROLE").Slice()
		return len(role) > 0 && role[0] == "master"
	})
	time.Sleep(200 * time.Millisecond)
	close(stop)
	wg.Wait()
	close(errs)
	cc.ReloadState(ctx)
	for i := 0; i < n; i += 3 {
		k := "key:" + strconv.Itoa(i)
		want := strconv.Itoa(i)
		if i == 1 {
			want = "moved"
		}
		var v string
		var err error
		for try := 0; try < 50; try++ {
			if v, err = cc.Get(ctx, k).Result(); err == nil {
				break
			}
			time.Sleep(20 * time.Millisecond)
		}
		if err != nil || v != want {
			t.Fatalf("after failover GET %s = %q, %v", k, v, err)
		}
	}
	if err := cc.Set(ctx, key1, "after", 0).Err(); err != nil {
		t.Fatalf("write to the promoted replica's slots: %v", err)
	}
}

// keyInSlotRange finds a key whose slot lies in [lo, hi].
func keyInSlotRange(lo, hi int) string {
	for i := 0; ; i++ {
		k := "k" + strconv.Itoa(i)
		if s := cluster.KeySlot([]byte(k)); s >= lo && s <= hi {
			return k
		}
	}
}

// splitOut removes slot from a list of ranges.
func splitOut(ranges []string, slot int) []string {
	var out []string
	for _, r := range ranges {
		rg, _ := cluster.ParseRange(r)
		if slot < rg.Start || slot > rg.End {
			out = append(out, r)
			continue
		}
		for _, p := range []cluster.Range{{Start: rg.Start, End: slot - 1}, {Start: slot + 1, End: rg.End}} {
			if p.Start <= p.End {
				out = append(out, p.String())
			}
		}
	}
	return out
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestClusterNotInitialized: before its first topology a node answers as
// kvrocks does, which kvrocks-controller takes for an uninitialised node.
func TestClusterNotInitialized(t *testing.T) {
	s := startServer(t, func(c *Config) { c.ClusterMode = "yes" })
	ctx := context.Background()
	rc := newClient(t, s)
	if err := rc.ClusterInfo(ctx).Err(); err == nil || err.Error() != "ERR CLUSTERDOWN The cluster is not initialized" {
		t.Fatalf("CLUSTER INFO: %v", err)
	}
	if v, _ := rc.Do(ctx, "CLUSTERX", "VERSION").Text(); v != "-1" {
		t.Fatalf("CLUSTERX VERSION = %q", v)
	}
	if err := rc.Set(ctx, "k", "v", 0).Err(); err == nil || err.Error() != "CLUSTERDOWN Hash slot not served" {
		t.Fatalf("SET: %v", err)
	}
	if info, _ := rc.Info(ctx, "cluster").Result(); !strings.Contains(info, "cluster_enabled:1\r\nsequence:") {
		t.Fatalf("INFO cluster: %q", info)
	}
}
