package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/damselflydb/damselfly/cluster"
)

// TestKvrocksControllerE2E lets Apache kvrocks-controller drive four
// Damselfly processes: it creates a namespace and a cluster of two shards
// (a primary and a replica each) through its HTTP API, fails shard 0 over
// and migrates a slot from shard 0 to shard 1, while go-redis
// ClusterClient writers run; every acknowledged write must be readable at
// the end and the clients must have followed MOVED.
//
// It runs when DAMSELFLY_KVROCKS_CONTROLLER names the controller's server
// binary and skips otherwise. The controller keeps its state in etcd: the
// test starts its own etcd (DAMSELFLY_ETCD, else etcd on PATH; Debian's
// package etcd-server provides it). To build the controller, bring
// github.com/apache/kvrocks-controller's source to a directory under /tmp
// (tested at commit 7ca006b8a1ea, v0.3.1-22, March 2024: the releases of
// that line store their state in etcd or ZooKeeper only) and run
// `go build -o /tmp/kvctl/bin/kvctl-server ./cmd/server` in it; then
//
//	DAMSELFLY_KVROCKS_CONTROLLER=/tmp/kvctl/bin/kvctl-server go test -run TestKvrocksControllerE2E -v ./cmd/damselfly/
//
// It takes about 15 s: the controller acts on one-second ticks.
func TestKvrocksControllerE2E(t *testing.T) {
	ctlBin := os.Getenv("DAMSELFLY_KVROCKS_CONTROLLER")
	if ctlBin == "" {
		t.Skip("DAMSELFLY_KVROCKS_CONTROLLER is not set: no kvrocks-controller binary to test against (see the test's comment for how to build one)")
	}
	etcdBin := os.Getenv("DAMSELFLY_ETCD")
	if etcdBin == "" {
		etcdBin, _ = exec.LookPath("etcd")
	}
	if etcdBin == "" {
		t.Skip("kvrocks-controller needs etcd: set DAMSELFLY_ETCD or install etcd (Debian: etcd-server)")
	}
	ctx := context.Background()
	bin := buildBinary(t)
	dir := t.TempDir()

	// etcd, then the controller on it.
	etcdClient, etcdPeer := anyPort(t), anyPort(t)
	startProc(t, "etcd", etcdBin, "--name", "e2e", "--data-dir", filepath.Join(dir, "etcd"),
		"--listen-client-urls", "http://"+etcdClient, "--advertise-client-urls", "http://"+etcdClient,
		"--listen-peer-urls", "http://"+etcdPeer, "--initial-advertise-peer-urls", "http://"+etcdPeer,
		"--initial-cluster", "e2e=http://"+etcdPeer)
	ctlAddr := anyPort(t)
	cfg := fmt.Sprintf(`addr: "%s"
storage_type: etcd
etcd:
  addrs:
    - "%s"
controller:
  failover:
    gc_interval_seconds: 3600
    ping_interval_seconds: 1
    max_ping_count: 3
    min_alive_size: 10
    max_failure_ratio: 0.6
`, ctlAddr, etcdClient)
	cfgPath := filepath.Join(dir, "controller.yaml")
	if err := os.WriteFile(cfgPath, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	ctlLog := startProc(t, "kvrocks-controller", ctlBin, "-c", cfgPath)
	api := &ctlAPI{t: t, base: "http://" + ctlAddr + "/api/v1", log: ctlLog}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("controller log (tail):\n%s", tail(ctlLog.String(), 4000))
		}
	})
	ctlWait(t, 20*time.Second, "the controller to lead", func() bool {
		var leader string
		return api.try("GET", "/controller/leader", nil, &leader) == nil && leader != ""
	})

	// Four nodes; the controller makes two shards of a primary and a replica.
	var nodes []*proc
	var addrs []string
	for i := 0; i < 4; i++ {
		p := start(t, bin, t.TempDir(), "--cluster-mode", "yes", "--save", "")
		nodes = append(nodes, p)
		t.Cleanup(func() {
			if t.Failed() {
				t.Logf("node %d log (tail):\n%s", p.port, tail(p.log.String(), 2000))
			}
		})
		addrs = append(addrs, fmt.Sprintf("127.0.0.1:%d", p.port))
	}
	byAddr := func(addr string) *proc {
		for i, a := range addrs {
			if a == addr {
				return nodes[i]
			}
		}
		t.Fatalf("no node at %s", addr)
		return nil
	}
	api.call("POST", "/namespaces", map[string]any{"namespace": "e2e"}, nil)
	api.call("POST", "/namespaces/e2e/clusters", map[string]any{"name": "c1", "nodes": addrs, "replicas": 2}, nil)
	cl := api.cluster()
	if len(cl.Shards) != 2 || len(cl.Shards[0].Nodes) != 2 {
		t.Fatalf("cluster as created: %+v", cl)
	}
	// Every node takes the topology: cluster_state:ok at the controller's version.
	waitConverged := func(what string) ctlCluster {
		t.Helper()
		var cl ctlCluster
		ctlWait(t, 20*time.Second, what, func() bool {
			cl = api.cluster()
			for _, sh := range cl.Shards {
				for _, n := range sh.Nodes {
					info, err := byAddr(n.Addr).rc.ClusterInfo(ctx).Result()
					if err != nil || !strings.Contains(info, "cluster_state:ok\r\n") ||
						!strings.Contains(info, fmt.Sprintf("cluster_current_epoch:%d\r\n", cl.Version)) {
						return false
					}
					role, _ := byAddr(n.Addr).rc.Do(ctx, "ROLE").Slice()
					if len(role) == 0 || (role[0] == "master") != (n.Role == "master") {
						return false
					}
				}
			}
			return true
		})
		return cl
	}
	cl = waitConverged("the nodes to take the controller's topology")
	t.Logf("cluster v%d: shard 0 %v, shard 1 %v", cl.Version, cl.Shards[0].SlotRanges, cl.Shards[1].SlotRanges)

	// Writers through go-redis's ClusterClient for the whole test.
	cc := redis.NewClusterClient(&redis.ClusterOptions{Addrs: addrs, MaxRedirects: 16, MaxRetries: 16,
		MinRetryBackoff: 2 * time.Millisecond, MaxRetryBackoff: 50 * time.Millisecond})
	defer cc.Close()
	var (
		stop    atomic.Bool
		wg      sync.WaitGroup
		mu      sync.Mutex
		acked   = map[string]int{}
		written atomic.Int64
		failed  atomic.Int64
	)
	// Writer 0 fills one slot of shard 0 (the one migrated below), the
	// others spread over every slot.
	hot := ""
	for i := 0; hot == ""; i++ {
		if tag := "hot" + strconv.Itoa(i); cl.Shards[0].owns(cluster.KeySlot([]byte(tag))) {
			hot = "{" + tag + "}"
		}
	}
	for w := 0; w < 6; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for j := 0; !stop.Load(); j++ {
				k := fmt.Sprintf("e2e:%d:%d", w, j)
				if w == 0 {
					k = hot + k
				}
				if err := cc.Set(ctx, k, j, 0).Err(); err != nil {
					failed.Add(1)
					time.Sleep(time.Millisecond)
					continue
				}
				if w == 0 {
					time.Sleep(2 * time.Millisecond) // a slot being written, not flooded
				}
				written.Add(1)
				mu.Lock()
				acked[k] = j
				mu.Unlock()
			}
		}(w)
	}
	defer func() { stop.Store(true); wg.Wait() }()
	moreWrites := func(n int64) {
		t.Helper()
		target := written.Load() + n
		ctlWait(t, 20*time.Second, "writes to go on", func() bool { return written.Load() >= target })
	}
	moreWrites(500)

	// Failover of shard 0 through the controller's API.
	oldPrimary, oldReplica := cl.Shards[0].primary(), cl.Shards[0].replica()
	api.call("POST", "/namespaces/e2e/clusters/c1/shards/0/failover", map[string]any{}, nil)
	ctlWait(t, 20*time.Second, "the controller to promote shard 0's replica", func() bool {
		return api.cluster().Shards[0].primary().ID == oldReplica.ID
	})
	cl = waitConverged("the nodes to take the failover")
	t.Logf("failover: v%d, shard 0's primary %s -> %s", cl.Version, oldPrimary.Addr, oldReplica.Addr)
	ctlWait(t, 20*time.Second, "the old primary to follow the new one", func() bool {
		info, _ := byAddr(oldPrimary.Addr).rc.Info(ctx, "replication").Result()
		return strings.Contains(info, "master_link_status:up")
	})
	moreWrites(500)

	// Migrate the hot slot, still being written, from shard 0 to shard 1.
	slot := cluster.KeySlot([]byte(hot))
	src := byAddr(cl.Shards[0].primary().Addr)
	dst := cl.Shards[1].primary()
	keysBefore, _ := src.rc.ClusterCountKeysInSlot(ctx, slot).Result()
	api.call("POST", "/namespaces/e2e/clusters/c1/shards/migration/slot_data", map[string]any{"source": 0, "target": 1, "slot": slot}, nil)
	ctlWait(t, 20*time.Second, fmt.Sprintf("slot %d to move to shard 1", slot), func() bool {
		return api.cluster().Shards[1].owns(slot)
	})
	cl = waitConverged("the nodes to take the migration")
	t.Logf("migrated slot %d (%d keys) to %s: v%d", slot, keysBefore, dst.Addr, cl.Version)
	key := hot + "probe"
	want := fmt.Sprintf("MOVED %d %s", slot, dst.Addr)
	ctlWait(t, 10*time.Second, "the source to redirect the slot", func() bool {
		err := src.rc.Get(ctx, key).Err()
		return err != nil && err.Error() == want
	})
	moreWrites(500)

	// A replica restarts empty: the controller finds it uninitialised and
	// pushes the topology again; it resyncs from its primary.
	rep := cl.Shards[1].replica()
	ri := -1
	for i, a := range addrs {
		if a == rep.Addr {
			ri = i
		}
	}
	nodes[ri].cmd.Process.Kill()
	nodes[ri].cmd.Process.Wait()
	nodes[ri] = startAt(t, bin, t.TempDir(), nodes[ri].port, "--cluster-mode", "yes", "--save", "")
	cl = waitConverged("the restarted replica to take the topology again")
	ctlWait(t, 20*time.Second, "the restarted replica to resync", func() bool {
		info, _ := nodes[ri].rc.Info(ctx, "replication").Result()
		return strings.Contains(info, "master_link_status:up")
	})
	moreWrites(300)
	stop.Store(true)
	wg.Wait()

	mu.Lock()
	defer mu.Unlock()
	lost := 0
	for k, v := range acked {
		got, err := cc.Get(ctx, k).Result()
		if err != nil || got != strconv.Itoa(v) {
			if lost < 5 {
				t.Errorf("acknowledged %s=%d reads %q, %v", k, v, got, err)
			}
			lost++
		}
	}
	t.Logf("%d acknowledged writes, %d failed (not acknowledged), %d lost", len(acked), failed.Load(), lost)
	if lost > 0 {
		t.Fatalf("%d acknowledged writes lost\ncontroller log (tail):\n%s", lost, tail(ctlLog.String(), 3000))
	}
	if n, _ := byAddr(dst.Addr).rc.ClusterCountKeysInSlot(ctx, slot).Result(); n < keysBefore {
		t.Fatalf("slot %d: %d keys on the target, %d before the move", slot, n, keysBefore)
	}
	for i, p := range nodes {
		for _, l := range strings.Split(p.log.String(), "\n") {
			if strings.Contains(l, "handing over") || strings.Contains(l, "taking over") || strings.Contains(l, "migrat") {
				t.Logf("node %s: %s", addrs[i], l)
			}
		}
	}
}

