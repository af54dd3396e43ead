package server

import (
	"bufio"
	"context"
	"fmt"
	"strings"
	"testing"
	"time"
)

// TestReplicaOutputLimitConfigSet: CONFIG SET client-output-buffer-limit
// replica ... applies to replicas at once, as in Redis: a replica that stops
// reading is dropped once its pending stream passes the new hard limit,
// while the default 256mb would have kept it.
func TestReplicaOutputLimitConfigSet(t *testing.T) {
	s := startServer(t)
	ctx := context.Background()
	rdb := newClient(t, s)
	if err := rdb.ConfigSet(ctx, "client-output-buffer-limit", "replica 1mb 0 0").Err(); err != nil {
		t.Fatal(err)
	}
	if got := rdb.ConfigGet(ctx, "client-output-buffer-limit").Val()["client-output-buffer-limit"]; !strings.Contains(got, "slave 1048576 0 0") {
		t.Fatalf("CONFIG GET: %q", got)
	}
	repl := dialRaw(t, s)
	rd := bufio.NewReader(repl.nc)
	repl.send("REPLCONF capa eof capa psync2\r\n")
	repl.nc.SetReadDeadline(time.Now().Add(10 * time.Second))
	if l, _ := rd.ReadString('\n'); l != "+OK\r\n" {
		t.Fatalf("REPLCONF: %q", l)
	}
	repl.send("PSYNC ? -1\r\n")
	for deadline := time.Now().Add(10 * time.Second); !strings.Contains(rdb.Info(ctx, "replication").Val(), "state=online"); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("replica never online: %s", rdb.Info(ctx, "replication").Val())
		}
	}
	// The replica reads nothing from here on: 4 MB of writes pass the 1 MB
	// hard limit whatever the socket buffers hold.
	val := strings.Repeat("x", 64<<10)
	for i := 0; i < 64; i++ {
		rdb.Set(ctx, fmt.Sprintf("k%d", i), val, 0)
	}
	for deadline := time.Now().Add(10 * time.Second); !strings.Contains(rdb.Info(ctx, "replication").Val(), "connected_slaves:0"); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("replica past the hard limit still attached: %s", rdb.Info(ctx, "replication").Val())
		}
	}
}
