//go:build linux

package main

// A network partition of a Redis Cluster made of Damselfly processes, each
// in its own network namespace, joined by veth pairs to a bridge in a
// switch namespace; the test is the control plane (kvrocks-controller's
// CLUSTERX calls) and dials into the namespaces with setns.

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/redis/go-redis/v9/maintnotifications"
	"golang.org/x/sys/unix"

	"github.com/damselflydb/damselfly/cluster"
)

// netnsLab is a set of network namespaces made for one test run: a switch
// namespace with a bridge, and one namespace per member with a veth pair to
// the bridge and an address in 10.213.0.0/24.
type netnsLab struct {
	t      *testing.T
	prefix string // unique per run
}

// newNetnsLab makes the switch namespace or skips the test when that is
// not permitted; every namespace it makes goes in t.Cleanup.
func newNetnsLab(t *testing.T) *netnsLab {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("the partition test needs root (it creates network namespaces and veth pairs)")
	}
	if _, err := exec.LookPath("ip"); err != nil {
		t.Skip("the partition test needs iproute2's ip (apt-get install -y iproute2)")
	}
	var b [3]byte
	rand.Read(b[:])
	lab := &netnsLab{t: t, prefix: "dfp" + hex.EncodeToString(b[:])}
	if out, err := exec.Command("ip", "netns", "add", lab.ns("sw")).CombinedOutput(); err != nil {
		t.Skipf("cannot create a network namespace here (%v: %s); the partition test needs CAP_SYS_ADMIN and CAP_NET_ADMIN",
			err, strings.TrimSpace(string(out)))
	}
	t.Cleanup(func() { exec.Command("ip", "netns", "del", lab.ns("sw")).Run() })
	lab.ip("sw", "link", "set", "lo", "up")
	lab.ip("sw", "link", "add", "name", "br0", "type", "bridge")
	lab.ip("sw", "link", "set", "br0", "up")
	return lab
}

func (l *netnsLab) ns(name string) string { return l.prefix + "-" + name }

// ip runs `ip -n <namespace> args...` and fails the test on error.
func (l *netnsLab) ip(ns string, args ...string) {
	l.t.Helper()
	if out, err := exec.Command("ip", append([]string{"-n", l.ns(ns)}, args...)...).CombinedOutput(); err != nil {
		l.t.Fatalf("ip -n %s %s: %v: %s", l.ns(ns), strings.Join(args, " "), err, out)
	}
}

// member makes namespace name with eth0 at 10.213.0.host, wired to the
// bridge through the switch-side interface "p-<name>".
func (l *netnsLab) member(name string, host int) string {
	l.t.Helper()
	if out, err := exec.Command("ip", "netns", "add", l.ns(name)).CombinedOutput(); err != nil {
		l.t.Fatalf("ip netns add: %v: %s", err, out)
	}
	l.t.Cleanup(func() { exec.Command("ip", "netns", "del", l.ns(name)).Run() })
	if out, err := exec.Command("ip", "link", "add", "name", "eth0", "netns", l.ns(name), "type", "veth",
		"peer", "name", "p-"+name, "netns", l.ns("sw")).CombinedOutput(); err != nil {
		l.t.Fatalf("ip link add veth: %v: %s", err, out)
	}
	l.ip("sw", "link", "set", "p-"+name, "master", "br0", "up")
	l.ip(name, "link", "set", "lo", "up")
	addr := fmt.Sprintf("10.213.0.%d", host)
	l.ip(name, "addr", "add", addr+"/24", "dev", "eth0")
	l.ip(name, "link", "set", "eth0", "up")
	return addr
}

// cut takes a member off the bridge (its switch-side link down): nothing
// reaches it and it reaches nothing; heal undoes it.
func (l *netnsLab) cut(name string)  { l.ip("sw", "link", "set", "p-"+name, "down") }
func (l *netnsLab) heal(name string) { l.ip("sw", "link", "set", "p-"+name, "up") }

