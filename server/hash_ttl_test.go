package server

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// Hash field expiry. redis-server 7.0 (the one the testdata scripts run
// against) has none of these commands, so the replies below are Redis
// 7.4/8's, taken from its t_hash.c and asserted by hand.

// hfeDo runs a command and renders its reply (or error) as text.
func hfeDo(t *testing.T, c *redis.Client, args ...any) string {
	t.Helper()
	v, err := c.Do(context.Background(), args...).Result()
	if err != nil && err != redis.Nil {
		return "ERR:" + err.Error()
	}
	if err == redis.Nil {
		return "<nil>"
	}
	return fmt.Sprint(v)
}

func hfeWant(t *testing.T, c *redis.Client, want string, args ...any) {
	t.Helper()
	if got := hfeDo(t, c, args...); got != want {
		t.Fatalf("%v: got %q, want %q", args, got, want)
	}
}

func TestHashFieldExpiryReplies(t *testing.T) {
	s := startServer(t)
	c := newClient(t, s)
	hfeWant(t, c, "3", "HSET", "h", "a", "1", "b", "2", "c", "3")
	hfeWant(t, c, "[1 -2]", "HEXPIRE", "h", "100", "FIELDS", "2", "a", "zz")
	hfeWant(t, c, "[100 -1 -2]", "HTTL", "h", "FIELDS", "3", "a", "b", "zz")
	hfeWant(t, c, "listpackex", "OBJECT", "ENCODING", "h")
	hfeWant(t, c, "[-2 -2]", "HTTL", "nokey", "FIELDS", "2", "a", "b")
	hfeWant(t, c, "[0]", "HEXPIRE", "h", "100", "NX", "FIELDS", "1", "a")
	hfeWant(t, c, "[0 0]", "HEXPIRE", "h", "50", "GT", "FIELDS", "2", "a", "b")
	hfeWant(t, c, "[1 0]", "HEXPIRE", "h", "200", "GT", "FIELDS", "2", "a", "b")
	hfeWant(t, c, "[1 1]", "HEXPIRE", "h", "150", "LT", "FIELDS", "2", "a", "b")
	hfeWant(t, c, "[1]", "HEXPIRE", "h", "150", "XX", "FIELDS", "1", "b")
	hfeWant(t, c, "[-2]", "HEXPIRE", "nokey", "150", "FIELDS", "1", "b")
	at := time.Now().Add(time.Hour).UnixMilli()
	hfeWant(t, c, "[1]", "HPEXPIREAT", "h", strconv.FormatInt(at, 10), "FIELDS", "1", "a")
	hfeWant(t, c, "["+strconv.FormatInt(at, 10)+"]", "HPEXPIRETIME", "h", "FIELDS", "1", "a")
	hfeWant(t, c, "["+strconv.FormatInt((at+999)/1000, 10)+"]", "HEXPIRETIME", "h", "FIELDS", "1", "a")
	hfeWant(t, c, "[1 -1 -2]", "HPERSIST", "h", "FIELDS", "3", "a", "c", "zz")
	hfeWant(t, c, "[-1]", "HTTL", "h", "FIELDS", "1", "a")
	// An overwriting HSET drops the field's TTL; HINCRBY keeps it.
	hfeWant(t, c, "[1 1]", "HEXPIRE", "h", "100", "FIELDS", "2", "a", "c")
	hfeWant(t, c, "0", "HSET", "h", "a", "5")
	hfeWant(t, c, "4", "HINCRBY", "h", "c", "1")
	hfeWant(t, c, "[-1 100]", "HTTL", "h", "FIELDS", "2", "a", "c")
	// A time in the past deletes the field (2); the last one, the key.
	hfeWant(t, c, "[2]", "HEXPIREAT", "h", "1", "FIELDS", "1", "a")
	hfeWant(t, c, "[2 2]", "HPEXPIRE", "h", "0", "FIELDS", "2", "b", "c")
	hfeWant(t, c, "0", "EXISTS", "h")

	// Errors, in Redis's order and words.
	hfeWant(t, c, "1", "HSET", "h", "a", "1")
	for _, tc := range []struct {
		want string
		args []any
	}{
		{"ERR:ERR Parameter `numFields` should be greater than 0", []any{"HEXPIRE", "h", "10", "FIELDS", "0", "a"}},
		{"ERR:ERR Parameter `numFields` should be greater than 0", []any{"HEXPIRE", "h", "10", "FIELDS", "x", "a"}},
		{"ERR:ERR The `numfields` parameter must match the number of arguments", []any{"HEXPIRE", "h", "10", "FIELDS", "2", "a"}},
		{"ERR:ERR invalid expire time in 'hexpire' command", []any{"HEXPIRE", "h", "9999999999999", "FIELDS", "1", "a"}},
		{"ERR:ERR invalid expire time in 'hpexpireat' command", []any{"HPEXPIREAT", "h", "281474976710656", "FIELDS", "1", "a"}},
		{"ERR:ERR invalid expire time, must be >= 0", []any{"HEXPIRE", "h", "-1", "FIELDS", "1", "a"}},
		{"ERR:ERR value is not an integer or out of range", []any{"HEXPIRE", "h", "x", "FIELDS", "1", "a"}},
		{"ERR:ERR Mandatory argument FIELDS is missing or not at the right position", []any{"HEXPIRE", "h", "10", "XY", "1", "a"}},
		{"ERR:ERR Number of fields must be a positive integer", []any{"HTTL", "h", "FIELDS", "-1", "a"}},
		{"ERR:ERR The `numfields` parameter must match the number of arguments", []any{"HPERSIST", "h", "FIELDS", "2", "a"}},
		{"ERR:ERR wrong number of arguments for 'httl' command", []any{"HTTL", "h", "FIELDS", "1"}},
		{"ERR:ERR Only one of EX, PX, EXAT, PXAT or KEEPTTL arguments can be specified", []any{"HSETEX", "h", "EX", "1", "KEEPTTL", "FIELDS", "1", "a", "1"}},
		{"ERR:ERR Only one of FXX or FNX arguments can be specified", []any{"HSETEX", "h", "FNX", "FXX", "FIELDS", "1", "a", "1"}},
		{"ERR:ERR invalid number of fields", []any{"HSETEX", "h", "FIELDS", "0", "a", "1"}},
		{"ERR:ERR wrong number of arguments for 'hsetex' command", []any{"HSETEX", "h", "FIELDS", "2", "a", "1"}},
		{"ERR:ERR unknown argument: FOO", []any{"HSETEX", "h", "FOO", "FIELDS", "1", "a", "1"}},
		{"ERR:WRONGTYPE Operation against a key holding the wrong kind of value", []any{"HEXPIRE", "s", "10", "FIELDS", "1", "a"}},
	} {
		if tc.args[1] == "s" {
			c.Set(context.Background(), "s", "v", 0)
		}
		hfeWant(t, c, tc.want, tc.args...)
	}

	// Redis 8: HGETDEL, HGETEX, HSETEX.
	hfeWant(t, c, "1", "HSETEX", "g", "EX", "100", "FIELDS", "2", "a", "1", "b", "2")
	hfeWant(t, c, "[100 100]", "HTTL", "g", "FIELDS", "2", "a", "b")
	hfeWant(t, c, "0", "HSETEX", "g", "FNX", "FIELDS", "1", "a", "9")
	hfeWant(t, c, "0", "HSETEX", "g", "FXX", "FIELDS", "2", "a", "9", "zz", "1")
	hfeWant(t, c, "1", "HSETEX", "g", "FXX", "KEEPTTL", "FIELDS", "1", "a", "9")
	hfeWant(t, c, "[100]", "HTTL", "g", "FIELDS", "1", "a")
	hfeWant(t, c, "1", "HSETEX", "g", "FIELDS", "1", "a", "9")
	hfeWant(t, c, "[-1]", "HTTL", "g", "FIELDS", "1", "a")
	hfeWant(t, c, "[9 <nil>]", "HGETEX", "g", "EX", "50", "FIELDS", "2", "a", "zz")
	hfeWant(t, c, "[50]", "HTTL", "g", "FIELDS", "1", "a")
	hfeWant(t, c, "[9]", "HGETEX", "g", "PERSIST", "FIELDS", "1", "a")
	hfeWant(t, c, "[-1]", "HTTL", "g", "FIELDS", "1", "a")
	hfeWant(t, c, "[<nil> <nil>]", "HGETEX", "nokey", "FIELDS", "2", "a", "b")
	hfeWant(t, c, "[9 <nil>]", "HGETDEL", "g", "FIELDS", "2", "a", "zz")
	hfeWant(t, c, "[2]", "HGETDEL", "g", "FIELDS", "1", "b")
	hfeWant(t, c, "0", "EXISTS", "g")
	hfeWant(t, c, "0", "HSETEX", "g", "FXX", "FIELDS", "1", "a", "1")
	hfeWant(t, c, "0", "EXISTS", "g")

	// COMMAND INFO shows Redis 7.4's facts.
	hfeWant(t, c, "[[hexpire -6 [write denyoom fast] 1 1 1 [@write @hash @fast] [] [[flags [RW update] begin_search [type index spec [index 1]] find_keys [type range spec [lastkey 0 keystep 1 limit 0]]]] []]]", "COMMAND", "INFO", "hexpire")
}

