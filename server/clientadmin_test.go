package server

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// TestClientPauseWrite: reads go on, writes (and EVAL) wait for the pause's
// end, keys do not expire meanwhile; UNPAUSE releases the waiters at once.
func TestClientPauseWrite(t *testing.T) {
	s := startServer(t)
	ctx := context.Background()
	admin, rdb := newClient(t, s), newClient(t, s)
	rdb.Set(ctx, "k", "v", 0)
	rdb.Set(ctx, "ttl", "v", 100*time.Millisecond)
	// WRITE: reads go on.
	if err := admin.Do(ctx, "CLIENT", "PAUSE", "2000", "WRITE").Err(); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if v := rdb.Get(ctx, "k").Val(); v != "v" || time.Since(start) > 200*time.Millisecond {
		t.Errorf("read paused by WRITE: %q after %v", v, time.Since(start))
	}
	// The expired key is missing but not deleted during the pause.
	time.Sleep(250 * time.Millisecond)
	if n := rdb.Exists(ctx, "ttl").Val(); n != 0 {
		t.Errorf("expired key visible: %d", n)
	}
	if n := rdb.DBSize(ctx).Val(); n != 2 {
		t.Errorf("DBSIZE %d during the pause: the expired key was deleted", n)
	}
	done := make(chan time.Duration, 2)
	go func() {
		t0 := time.Now()
		rdb.Set(ctx, "k", "w", 0)
		done <- time.Since(t0)
	}()
	go func() {
		t0 := time.Now()
		rdb.Eval(ctx, "return redis.call('incr', 'n')", nil)
		done <- time.Since(t0)
	}()
	time.Sleep(200 * time.Millisecond)
	if err := admin.ClientUnpause(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		d := <-done
		if d < 150*time.Millisecond || d > 1500*time.Millisecond {
			t.Errorf("write waited %v, want until UNPAUSE (~200ms)", d)
		}
	}
	waitFor(t, "expiry to resume", func() bool { return rdb.DBSize(ctx).Val() == 2 }) // k and n

	// ALL: reads wait too, until the end of the pause.
	if err := admin.Do(ctx, "CLIENT", "PAUSE", "300").Err(); err != nil {
		t.Fatal(err)
	}
	start = time.Now()
	if v := rdb.Get(ctx, "k").Val(); v != "w" {
		t.Fatalf("GET %q", v)
	}
	if d := time.Since(start); d < 200*time.Millisecond {
		t.Errorf("GET during CLIENT PAUSE ALL answered after %v", d)
	}
}

// TestClientPauseDoesNotBlockLoops: with every connection on 1-2 event
// loops, a paused writer must not hold up other clients' reads.
func TestClientPauseDoesNotBlockLoops(t *testing.T) {
	s := startServer(t)
	ctx := context.Background()
	admin := newClient(t, s)
	admin.Do(ctx, "CLIENT", "PAUSE", "500", "WRITE")
	defer admin.ClientUnpause(ctx)
	writers := make([]*rawConn, 8)
	for i := range writers {
		writers[i] = dialRaw(t, s)
		writers[i].do("SET", "x", "1")
	}
	start := time.Now()
	for range 20 {
		r := dialRaw(t, s)
		r.do("GET", "x")
		r.reply()
	}
	if d := time.Since(start); d > 300*time.Millisecond {
		t.Errorf("reads took %v behind paused writers", d)
	}
	for _, w := range writers {
		if got := w.reply(); got[0] != "+OK" {
			t.Errorf("paused SET: %q", got)
		}
	}
}