// dialer dials from inside namespace name: the socket is created by a
// thread that entered the namespace (a socket keeps the namespace it was
// created in). The thread is never given back to the runtime, which ends
// it when the goroutine returns.
func (l *netnsLab) dialer(name string) func(ctx context.Context, network, addr string) (net.Conn, error) {
	path := "/var/run/netns/" + l.ns(name)
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		type res struct {
			c   net.Conn
			err error
		}
		ch := make(chan res, 1)
		go func() {
			runtime.LockOSThread() // not unlocked: the thread dies with this goroutine
			f, err := os.Open(path)
			if err != nil {
				ch <- res{nil, err}
				return
			}
			defer f.Close()
			if err := unix.Setns(int(f.Fd()), unix.CLONE_NEWNET); err != nil {
				ch <- res{nil, fmt.Errorf("setns %s: %w", path, err)}
				return
			}
			d := net.Dialer{Timeout: 500 * time.Millisecond}
			c, err := d.DialContext(ctx, network, addr)
			ch <- res{c, err}
		}()
		r := <-ch
		return r.c, r.err
	}
}

// partNode is one Damselfly process in its namespace.
type partNode struct {
	ns, addr, id string
	cmd          *exec.Cmd
	log          *strings.Builder
}

const partPort = 6379 // every node has its own namespace, so one port fits all

func (l *netnsLab) startNode(bin, name, addr, id string) *partNode {
	l.t.Helper()
	dir := filepath.Join(l.t.TempDir())
	n := &partNode{ns: name, addr: addr, id: id, log: &strings.Builder{}}
	n.cmd = exec.Command("ip", "netns", "exec", l.ns(name), bin, "--port", fmt.Sprint(partPort), "--bind", addr,
		"--cluster-mode", "yes", "--save", "", "--dir", dir, "--shards", "1", "--loglevel", "warning", "--no-protected-mode")
	n.cmd.Stderr = n.log
	if err := n.cmd.Start(); err != nil {
		l.t.Fatal(err)
	}
	l.t.Cleanup(func() { n.cmd.Process.Kill(); n.cmd.Wait() }) // ip netns exec execs the binary: this pid is the server
	return n
}

func (l *netnsLab) client(from string, n *partNode) *redis.Client {
	c := redis.NewClient(&redis.Options{Addr: net.JoinHostPort(n.addr, fmt.Sprint(partPort)), Dialer: l.dialer(from),
		DialTimeout: 500 * time.Millisecond, ReadTimeout: 500 * time.Millisecond, WriteTimeout: 500 * time.Millisecond,
		MaxRetries: -1, DialerRetries: 1, MaintNotificationsConfig: &maintnotifications.Config{Mode: maintnotifications.ModeDisabled}})
	l.t.Cleanup(func() { c.Close() })
	return c
}