// TestHashFieldExpiryExpires: an expired field is invisible at once (lazy
// expiry), the active cycle removes fields nobody reads, the last field
// takes the key with it, and the events are Redis's.
func TestHashFieldExpiryExpires(t *testing.T) {
	s := startServer(t)
	c := newClient(t, s)
	ctx := context.Background()
	if err := c.ConfigSet(ctx, "notify-keyspace-events", "Kgh").Err(); err != nil {
		t.Fatal(err)
	}
	sub := redis.NewClient(&redis.Options{Addr: s.Addr()})
	defer sub.Close()
	ps := sub.PSubscribe(ctx, "__keyspace@0__:*")
	defer ps.Close()
	if _, err := ps.Receive(ctx); err != nil {
		t.Fatal(err)
	}

	hfeWant(t, c, "3", "HSET", "lazy", "a", "1", "b", "2", "c", "3")
	hfeWant(t, c, "[1]", "HPEXPIRE", "lazy", "40", "FIELDS", "1", "a")
	hfeWant(t, c, "[1]", "HPERSIST", "lazy", "FIELDS", "1", "a")
	hfeWant(t, c, "[1 1]", "HPEXPIRE", "lazy", "40", "FIELDS", "2", "a", "b")
	for _, ev := range []string{"hset", "hexpire", "hpersist", "hexpire"} {
		if m := nextMsg(t, ps); m.Payload != ev {
			t.Fatalf("event %q, want %q", m.Payload, ev)
		}
	}
	time.Sleep(60 * time.Millisecond)
	hfeWant(t, c, "<nil>", "HGET", "lazy", "a")
	hfeWant(t, c, "1", "HLEN", "lazy")
	hfeWant(t, c, "[c 3]", "HGETALL", "lazy")
	if m := nextMsg(t, ps); m.Payload != "hexpired" {
		t.Fatalf("event %q, want hexpired", m.Payload)
	}

	// Active expiry: nobody reads "active"; the cycle deletes its fields
	// and, with the last, the key.
	hset := []any{"HSET", "active"}
	for i := 0; i < 50; i++ {
		hset = append(hset, "f"+strconv.Itoa(i), "v")
	}
	c.Do(ctx, hset...)
	fields := []any{"HPEXPIRE", "active", "30", "FIELDS", "50"}
	for i := 0; i < 50; i++ {
		fields = append(fields, "f"+strconv.Itoa(i))
	}
	c.Do(ctx, fields...)
	if m := nextMsg(t, ps); m.Payload != "hset" {
		t.Fatalf("event %q, want hset", m.Payload)
	}
	if m := nextMsg(t, ps); m.Payload != "hexpire" {
		t.Fatalf("event %q, want hexpire", m.Payload)
	}
	if m := nextMsg(t, ps); m.Payload != "hexpired" || m.Channel != "__keyspace@0__:active" {
		t.Fatalf("event %q on %s, want hexpired on active", m.Payload, m.Channel)
	}
	if m := nextMsg(t, ps); m.Payload != "del" {
		t.Fatalf("event %q, want del", m.Payload)
	}
	if n := c.Info(ctx, "stats").Val(); !strings.Contains(n, "expired_subkeys:52\r\n") {
		t.Fatalf("INFO stats does not count the 52 expired fields:\n%s", n)
	}
	sh, h := s.Store().ShardOf([]byte("active"))
	sh.Lock()
	_, ok := sh.DB(0).Find(h, []byte("active"))
	sh.Unlock()
	if ok {
		t.Fatal("the active cycle left a hash whose fields all expired")
	}
}

