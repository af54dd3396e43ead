package server

import (
	"context"
	"strings"
	"testing"
)

// TestWatchdog: a command that holds shards past the threshold is counted
// and named in INFO; a blocking command's wait (holding nothing) is not.
func TestWatchdog(t *testing.T) {
	s := startServer(t)
	rdb := newClient(t, s)
	ctx := context.Background()
	if err := rdb.Do(ctx, "DEBUG", "POPULATE", 100000).Err(); err != nil {
		t.Fatal(err)
	}
	if err := rdb.ConfigSet(ctx, "watchdog-threshold-ms", "100").Err(); err != nil {
		t.Fatal(err)
	}
	base := infoField(t, rdb, "stats", "watchdog_slow_commands") // DEBUG POPULATE may count
	if err := rdb.BLPop(ctx, 300e6, "nosuch").Err(); err == nil {
		t.Fatal("BLPOP returned a value")
	}
	if n := infoField(t, rdb, "stats", "watchdog_slow_commands"); n != base {
		t.Fatalf("a blocked wait was reported (%d)", n)
	}
	rdb.ConfigSet(ctx, "watchdog-threshold-ms", "1")
	for i := 0; i < 5 && infoField(t, rdb, "stats", "watchdog_slow_commands") == base; i++ {
		rdb.Keys(ctx, "*")
	}
	if n := infoField(t, rdb, "stats", "watchdog_slow_commands"); n == base {
		t.Fatal("KEYS over 100k keys was not reported at 1 ms")
	}
	// On a loaded machine INFO or CONFIG may themselves pass 1 ms and be
	// the last one named: KEYS must be named right after it ran, in one
	// of a few tries.
	named := false
	for i := 0; i < 10 && !named; i++ {
		rdb.Keys(ctx, "*")
		named = strings.Contains(rdb.Info(ctx, "stats").Val(), "watchdog_last_command:keys")
	}
	if !named {
		t.Fatal("the last slow command is not named")
	}
	if got := argShape([][]byte{[]byte("abc"), nil}); got != "2 args: 3B 0B" {
		t.Fatalf("argShape: %q", got)
	}
}