// ctlCluster is the controller's view of a cluster (GET .../clusters/c).
type ctlCluster struct {
	Version int64      `json:"version"`
	Shards  []ctlShard `json:"shards"`
}

type ctlShard struct {
	Nodes      []ctlNode `json:"nodes"`
	SlotRanges []string  `json:"slot_ranges"`
}

type ctlNode struct {
	ID   string `json:"id"`
	Addr string `json:"addr"`
	Role string `json:"role"`
}

func (sh ctlShard) node(primary bool) ctlNode {
	for _, n := range sh.Nodes {
		if (n.Role == "master") == primary {
			return n
		}
	}
	return ctlNode{}
}

func (sh ctlShard) primary() ctlNode { return sh.node(true) }
func (sh ctlShard) replica() ctlNode { return sh.node(false) }

// owns reports whether the shard's slot ranges hold slot.
func (sh ctlShard) owns(slot int) bool {
	for _, r := range sh.SlotRanges {
		rg, err := cluster.ParseRange(r)
		if err == nil && slot >= rg.Start && slot <= rg.End {
			return true
		}
	}
	return false
}

// ctlAPI calls the controller's HTTP API.
type ctlAPI struct {
	t    *testing.T
	base string
	log  *syncBuffer
}

func (a *ctlAPI) try(method, path string, body any, out any) error {
	var rd io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, a.base+path, rd)
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := (&http.Client{Timeout: 10 * time.Second}).Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	var r struct {
		Data  json.RawMessage `json:"data"`
		Error *struct {
			Message string `json:"message"`
		} `json:"error"`
	}
	raw, _ := io.ReadAll(resp.Body)
	if err := json.Unmarshal(raw, &r); err != nil {
		return fmt.Errorf("%s %s: %d %s", method, path, resp.StatusCode, raw)
	}
	if r.Error != nil || resp.StatusCode >= 300 {
		return fmt.Errorf("%s %s: %d %s", method, path, resp.StatusCode, raw)
	}
	if out != nil {
		return json.Unmarshal(r.Data, out)
	}
	return nil
}