// TestHashFieldExpiryPersists: field TTLs survive DUMP/RESTORE and a
// save and reload (RDB_TYPE_HASH_METADATA); a plain hash still dumps as
// Redis 7.0 can read it.
func TestHashFieldExpiryPersists(t *testing.T) {
	s := startServer(t)
	c := newClient(t, s)
	ctx := context.Background()
	at := time.Now().Add(time.Hour).UnixMilli()
	ats := strconv.FormatInt(at, 10)
	hfeWant(t, c, "3", "HSET", "h", "a", "1", "b", "2", "c", "3")
	hfeWant(t, c, "[1 1]", "HPEXPIREAT", "h", ats, "FIELDS", "2", "a", "b")
	big := []any{"HSET", "big"}
	for i := 0; i < 600; i++ {
		big = append(big, "f"+strconv.Itoa(i), "v")
	}
	c.Do(ctx, big...)
	hfeWant(t, c, "[1]", "HPEXPIREAT", "big", ats, "FIELDS", "1", "f7")
	payload, err := c.Dump(ctx, "h").Result()
	if err != nil {
		t.Fatal(err)
	}
	if payload[0] != 24 {
		t.Fatalf("DUMP type byte %d, want 24 (RDB_TYPE_HASH_METADATA)", payload[0])
	}
	if err := c.Restore(ctx, "h2", 0, payload).Err(); err != nil {
		t.Fatal(err)
	}
	hfeWant(t, c, "["+ats+" "+ats+" -1]", "HPEXPIRETIME", "h2", "FIELDS", "3", "a", "b", "c")
	hfeWant(t, c, "OK", "DEBUG", "RELOAD")
	hfeWant(t, c, "["+ats+" "+ats+" -1]", "HPEXPIRETIME", "h", "FIELDS", "3", "a", "b", "c")
	hfeWant(t, c, "["+ats+" -1]", "HPEXPIRETIME", "big", "FIELDS", "2", "f7", "f8")
	hfeWant(t, c, "600", "HLEN", "big")
	// HPERSIST of the last TTL makes the hash plain again: RDB 10's type.
	hfeWant(t, c, "[1 1]", "HPERSIST", "h", "FIELDS", "2", "a", "b")
	if p := c.Dump(ctx, "h").Val(); p[0] == 24 {
		t.Fatal("a hash without field TTLs dumped as RDB_TYPE_HASH_METADATA")
	}
}

