package server

import (
	"context"
	"fmt"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

func clusterEmulated(c *Config) { c.ClusterMode = "emulated" }

// startRedisCluster starts redis-server with cluster-enabled yes owning
// every slot, or skips.
func startRedisCluster(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	addr := startRedis(t, "--cluster-enabled", "yes", "--cluster-config-file", dir+"/nodes.conf", "--dir", dir)
	r := dialAddr(t, addr)
	r.do("CLUSTER", "ADDSLOTSRANGE", "0", "16383")
	r.reply()
	for i := 0; i < 200; i++ {
		r.do("CLUSTER", "INFO")
		if strings.Contains(strings.Join(r.reply(), "\n"), "cluster_state:ok") {
			return addr
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatal("redis-server's one-node cluster did not become ok")
	return ""
}

// TestClusterEmulatedMatchesRedis compares the emulated one-node cluster
// with redis-server 7.0 in cluster mode owning all slots, reply by reply
// (RESP2 and RESP3). Node IDs and ports differ by nature; the IP differs
// because a lone redis-server has not learned its own address (it answers
// ""), while we answer the address the client reached.
func TestClusterEmulatedMatchesRedis(t *testing.T) {
	raddr := startRedisCluster(t)
	s := startServer(t, clusterEmulated)
	cases := [][]string{
		{"HELLO", "2"},
		{"CLUSTER", "INFO"},
		{"CLUSTER", "NODES"},
		{"CLUSTER", "SLOTS"},
		{"CLUSTER", "SHARDS"},
		{"CLUSTER", "LINKS"},
		{"CLUSTER", "KEYSLOT", "foo"},
		{"CLUSTER", "KEYSLOT", "{user1000}.following"},
		{"CLUSTER", "KEYSLOT"},
		{"SET", "foo", "bar"},
		{"SET", "{foo}2", "bar"},
		{"CLUSTER", "COUNTKEYSINSLOT", "12182"},
		{"CLUSTER", "COUNTKEYSINSLOT", "16384"},
		{"CLUSTER", "COUNTKEYSINSLOT", "-1"},
		{"CLUSTER", "COUNTKEYSINSLOT", "x"},
		{"CLUSTER", "GETKEYSINSLOT", "5061", "10"},
		{"CLUSTER", "GETKEYSINSLOT", "12182", "-1"},
		{"CLUSTER", "GETKEYSINSLOT", "16384", "1"},
		{"CLUSTER", "GETKEYSINSLOT", "1", "x"},
		{"MSET", "a", "1", "b", "2"},
		{"MSET", "{t}a", "1", "{t}b", "2"},
		{"MGET", "{t}a", "{t}b"},
		{"DEL", "a", "b"},
		{"SELECT", "1"},
		{"SELECT", "0"},
		{"SELECT", "x"},
		{"SWAPDB", "0", "1"},
		{"MOVE", "foo", "1"},
		{"EVAL", "redis.call('set','a',1); return redis.call('set','b',1)", "0"},
		{"EVAL", "return redis.pcall('mset','a',1,'b',2)", "0"},
		{"EVAL", "return redis.call('mset','a',1,'b',2)", "0"},
		{"EVAL", "return 1", "2", "a", "b"},
		{"EVAL", "return 1", "2", "{a}1", "{a}2"},
		{"MULTI"},
		{"SET", "a", "1"},
		{"SET", "b", "1"},
		{"EXEC"},
		{"MULTI"},
		{"MSET", "a", "1", "b", "2"},
		{"EXEC"},
		{"READONLY"},
		{"READWRITE"},
		{"ASKING"},
		{"GET", "foo"},
		{"SUNIONSTORE", "x", "y"},
		{"HELLO", "3"},
		{"CLUSTER", "SLOTS"},
		{"CLUSTER", "SHARDS"},
		{"CLUSTER", "INFO"},
	}
	ours, theirs := dialRaw(t, s), dialAddr(t, raddr)
	_, sport, _ := net.SplitHostPort(s.Addr())
	_, rport, _ := net.SplitHostPort(raddr)
	id := func(r *rawConn) string {
		r.do("CLUSTER", "MYID")
		return r.reply()[1]
	}
	sid, rid := id(ours), id(theirs)
	norm := func(lines []string, port, nodeID string) string {
		out := strings.Join(lines, "\n")
		out = strings.ReplaceAll(out, nodeID, "<id>")
		out = strings.ReplaceAll(out, "@"+strconv.Itoa(atoi(port)+10000), "@<cport>")
		out = strings.ReplaceAll(out, port, "<port>")
		out = strings.ReplaceAll(out, "127.0.0.1", "")
		out = strings.ReplaceAll(out, "\n\"\"", "\n")
		if strings.HasPrefix(out, "*14") || strings.HasPrefix(out, "%7\n$6\nserver") { // HELLO: client IDs differ
			out = out[:strings.Index(out, "id\n")] + out[strings.Index(out, "mode"):]
		}
		return out
	}
	for _, cmd := range cases {
		ours.do(cmd...)
		theirs.do(cmd...)
		got, want := norm(ours.reply(), sport, sid), norm(theirs.reply(), rport, rid)
		// Bulk lengths change with the normalised text.
		if strip(got) != strip(want) {
			t.Errorf("%v:\n got %q\nwant %q", cmd, got, want)
		}
	}
}

func atoi(s string) int { n, _ := strconv.Atoi(s); return n }

// strip drops RESP length headers, which depend on the normalised parts.
func strip(s string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if len(l) > 0 && (l[0] == '$' || l[0] == '=') {
			continue
		}
		out = append(out, l)
	}
	return strings.Join(out, "\n")
}

// TestClusterClientEmulated: go-redis's ClusterClient works against the
// emulated node.
func TestClusterClientEmulated(t *testing.T) {
	s := startServer(t, clusterEmulated)
	ctx := context.Background()
	cc := redis.NewClusterClient(&redis.ClusterOptions{Addrs: []string{s.Addr()}})
	defer cc.Close()
	for i := 0; i < 200; i++ {
		if err := cc.Set(ctx, fmt.Sprint("k", i), i, 0).Err(); err != nil {
			t.Fatal(err)
		}
	}
	if v, err := cc.Get(ctx, "k77").Result(); err != nil || v != "77" {
		t.Fatalf("GET k77 = %q, %v", v, err)
	}
	n := 0
	for slot := 0; slot < 16384; slot += 1 {
		c, err := cc.ClusterCountKeysInSlot(ctx, slot).Result()
		if err != nil {
			t.Fatal(err)
		}
		n += int(c)
	}
	if n != 200 {
		t.Fatalf("COUNTKEYSINSLOT over all slots: %d keys, want 200", n)
	}
}