func (a *ctlAPI) call(method, path string, body any, out any) {
	a.t.Helper()
	if err := a.try(method, path, body, out); err != nil {
		a.t.Fatalf("%v\ncontroller log (tail):\n%s", err, tail(a.log.String(), 3000))
	}
}

func (a *ctlAPI) cluster() ctlCluster {
	a.t.Helper()
	var out struct {
		Cluster ctlCluster `json:"cluster"`
	}
	a.call("GET", "/namespaces/e2e/clusters/c1", nil, &out)
	return out.Cluster
}

// startAt is start (main_test.go) on a given port: a node restarted
// where the controller knows it.
func startAt(t *testing.T, bin, dir string, port int, extra ...string) *proc {
	t.Helper()
	args := append([]string{"--port", fmt.Sprint(port), "--bind", "127.0.0.1", "--dir", dir}, extra...)
	cmd := exec.Command(bin, args...)
	log := &bytes.Buffer{}
	cmd.Stderr = log
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _, _ = cmd.Process.Wait() })
	p := &proc{cmd: cmd, port: port, log: log, rc: redis.NewClient(&redis.Options{Addr: fmt.Sprintf("127.0.0.1:%d", port)})}
	t.Cleanup(func() { p.rc.Close() })
	ctlWait(t, 20*time.Second, "damselfly to start", func() bool { return p.rc.Ping(context.Background()).Err() == nil })
	return p
}

// anyPort is a free loopback address picked by the kernel.
func anyPort(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// startProc runs an outside program for the test's duration; its output
// is kept for failure messages.
func startProc(t *testing.T, name, bin string, args ...string) *syncBuffer {
	t.Helper()
	cmd := exec.Command(bin, args...)
	log := &syncBuffer{}
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Start(); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _, _ = cmd.Process.Wait() })
	return log
}

type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

func ctlWait(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(d); !cond(); time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
	}
}

func tail(s string, n int) string {
	if len(s) > n {
		return s[len(s)-n:]
	}
	return s
}
