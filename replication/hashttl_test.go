package replication_test

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// TestHashFieldExpiryReplicates: a Damselfly replica of a Damselfly
// primary gets hash field TTLs through the full sync (RDB_TYPE_HASH_METADATA)
// and the stream (HPEXPIREAT with absolute ms, HPERSIST, HSETEX PXAT), and
// the primary's field expiry arrives as HDEL, the key going with its last
// field.
func TestHashFieldExpiryReplicates(t *testing.T) {
	ctx := context.Background()
	p := startServer(t)
	pc := client(t, p.Addr())
	at := time.Now().Add(time.Hour).UnixMilli()
	// Before the sync: travels in the RDB.
	pc.Do(ctx, "HSET", "synced", "a", "1", "b", "2")
	pc.Do(ctx, "HPEXPIREAT", "synced", at, "FIELDS", "1", "a")

	r := startServer(t)
	rc := client(t, r.Addr())
	replicaOf(t, rc, p.Addr())
	waitFor(t, 10*time.Second, "link up", func() bool { return info(rc, "replication")["master_link_status"] == "up" })

	// After: the stream.
	pc.Do(ctx, "HSET", "s", "a", "1", "b", "2", "c", "3")
	pc.Do(ctx, "HEXPIRE", "s", "100", "FIELDS", "2", "a", "b")
	pc.Do(ctx, "HPERSIST", "s", "FIELDS", "1", "b")
	pc.Do(ctx, "HSETEX", "x", "EX", "100", "FIELDS", "1", "f", "v")
	pc.Do(ctx, "HSET", "gone", "a", "1", "b", "2")
	pc.Do(ctx, "HPEXPIRE", "gone", "50", "FIELDS", "2", "a", "b")
	waitConverged(t, pc, rc)

	ttl := func(key string, fields ...any) string {
		args := append([]any{"HPEXPIRETIME", key, "FIELDS", len(fields)}, fields...)
		v, err := rc.Do(ctx, args...).Result()
		if err != nil {
			t.Fatal(err)
		}
		return fmt.Sprint(v)
	}
	want := func(key string, exp string, fields ...any) {
		t.Helper()
		pv := fmt.Sprint(pc.Do(ctx, append([]any{"HPEXPIRETIME", key, "FIELDS", len(fields)}, fields...)...).Val())
		if got := ttl(key, fields...); got != exp || pv != exp {
			t.Fatalf("%s: replica %s, primary %s, want %s", key, got, pv, exp)
		}
	}
	ats := strconv.FormatInt(at, 10)
	want("synced", "["+ats+" -1]", "a", "b")
	same := func(key string, fields ...any) {
		t.Helper()
		pv := fmt.Sprint(pc.Do(ctx, append([]any{"HPEXPIRETIME", key, "FIELDS", len(fields)}, fields...)...).Val())
		if got := ttl(key, fields...); got != pv || !strings.HasPrefix(got, "[17") {
			t.Fatalf("%s: replica %s, primary %s", key, got, pv)
		}
	}
	same("s", "a", "b", "c")
	same("x", "f")
	// The primary's active cycle expires "gone"'s fields: HDEL, and the
	// key goes on the replica too.
	waitFor(t, 5*time.Second, "gone to go on the replica", func() bool { return rc.Exists(ctx, "gone").Val() == 0 })
	if pc.Exists(ctx, "gone").Val() != 0 {
		t.Fatal("gone still on the primary")
	}
	waitConverged(t, pc, rc)
}

// TestHashFieldExpiryHiddenBeforeHDEL: a field past its deadline whose
// HDEL has not come yet (the primary's expiry held by CLIENT PAUSE WRITE)
// is hidden from the field readers on the replica and on the paused
// primary, while HLEN still counts it, as redis-server 7.4.1 and 8.0 do
// (checked by hand: HLEN 3, HGETALL c 3, HEXISTS 0, HGET nil, HTTL -2 -1,
// HRANDFIELD -5 on the replica may return the expired fields). After the
// pause, active expiry sends one HDEL per field and both converge.
func TestHashFieldExpiryHiddenBeforeHDEL(t *testing.T) {
	ctx := context.Background()
	p := startServer(t)
	pc := client(t, p.Addr())
	r := startServer(t)
	rc := client(t, r.Addr())
	replicaOf(t, rc, p.Addr())
	waitFor(t, 10*time.Second, "link up", func() bool { return info(rc, "replication")["master_link_status"] == "up" })
	pc.Do(ctx, "HSET", "h", "a", "1", "b", "2", "c", "3")
	pc.Do(ctx, "HPEXPIRE", "h", "150", "FIELDS", "2", "a", "b")
	waitConverged(t, pc, rc)
	if err := pc.Do(ctx, "CLIENT", "PAUSE", "5000", "WRITE").Err(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(300 * time.Millisecond)
	check := func(who string, do func(args ...any) string) {
		t.Helper()
		for _, tc := range []struct {
			args []any
			want string
		}{
			{[]any{"HLEN", "h"}, "3"},
			{[]any{"HGETALL", "h"}, "[c 3]"},
			{[]any{"HKEYS", "h"}, "[c]"},
			{[]any{"HVALS", "h"}, "[3]"},
			{[]any{"HEXISTS", "h", "a"}, "0"},
			{[]any{"HGET", "h", "a"}, "redis: nil"},
			{[]any{"HSTRLEN", "h", "b"}, "0"},
			{[]any{"HMGET", "h", "a", "c"}, "[<nil> 3]"},
			{[]any{"HTTL", "h", "FIELDS", "2", "a", "c"}, "[-2 -1]"},
			{[]any{"HSCAN", "h", "0"}, "[0 [c 3]]"},
			{[]any{"EXISTS", "h"}, "1"},
			{[]any{"HLEN", "h"}, "3"},
		} {
			if got := do(tc.args...); got != tc.want {
				t.Errorf("%s %v = %s, want %s", who, tc.args, got, tc.want)
			}
		}
	}
	check("replica", func(args ...any) string { return doString(ctx, rc, args...) })
	check("paused primary", func(args ...any) string { return doString(ctx, pc, args...) })
	pc.Do(ctx, "CLIENT", "UNPAUSE")
	waitFor(t, 5*time.Second, "the HDELs on the replica", func() bool { return rc.HLen(ctx, "h").Val() == 1 })
	waitConverged(t, pc, rc)
}

// doString runs a command and prints its reply (or error) with fmt.
func doString(ctx context.Context, c *redis.Client, args ...any) string {
	v, err := c.Do(ctx, args...).Result()
	if err != nil {
		return err.Error()
	}
	return fmt.Sprint(v)
}