// TestClusterPartition: three primaries and three replicas, each a process
// in its own network namespace. Primary 0 is cut off the network: clients
// on the majority side time out on its slots and keep working on the
// others; the controller (this test) promotes its replica with a new
// topology; after the partition heals the old primary gets the topology and
// becomes a replica of the new one. Writes acknowledged with WAIT 1 before
// the cut survive; a write the isolated primary acknowledged alone is lost
// when it resyncs — Redis Cluster's known loss window (Redis bounds it with
// cluster-node-timeout and min-replicas-to-write; here nothing bounds it
// but the controller's reaction time, as with kvrocks).
func TestClusterPartition(t *testing.T) {
	t0 := time.Now()
	lab := newNetnsLab(t)
	bin := buildBinary(t)
	t.Logf("%v: namespaces and binary ready", time.Since(t0))
	ctx := context.Background()
	ranges := []string{"0-5460", "5461-10922", "10923-16383"}
	var nodes []*partNode
	for i := 0; i < 6; i++ {
		name := fmt.Sprintf("n%d", i)
		addr := lab.member(name, i+1)
		nodes = append(nodes, lab.startNode(bin, name, addr, fmt.Sprintf("%040x", 0xe00+i)))
	}
	lab.member("cl", 100) // the clients and the controller, on the majority side
	rc := make([]*redis.Client, 6)
	for i, n := range nodes {
		rc[i] = lab.client("cl", n)
		deadline := time.Now().Add(20 * time.Second)
		for rc[i].Ping(ctx).Err() != nil {
			if time.Now().After(deadline) {
				t.Fatalf("node %d did not start: %v\n%s", i, rc[i].Ping(ctx).Err(), n.log)
			}
			time.Sleep(30 * time.Millisecond)
		}
		if err := rc[i].Do(ctx, "CLUSTERX", "SETNODEID", n.id).Err(); err != nil {
			t.Fatal(err)
		}
	}
	// topology renders the controller's text: master[i] is the index of
	// the primary serving ranges[i]; every other node replicates it.
	topology := func(master [3]int, replicas [3]int) string {
		var b strings.Builder
		for i := 0; i < 3; i++ {
			m, r := nodes[master[i]], nodes[replicas[i]]
			fmt.Fprintf(&b, "%s %s %d master - %s\n", m.id, m.addr, partPort, ranges[i])
			fmt.Fprintf(&b, "%s %s %d slave %s\n", r.id, r.addr, partPort, m.id)
		}
		return b.String()
	}
	push := func(text string, version int, to ...int) {
		t.Helper()
		for _, i := range to {
			if err := rc[i].Do(ctx, "CLUSTERX", "SETNODES", text, version).Err(); err != nil {
				t.Fatalf("SETNODES on node %d: %v", i, err)
			}
		}
	}
	topo1 := topology([3]int{0, 1, 2}, [3]int{3, 4, 5})
	push(topo1, 1, 0, 1, 2, 3, 4, 5)
	for i := 3; i < 6; i++ {
		waitUntil(t, fmt.Sprintf("replica %d to sync", i), 10*time.Second, func() bool {
			return strings.Contains(rc[i].Info(ctx, "replication").Val(), "master_link_status:up")
		})
	}

	cc := redis.NewClusterClient(&redis.ClusterOptions{Addrs: []string{nodes[1].addr + ":6379", nodes[2].addr + ":6379"},
		Dialer: lab.dialer("cl"), DialTimeout: 500 * time.Millisecond, ReadTimeout: 500 * time.Millisecond,
		WriteTimeout: 500 * time.Millisecond, MaxRetries: -1, MaxRedirects: 4, DialerRetries: 1,
		MaintNotificationsConfig: &maintnotifications.Config{Mode: maintnotifications.ModeDisabled}})
	t.Cleanup(func() { cc.Close() })
	// Writes acknowledged by a replica too (WAIT 1), on every primary.
	keyOf := func(prefix string, owner int) string {
		rg, _ := cluster.ParseRange(ranges[owner])
		for i := 0; ; i++ {
			k := fmt.Sprintf("%s:%d", prefix, i)
			if s := cluster.KeySlot([]byte(k)); s >= rg.Start && s <= rg.End {
				return k
			}
		}
	}
	var safe []string
	for owner := 0; owner < 3; owner++ {
		for j := 0; j < 5; j++ {
			k := keyOf(fmt.Sprintf("safe%d-%d", owner, j), owner)
			conn := rc[owner]
			if err := conn.Set(ctx, k, "v-"+k, 0).Err(); err != nil {
				t.Fatal(err)
			}
			if n, err := conn.Wait(ctx, 1, 2*time.Second).Result(); err != nil || n != 1 {
				t.Fatalf("WAIT 1 after SET %s on node %d: %d, %v", k, owner, n, err)
			}
			safe = append(safe, k)
		}
	}
	cut0, other := keyOf("cut", 0), keyOf("other", 1)
	if err := cc.Set(ctx, cut0, "before", 0).Err(); err != nil {
		t.Fatalf("cluster client before the cut: %v", err)
	}

	// The cut: primary 0 is alone.
	t.Logf("%v: setup done, cutting node 0", time.Since(t0))
	lab.cut("n0")
	start := time.Now()
	if err := cc.Set(ctx, cut0, "during", 0).Err(); err == nil {
		t.Fatal("a write to the cut primary's slots succeeded from the majority side")
	} else if !isTimeout(err) {
		t.Fatalf("a write to the cut slots: %v, want a timeout", err)
	}
	t.Logf("%v: the cut slots time out", time.Since(t0))
	if err := cc.Set(ctx, other, "during", 0).Err(); err != nil {
		t.Fatalf("a write to a reachable primary during the partition: %v", err)
	}
	if v, err := cc.Get(ctx, other).Result(); err != nil || v != "during" {
		t.Fatalf("GET of a reachable slot during the partition: %q, %v", v, err)
	}
	// The isolated primary still accepts a write from its own side, but no
	// replica acknowledges it: WAIT 1 answers 0.
	inside := lab.client("n0", nodes[0])
	stale := keyOf("stale", 0)
	if err := inside.Set(ctx, stale, "only-on-old-primary", 0).Err(); err != nil {
		t.Fatalf("write on the isolated primary from its own side: %v", err)
	}
	if n, err := inside.Wait(ctx, 1, 200*time.Millisecond).Result(); err != nil || n != 0 {
		t.Fatalf("WAIT 1 on the isolated primary: %d, %v (want 0)", n, err)
	}

	// The controller promotes replica 3 (it cannot reach node 0: the new
	// topology goes to the others only).
	topo2 := topology([3]int{3, 1, 2}, [3]int{0, 4, 5})
	push(topo2, 2, 1, 2, 3, 4, 5)
	waitUntil(t, "node 3 to act as a primary", 5*time.Second, func() bool {
		return strings.Contains(rc[3].Info(ctx, "replication").Val(), "role:master")
	})
	t.Logf("%v: replica 3 promoted", time.Since(t0))
	cc.ReloadState(ctx)
	waitUntil(t, "the cluster client to write the promoted slots", 5*time.Second, func() bool {
		return cc.Set(ctx, cut0, "after-failover", 0).Err() == nil
	})
	for _, k := range safe {
		if v, err := cc.Get(ctx, k).Result(); err != nil || v != "v-"+k {
			t.Fatalf("WAIT-acknowledged %s after the failover: %q, %v", k, v, err)
		}
	}
	if n, _ := rc[3].Exists(ctx, stale).Result(); n != 0 {
		t.Fatal("the isolated primary's unreplicated write reached the new primary")
	}
	t.Logf("%v: partition to failover took %v", time.Since(t0), time.Since(start))

	// Heal: the controller reaches node 0 again and gives it the topology;
	// it follows the new primary and drops what only it had.
	lab.heal("n0")
	defer func() { t.Logf("%v: healed and resynced", time.Since(t0)) }()
	waitUntil(t, "node 0 to be reachable", 5*time.Second, func() bool { return rc[0].Ping(ctx).Err() == nil })
	push(topo2, 2, 0)
	waitUntil(t, "node 0 to replicate node 3", 10*time.Second, func() bool {
		info := rc[0].Info(ctx, "replication").Val()
		return strings.Contains(info, "role:slave") && strings.Contains(info, "master_link_status:up") &&
			strings.Contains(info, "master_host:"+nodes[3].addr)
	})
	waitUntil(t, "node 0 to hold the new primary's data", 5*time.Second, func() bool {
		return rc[0].Do(ctx, "READONLY").Err() == nil && rc[0].Get(ctx, cut0).Val() == "after-failover"
	})
	if n, _ := rc[0].Exists(ctx, stale).Result(); n != 0 {
		t.Fatal("the write only the isolated primary acknowledged survived its resync (expected the documented loss)")
	}
	for _, k := range safe[:5] {
		if v, err := rc[0].Get(ctx, k).Result(); err != nil || v != "v-"+k {
			t.Fatalf("WAIT-acknowledged %s on the demoted primary: %q, %v", k, v, err)
		}
	}
	w := redis.NewClient(&redis.Options{Addr: nodes[0].addr + ":6379", Dialer: lab.dialer("cl"),
		MaintNotificationsConfig: &maintnotifications.Config{Mode: maintnotifications.ModeDisabled}})
	defer w.Close()
	want := fmt.Sprintf("MOVED %d %s:%d", cluster.KeySlot([]byte(cut0)), nodes[3].addr, partPort)
	if err := w.Set(ctx, cut0, "x", 0).Err(); err == nil || err.Error() != want {
		t.Fatalf("a write on the demoted primary: %v, want %s", err, want)
	}
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout() || errors.Is(err, context.DeadlineExceeded) ||
		strings.Contains(err.Error(), "i/o timeout")
}

func waitUntil(t *testing.T, what string, d time.Duration, ok func() bool) {
	t.Helper()
	for deadline := time.Now().Add(d); !ok(); time.Sleep(30 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
	}
}