// TestHashFieldExpiryGoRedis: go-redis's own typed hash-field-expiry API
// (as an application would call it) works against the server.
func TestHashFieldExpiryGoRedis(t *testing.T) {
	s := startServer(t)
	c := redis.NewClient(&redis.Options{Addr: s.Addr()}) // RESP3, go-redis's default
	defer c.Close()
	ctx := context.Background()
	c.HSet(ctx, "h", "a", "1", "b", "2")
	if r, err := c.HExpire(ctx, "h", time.Minute, "a", "zz").Result(); err != nil || fmt.Sprint(r) != "[1 -2]" {
		t.Fatalf("HExpire: %v %v", r, err)
	}
	if r, err := c.HTTL(ctx, "h", "a", "b").Result(); err != nil || fmt.Sprint(r) != "[60 -1]" {
		t.Fatalf("HTTL: %v %v", r, err)
	}
	if r, err := c.HPersist(ctx, "h", "a").Result(); err != nil || fmt.Sprint(r) != "[1]" {
		t.Fatalf("HPersist: %v %v", r, err)
	}
	if r, err := c.HSetEXWithArgs(ctx, "h", &redis.HSetEXOptions{Condition: redis.HSetEXFXX, ExpirationType: redis.HSetEXExpirationPX, ExpirationVal: 60000}, "a", "3").Result(); err != nil || r != 1 {
		t.Fatalf("HSetEX: %v %v", r, err)
	}
	if r, err := c.HGetEXWithArgs(ctx, "h", &redis.HGetEXOptions{ExpirationType: redis.HGetEXExpirationPERSIST}, "a").Result(); err != nil || fmt.Sprint(r) != "[3]" {
		t.Fatalf("HGetEX: %v %v", r, err)
	}
	if r, err := c.HGetDel(ctx, "h", "a", "b").Result(); err != nil || fmt.Sprint(r) != "[3 2]" {
		t.Fatalf("HGetDel: %v %v", r, err)
	}
	if n := c.Exists(ctx, "h").Val(); n != 0 {
		t.Fatalf("EXISTS after HGETDEL of every field: %d", n)
	}
}

