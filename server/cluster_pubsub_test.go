package server

import (
	"context"
	"fmt"
	"net"
	"testing"

	"github.com/damselflydb/damselfly/cluster"
)

// TestClusterShardChannelsDroppedWithSlot: a topology that gives a slot to
// another node unsubscribes the shard channels of that slot here, telling
// their subscribers with SUNSUBSCRIBE (RESP2 array, RESP3 push), while the
// shard channels of slots still served stay.
func TestClusterShardChannelsDroppedWithSlot(t *testing.T) {
	s := startServer(t, func(c *Config) { c.ClusterMode = "yes"; c.Save = "" })
	_, port, _ := net.SplitHostPort(s.Addr())
	me, other := fmt.Sprintf("%040x", 0xa1), fmt.Sprintf("%040x", 0xb2)
	ctx := context.Background()
	ctl := newClient(t, s)
	if err := ctl.Do(ctx, "CLUSTERX", "SETNODEID", me).Err(); err != nil {
		t.Fatal(err)
	}
	if err := ctl.Do(ctx, "CLUSTERX", "SETNODES", fmt.Sprintf("%s 127.0.0.1 %s master - 0-16383", me, port), 1).Err(); err != nil {
		t.Fatal(err)
	}
	gone, kept := "news{a}", "news{b}"
	slot := cluster.KeySlot([]byte(gone))
	if cluster.KeySlot([]byte(kept)) == slot {
		t.Fatal("test channels share a slot")
	}
	a, b := dialRaw(t, s), dialRaw(t, s)
	a.do("SSUBSCRIBE", gone)
	expectReply(t, a, "ssubscribe", "*3", "$10", "ssubscribe", "$7", gone, ":1")
	a.do("SSUBSCRIBE", kept)
	expectReply(t, a, "ssubscribe", "*3", "$10", "ssubscribe", "$7", kept, ":2")
	b.do("HELLO", "3")
	b.reply()
	b.do("SSUBSCRIBE", gone)
	expectReply(t, b, "ssubscribe resp3", ">3", "$10", "ssubscribe", "$7", gone, ":1")

	topo := fmt.Sprintf("%s 127.0.0.1 %s master -", me, port)
	if slot > 0 {
		topo += fmt.Sprintf(" 0-%d", slot-1)
	}
	if slot < cluster.Slots-1 {
		topo += fmt.Sprintf(" %d-%d", slot+1, cluster.Slots-1)
	}
	topo += fmt.Sprintf("\n%s 127.0.0.1 1 master - %d", other, slot)
	if err := ctl.Do(ctx, "CLUSTERX", "SETNODES", topo, 2).Err(); err != nil {
		t.Fatal(err)
	}
	expectReply(t, a, "dropped (RESP2)", "*3", "$12", "sunsubscribe", "$7", gone, ":1")
	expectReply(t, b, "dropped (RESP3)", ">3", "$12", "sunsubscribe", "$7", gone, ":0")
	if got, _ := ctl.Do(ctx, "PUBSUB", "SHARDCHANNELS").StringSlice(); len(got) != 1 || got[0] != kept {
		t.Fatalf("shard channels after the move: %q", got)
	}
	// b left Pub/Sub mode (RESP3 anyway); a still gets its kept channel.
	if n := ctl.Do(ctx, "SPUBLISH", kept, "hi").Val(); n != int64(1) {
		t.Fatalf("SPUBLISH kept = %v", n)
	}
	expectReply(t, a, "kept message", "*3", "$8", "smessage", "$7", kept, "$2", "hi")
}
