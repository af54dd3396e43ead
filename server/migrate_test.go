package server

import (
	"context"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

func hostPort(t *testing.T, addr string) (string, string) {
	t.Helper()
	h, p, err := net.SplitHostPort(addr)
	if err != nil {
		t.Fatal(err)
	}
	return h, p
}

// TestMigrateToRedis: Damselfly moves and copies keys of every type to a
// real redis-server (TTLs kept, another database, REPLACE, BUSYKEY, AUTH
// errors from the target), and redis-server moves keys to Damselfly.
func TestMigrateToRedis(t *testing.T) {
	raddr := startRedis(t)
	s := startServer(t)
	ctx := context.Background()
	d := newClient(t, s)
	r := redis.NewClient(&redis.Options{Addr: raddr, Protocol: 2})
	defer r.Close()
	r.FlushAll(ctx)
	rh, rp := hostPort(t, raddr)

	d.Set(ctx, "str", "v", time.Hour)
	d.RPush(ctx, "list", "a", "b", "c")
	d.HSet(ctx, "hash", "f", "1", "g", "2")
	d.ZAdd(ctx, "zset", redis.Z{Score: 1.5, Member: "m"})
	d.SAdd(ctx, "set", "x", "y")
	d.XAdd(ctx, &redis.XAddArgs{Stream: "stream", ID: "1-1", Values: []string{"f", "v"}})
	d.PFAdd(ctx, "hll", "a", "b", "c")

	// One key, default form, into database 2 of the target.
	if got, err := d.Do(ctx, "MIGRATE", rh, rp, "str", 2, 5000).Result(); err != nil || got != "OK" {
		t.Fatalf("MIGRATE str: %v %v", got, err)
	}
	if n := d.Exists(ctx, "str").Val(); n != 0 {
		t.Fatal("str still here after MIGRATE")
	}
	r2 := redis.NewClient(&redis.Options{Addr: raddr, DB: 2, Protocol: 2})
	defer r2.Close()
	if v := r2.Get(ctx, "str").Val(); v != "v" {
		t.Fatalf("str on redis db 2: %q", v)
	}
	if ttl := r2.TTL(ctx, "str").Val(); ttl < 59*time.Minute || ttl > time.Hour {
		t.Fatalf("str's TTL on redis: %v", ttl)
	}

	// KEYS with COPY into database 0 (a SELECT after the cached db 2).
	keys := []any{"MIGRATE", rh, rp, "", 0, 5000, "COPY", "KEYS", "list", "hash", "nosuch", "zset", "set", "stream", "hll"}
	if got, err := d.Do(ctx, keys...).Result(); err != nil || got != "OK" {
		t.Fatalf("MIGRATE COPY KEYS: %v %v", got, err)
	}
	if d.Exists(ctx, "list", "hash", "zset", "set", "stream", "hll").Val() != 6 {
		t.Fatal("COPY removed keys")
	}
	if got := r.LRange(ctx, "list", 0, -1).Val(); strings.Join(got, ",") != "a,b,c" {
		t.Fatalf("list on redis: %q", got)
	}
	if got := r.HGet(ctx, "hash", "g").Val(); got != "2" {
		t.Fatalf("hash on redis: %q", got)
	}
	if got := r.ZScore(ctx, "zset", "m").Val(); got != 1.5 {
		t.Fatalf("zset on redis: %v", got)
	}
	if got := r.PFCount(ctx, "hll").Val(); got != 3 {
		t.Fatalf("hll on redis: %d", got)
	}
	if got := r.XLen(ctx, "stream").Val(); got != 1 {
		t.Fatalf("stream on redis: %d", got)
	}

	// Again without REPLACE: the target's BUSYKEY, nothing deleted here.
	_, err := d.Do(ctx, "MIGRATE", rh, rp, "list", 0, 5000).Result()
	if err == nil || err.Error() != "ERR Target instance replied with error: BUSYKEY Target key name already exists." {
		t.Fatalf("MIGRATE onto an existing key: %v", err)
	}
	if d.Exists(ctx, "list").Val() != 1 {
		t.Fatal("list deleted although the target refused it")
	}
	// REPLACE moves it.
	d.RPush(ctx, "list", "d")
	if got, err := d.Do(ctx, "MIGRATE", rh, rp, "list", 0, 5000, "REPLACE").Result(); err != nil || got != "OK" {
		t.Fatalf("MIGRATE REPLACE: %v %v", got, err)
	}
	if got := r.LRange(ctx, "list", 0, -1).Val(); strings.Join(got, ",") != "a,b,c,d" {
		t.Fatalf("list on redis after REPLACE: %q", got)
	}
	if d.Exists(ctx, "list").Val() != 0 {
		t.Fatal("list still here after MIGRATE REPLACE")
	}
	// AUTH to a target without a password: its error, keys kept.
	_, err = d.Do(ctx, "MIGRATE", rh, rp, "hash", 0, 5000, "REPLACE", "AUTH", "pw").Result()
	if err == nil || !strings.HasPrefix(err.Error(), "ERR Target instance replied with error: ERR AUTH <password> called without any password configured") {
		t.Fatalf("MIGRATE AUTH: %v", err)
	}
	if d.Exists(ctx, "hash").Val() != 1 {
		t.Fatal("hash deleted after an AUTH error")
	}

	// The other way: redis-server migrates to Damselfly, with AUTH2 to a
	// Damselfly that needs a password.
	sp := startServer(t, func(c *Config) { c.RequirePass = "secret" })
	dp := redis.NewClient(&redis.Options{Addr: sp.Addr(), Password: "secret", Protocol: 2})
	defer dp.Close()
	dh, dport := hostPort(t, sp.Addr())
	r.Set(ctx, "fromredis", "hello", time.Hour)
	r.RPush(ctx, "rlist", "1", "2")
	if got, err := r.Do(ctx, "MIGRATE", dh, dport, "", 0, 5000, "AUTH2", "default", "secret", "KEYS", "fromredis", "rlist", "zset").Result(); err != nil || got != "OK" {
		t.Fatalf("redis MIGRATE to Damselfly: %v %v", got, err)
	}
	if v := dp.Get(ctx, "fromredis").Val(); v != "hello" {
		t.Fatalf("fromredis on Damselfly: %q", v)
	}
	if ttl := dp.TTL(ctx, "fromredis").Val(); ttl < 59*time.Minute {
		t.Fatalf("fromredis TTL on Damselfly: %v", ttl)
	}
	if got := dp.LRange(ctx, "rlist", 0, -1).Val(); strings.Join(got, ",") != "1,2" {
		t.Fatalf("rlist on Damselfly: %q", got)
	}
	if got := dp.ZScore(ctx, "zset", "m").Val(); got != 1.5 {
		t.Fatalf("zset on Damselfly: %v", got)
	}
	if r.Exists(ctx, "fromredis", "rlist", "zset").Val() != 0 {
		t.Fatal("redis kept migrated keys")
	}
	// Damselfly to Damselfly with AUTH, and a wrong password.
	_, err = d.Do(ctx, "MIGRATE", dh, dport, "set", 0, 5000, "AUTH", "wrong").Result()
	if err == nil || !strings.HasPrefix(err.Error(), "ERR Target instance replied with error: WRONGPASS") {
		t.Fatalf("MIGRATE with a wrong password: %v", err)
	}
	if got, err := d.Do(ctx, "MIGRATE", dh, dport, "set", 0, 5000, "AUTH", "secret").Result(); err != nil || got != "OK" {
		t.Fatalf("MIGRATE Damselfly to Damselfly: %v %v", got, err)
	}
	if got := dp.SCard(ctx, "set").Val(); got != 2 {
		t.Fatalf("set on the second Damselfly: %d", got)
	}
}
