package server

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/bradfitz/gomemcache/memcache"

	"github.com/damselflydb/damselfly/cluster"
)

// TestClusterMemcached: in cluster mode the memcached front end serves the
// keys of its slots and answers every other key with SERVER_ERROR MOVED
// <slot> <owner>, through gomemcache and on the wire for meta commands,
// multi-key get, noreply and the data block of a refused store.
func TestClusterMemcached(t *testing.T) {
	ctx := context.Background()
	var nodes []*Server
	var ports []int
	ids := []string{strings.Repeat("1", 40), strings.Repeat("2", 40)}
	for i := 0; i < 2; i++ {
		s := startServer(t, func(c *Config) { c.ClusterMode = "yes"; c.MemcachedPort = -1; c.Save = "" })
		_, p, _ := net.SplitHostPort(s.Addr())
		nodes, ports = append(nodes, s), append(ports, atoi(p))
	}
	topo := fmt.Sprintf("%s 127.0.0.1 %d master - 0-8191\n%s 127.0.0.1 %d master - 8192-16383\n", ids[0], ports[0], ids[1], ports[1])
	for i, s := range nodes {
		r := newClient(t, s)
		if err := r.Do(ctx, "CLUSTERX", "SETNODEID", ids[i]).Err(); err != nil {
			t.Fatal(err)
		}
		if err := r.Do(ctx, "CLUSTERX", "SETNODES", topo, 1).Err(); err != nil {
			t.Fatal(err)
		}
	}
	mine, mine2, theirs := keyInSlotRange(0, 8191), keyInSlotRange(0, 8191)+"x", keyInSlotRange(8192, 16383)
	for cluster.KeySlot([]byte(mine2)) > 8191 {
		mine2 += "x"
	}
	moved := fmt.Sprintf("SERVER_ERROR MOVED %d 127.0.0.1:%d", cluster.KeySlot([]byte(theirs)), ports[1])

	mc := memcache.New(nodes[0].MemcachedAddr())
	mc.Timeout = 5 * time.Second
	for _, k := range []string{mine, mine2} {
		if err := mc.Set(&memcache.Item{Key: k, Value: []byte("v-" + k)}); err != nil {
			t.Fatalf("set of an owned key: %v", err)
		}
	}
	if it, err := mc.Get(mine); err != nil || string(it.Value) != "v-"+mine {
		t.Fatalf("get of an owned key: %+v, %v", it, err)
	}
	if err := mc.Set(&memcache.Item{Key: theirs, Value: []byte("x")}); err == nil || !strings.Contains(err.Error(), moved) {
		t.Fatalf("set of another node's key: %v, want %q in it", err, moved)
	}
	if _, err := mc.Get(theirs); err == nil || !strings.Contains(err.Error(), moved) {
		t.Fatalf("get of another node's key: %v", err)
	}
	if _, err := mc.GetMulti([]string{mine, theirs, mine2}); err == nil || !strings.Contains(err.Error(), moved) {
		t.Fatalf("multi-get with another node's key: %v", err)
	}
	if got, err := mc.GetMulti([]string{mine, mine2}); err != nil || len(got) != 2 {
		t.Fatalf("multi-get of owned keys in different slots: %v, %v", got, err)
	}
	if _, err := mc.Increment(theirs, 1); err == nil || !strings.Contains(err.Error(), moved) {
		t.Fatalf("incr of another node's key: %v", err)
	}
	if err := mc.Delete(theirs); err == nil || !strings.Contains(err.Error(), moved) {
		t.Fatalf("delete of another node's key: %v", err)
	}
	// The owner serves it.
	mc1 := memcache.New(nodes[1].MemcachedAddr())
	if err := mc1.Set(&memcache.Item{Key: theirs, Value: []byte("there")}); err != nil {
		t.Fatalf("set on the owner: %v", err)
	}
	if it, err := mc1.Get(theirs); err != nil || string(it.Value) != "there" {
		t.Fatalf("get on the owner: %+v, %v", it, err)
	}

	// On the wire: meta commands, quiet modes, noreply, swallowed data.
	nc, err := net.Dial("tcp", nodes[0].MemcachedAddr())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	nc.SetDeadline(time.Now().Add(5 * time.Second))
	fmt.Fprintf(nc, "mg %s v\r\nms %s 2\r\nhi\r\nmd %s q\r\nma %s\r\nset %s 0 0 2 noreply\r\nhi\r\nget %s %s\r\nmg %s v\r\nmn\r\n",
		theirs, theirs, theirs, theirs, theirs, mine, theirs, mine)
	rd := bufio.NewReader(nc)
	want := []string{moved, moved, moved, moved, moved, "VA " + fmt.Sprint(len("v-"+mine)), "v-" + mine, "MN"}
	for i, w := range want {
		line, err := rd.ReadString('\n')
		if err != nil || strings.TrimRight(line, "\r\n") != w {
			t.Fatalf("reply %d: %q, %v; want %q", i, line, err, w)
		}
	}
}