// TestClientKillFilters uses go-redis's CLIENT KILL filters.
func TestClientKillFilters(t *testing.T) {
	s := startServer(t)
	ctx := context.Background()
	admin := newClient(t, s)
	victim := dialRaw(t, s)
	victim.do("CLIENT", "ID")
	id := strings.TrimPrefix(victim.reply()[0], ":")
	sub := dialRaw(t, s)
	sub.do("SUBSCRIBE", "ch")
	sub.reply()

	if n, err := admin.ClientKillByFilter(ctx, "TYPE", "pubsub").Result(); err != nil || n != 1 {
		t.Fatalf("TYPE pubsub: %d %v", n, err)
	}
	if n, err := admin.ClientKillByFilter(ctx, "MAXAGE", "100").Result(); err != nil || n != 0 {
		t.Fatalf("MAXAGE 100: %d %v", n, err)
	}
	if n, err := admin.ClientKillByFilter(ctx, "ID", id, "USER", "default").Result(); err != nil || n != 1 {
		t.Fatalf("ID: %d %v", n, err)
	}
	victim.nc.SetReadDeadline(time.Now().Add(2 * time.Second))
	if _, err := victim.rd.ReadByte(); err == nil {
		t.Error("killed client still connected")
	}
	// The old form, and LADDR.
	old := dialRaw(t, s)
	old.do("PING")
	old.reply() // registered by the server
	if err := admin.ClientKill(ctx, old.nc.LocalAddr().String()).Err(); err != nil {
		t.Fatal(err)
	}
	other := newClient(t, s)
	other.Ping(ctx)
	if n, err := admin.ClientKillByFilter(ctx, "LADDR", s.Addr(), "SKIPME", "yes").Result(); err != nil || n < 1 {
		t.Fatalf("LADDR: %d %v", n, err)
	}
	// SKIPME no kills the caller too: its reply arrives, then the connection ends.
	me := dialRaw(t, s)
	me.do("CLIENT", "KILL", "LADDR", s.Addr(), "SKIPME", "no")
	if got := me.reply(); !strings.HasPrefix(got[0], ":") {
		t.Fatalf("SKIPME no: %q", got)
	}
	me.nc.SetReadDeadline(time.Now().Add(2 * time.Second))
	if _, err := me.rd.ReadByte(); err == nil {
		t.Error("SKIPME no: caller still connected")
	}
}

// TestClientFlagsAndSetInfo: NO-EVICT and NO-TOUCH flags, SETINFO fields and
// LIST filters.
func TestClientFlagsAndSetInfo(t *testing.T) {
	s := startServer(t)
	ctx := context.Background()
	rdb := redis.NewClient(&redis.Options{Addr: s.Addr(), Protocol: 2, DisableIdentity: true})
	defer rdb.Close()
	conn := rdb.Conn()
	defer conn.Close()
	for _, args := range [][]any{
		{"CLIENT", "NO-EVICT", "on"}, {"CLIENT", "NO-TOUCH", "on"},
		{"CLIENT", "SETINFO", "lib-name", "mylib"}, {"CLIENT", "SETINFO", "LIB-VER", "1.2"},
	} {
		if err := conn.Do(ctx, args...).Err(); err != nil {
			t.Fatalf("%v: %v", args, err)
		}
	}
	info := conn.Do(ctx, "CLIENT", "INFO").String()
	for _, want := range []string{"flags=eT ", "lib-name=mylib lib-ver=1.2"} {
		if !strings.Contains(info, want) {
			t.Errorf("CLIENT INFO lacks %q: %s", want, info)
		}
	}
	for args, want := range map[[4]string]string{
		{"CLIENT", "SETINFO", "lib-foo", "x"}:    "ERR Unrecognized option 'lib-foo'",
		{"CLIENT", "SETINFO", "lib-name", "a b"}: "ERR lib-name cannot contain spaces, newlines or special characters.",
		{"CLIENT", "NO-TOUCH", "maybe", ""}:      "ERR syntax error",
	} {
		a := []any{args[0], args[1], args[2]}
		if args[3] != "" {
			a = append(a, args[3])
		}
		if err := conn.Do(ctx, a...).Err(); err == nil || err.Error() != want {
			t.Errorf("%v: %v, want %s", a, err, want)
		}
	}
	id := conn.ClientID(ctx).Val()
	list := rdb.Do(ctx, "CLIENT", "LIST", "ID", id, 99999).String()
	if strings.Count(list, "id=") != 1 || !strings.Contains(list, "lib-name=mylib") {
		t.Errorf("CLIENT LIST ID: %s", list)
	}
	if l := rdb.Do(ctx, "CLIENT", "LIST", "TYPE", "normal").String(); strings.Count(l, "id=") != 2 {
		t.Errorf("CLIENT LIST TYPE normal: %s", l)
	}

	// NO-TOUCH: reads keep the idle time; TOUCH still touches.
	rdb.Set(ctx, "nt", "v", 0)
	time.Sleep(2100 * time.Millisecond)
	conn.Get(ctx, "nt")
	if idle := rdb.ObjectIdleTime(ctx, "nt").Val(); idle < 2*time.Second {
		t.Errorf("GET with NO-TOUCH reset the idle time: %v", idle)
	}
	conn.Touch(ctx, "nt")
	if idle := rdb.ObjectIdleTime(ctx, "nt").Val(); idle >= 2*time.Second {
		t.Errorf("TOUCH with NO-TOUCH did not touch: %v", idle)
	}
}