// TestHashFieldExpiryAOF: the AOF holds the deterministic forms
// (HPEXPIREAT, HPERSIST, HSETEX PXAT, HDEL of expired fields) and a
// restart replays them to the same deadlines.
func TestHashFieldExpiryAOF(t *testing.T) {
	dir := t.TempDir()
	s := startServer(t, aofOn(dir, "always"), func(c *Config) { c.Save = "" })
	c := newClient(t, s)
	hfeWant(t, c, "3", "HSET", "h", "a", "1", "b", "2", "c", "3")
	hfeWant(t, c, "[1 1 1]", "HEXPIRE", "h", "1000", "FIELDS", "3", "a", "b", "c")
	hfeWant(t, c, "[1]", "HPERSIST", "h", "FIELDS", "1", "b")
	hfeWant(t, c, "1", "HSETEX", "x", "PX", "100000", "FIELDS", "1", "f", "v")
	hfeWant(t, c, "[1]", "HPEXPIRE", "h", "20", "FIELDS", "1", "c")
	time.Sleep(40 * time.Millisecond)
	hfeWant(t, c, "<nil>", "HGET", "h", "c") // expired: HDEL in the AOF
	before := hfeDo(t, c, "HPEXPIRETIME", "h", "FIELDS", "3", "a", "b", "c") + hfeDo(t, c, "HPEXPIRETIME", "x", "FIELDS", "1", "f")
	s.Close()
	s2 := startServer(t, aofOn(dir, "everysec"))
	c2 := newClient(t, s2)
	after := hfeDo(t, c2, "HPEXPIRETIME", "h", "FIELDS", "3", "a", "b", "c") + hfeDo(t, c2, "HPEXPIRETIME", "x", "FIELDS", "1", "f")
	if before != after || !strings.Contains(after, " -1 -2]") {
		t.Fatalf("before restart %s, after %s", before, after)
	}
}
