package server

import (
	"context"
	"crypto/rand"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// infoFields reads one INFO section through go-redis as ordered names and
// a map of values.
func netInfoFields(t *testing.T, rdb *redis.Client, section string) ([]string, map[string]string) {
	t.Helper()
	text, err := rdb.Info(context.Background(), section).Result()
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	m := map[string]string{}
	for _, line := range strings.Split(text, "\r\n") {
		k, v, ok := strings.Cut(line, ":")
		if ok && !strings.HasPrefix(line, "#") {
			names = append(names, k)
			m[k] = v
		}
	}
	return names, m
}

func infoInt(t *testing.T, m map[string]string, k string) int64 {
	t.Helper()
	n, err := strconv.ParseInt(m[k], 10, 64)
	if err != nil {
		t.Fatalf("%s: %q", k, m[k])
	}
	return n
}

// TestNetStats: INFO stats has Redis 7.0's network fields in Redis's order,
// counts what a go-redis client sends and receives, shows rates while it
// does, and CONFIG RESETSTAT zeroes them.
func TestNetStats(t *testing.T) {
	s := startServer(t)
	rdb := newClient(t, s)
	ctx := context.Background()
	names, m0 := netInfoFields(t, rdb, "stats")
	want := []string{"total_commands_processed", "instantaneous_ops_per_sec", "total_net_input_bytes",
		"total_net_output_bytes", "total_net_repl_input_bytes", "total_net_repl_output_bytes",
		"instantaneous_input_kbps", "instantaneous_output_kbps", "instantaneous_input_repl_kbps",
		"instantaneous_output_repl_kbps", "rejected_connections"}
	at := -1
	for i, n := range names {
		if n == want[0] {
			at = i
		}
	}
	if at < 0 || at+len(want) > len(names) || strings.Join(names[at:at+len(want)], ",") != strings.Join(want, ",") {
		t.Fatalf("INFO stats fields %v, want the run %v", names, want)
	}
	for _, k := range want[6:10] {
		if !strings.Contains(m0[k], ".") || len(m0[k])-strings.IndexByte(m0[k], '.') != 3 {
			t.Fatalf("%s: %q, want two decimals", k, m0[k])
		}
	}

	val := strings.Repeat("v", 64<<10)
	stop := time.Now().Add(400 * time.Millisecond)
	n := 0
	for time.Now().Before(stop) {
		if err := rdb.Set(ctx, "k", val, 0).Err(); err != nil {
			t.Fatal(err)
		}
		if err := rdb.Get(ctx, "k").Err(); err != nil {
			t.Fatal(err)
		}
		n++
	}
	_, m1 := netInfoFields(t, rdb, "stats")
	in := infoInt(t, m1, "total_net_input_bytes") - infoInt(t, m0, "total_net_input_bytes")
	out := infoInt(t, m1, "total_net_output_bytes") - infoInt(t, m0, "total_net_output_bytes")
	if in < int64(n*len(val)) || out < int64(n*len(val)) {
		t.Fatalf("after %d SET+GET of %d bytes: input grew %d, output %d", n, len(val), in, out)
	}
	if in > int64(n*(len(val)+100))+1000 {
		t.Fatalf("input grew %d for %d SETs of %d bytes", in, n, len(val))
	}
	if m1["instantaneous_input_kbps"] == "0.00" || m1["instantaneous_output_kbps"] == "0.00" || m1["instantaneous_ops_per_sec"] == "0" {
		t.Fatalf("rates after traffic: ops %s in %s out %s", m1["instantaneous_ops_per_sec"],
			m1["instantaneous_input_kbps"], m1["instantaneous_output_kbps"])
	}
	if m1["total_net_repl_input_bytes"] != "0" || m1["total_net_repl_output_bytes"] != "0" {
		t.Fatalf("replication bytes without replication: %s %s", m1["total_net_repl_input_bytes"], m1["total_net_repl_output_bytes"])
	}

	if err := rdb.ConfigResetStat(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	_, m2 := netInfoFields(t, rdb, "stats")
	// Only the INFO request itself was read since (its reply is written after).
	if in := infoInt(t, m2, "total_net_input_bytes"); in == 0 || in > 64 {
		t.Fatalf("total_net_input_bytes after RESETSTAT: %d", in)
	}
	if out := infoInt(t, m2, "total_net_output_bytes"); out > 16 {
		t.Fatalf("total_net_output_bytes after RESETSTAT: %d", out)
	}
	for _, k := range []string{"instantaneous_input_kbps", "instantaneous_output_kbps"} {
		if m2[k] != "0.00" {
			t.Fatalf("%s after RESETSTAT: %s", k, m2[k])
		}
	}
}

// TestNetStatsReplication: the stream a primary sends its replica is repl
// output there and repl input on the replica, not client traffic.
func TestNetStatsReplication(t *testing.T) {
	p := startServer(t, func(c *Config) { c.Save = "" })
	prc := newClient(t, p)
	ctx := context.Background()
	const size = 100 << 10
	val := func() string { // incompressible: the full sync's size is the data's
		b := make([]byte, size)
		rand.Read(b)
		return string(b)
	}
	for i := range 5 {
		prc.Set(ctx, "k"+strconv.Itoa(i), val(), 0)
	}
	r := startServer(t, func(c *Config) { c.Save = ""; c.ReplicaOf = p.Addr() })
	rrc := newClient(t, r)
	for i := 5; i < 10; i++ {
		prc.Set(ctx, "k"+strconv.Itoa(i), val(), 0)
	}
	deadline := time.Now().Add(10 * time.Second)
	for rrc.DBSize(ctx).Val() != 10 {
		if time.Now().After(deadline) {
			t.Fatal("replica did not catch up")
		}
		time.Sleep(20 * time.Millisecond)
	}
	_, pm := netInfoFields(t, prc, "stats")
	_, rm := netInfoFields(t, rrc, "stats")
	if got := infoInt(t, pm, "total_net_repl_output_bytes"); got < 10*int64(size) {
		t.Fatalf("primary total_net_repl_output_bytes %d, want >= %d", got, 10*size)
	}
	if got := infoInt(t, rm, "total_net_repl_input_bytes"); got < 10*int64(size) {
		t.Fatalf("replica total_net_repl_input_bytes %d, want >= %d", got, 10*size)
	}
	// The replica's client traffic is only this test's INFO and DBSIZE.
	if got := infoInt(t, rm, "total_net_input_bytes"); got > 4096 {
		t.Fatalf("replica total_net_input_bytes %d: the stream counted as client input", got)
	}
	if got := infoInt(t, pm, "total_net_output_bytes"); got > 4096 {
		t.Fatalf("primary total_net_output_bytes %d: the stream counted as client output", got)
	}
}
