package server

import (
	"context"
	"fmt"
	"testing"

	"github.com/redis/go-redis/v9"
)

// TestEncodingAfterReloadMatchesRedis: values read back from a dump (DEBUG
// RELOAD) or a DUMP payload (RESTORE) take the encoding the server's live
// thresholds give, as in Redis, so OBJECT ENCODING does not change across
// a reload. Compared with redis-server 7.0 step by step.
func TestEncodingAfterReloadMatchesRedis(t *testing.T) {
	raddr := startRedis(t, "--enable-debug-command", "yes")
	s := startServer(t)
	ctx := context.Background()
	ours := redis.NewClient(&redis.Options{Addr: s.Addr(), Protocol: 2})
	theirs := redis.NewClient(&redis.Options{Addr: raddr, Protocol: 2})
	defer ours.Close()
	defer theirs.Close()

	keys := []string{"s2", "si", "h1", "z1", "l1", "s200", "h600", "zbig"}
	setup := [][]any{
		{"SADD", "s2", "a", "b"},
		{"SADD", "si", "1", "2", "3"},
		{"HSET", "h1", "f", "v"},
		{"ZADD", "z1", "1", "m"},
		{"RPUSH", "l1", "a", "b"},
	}
	for i := 0; i < 200; i++ {
		setup = append(setup, []any{"SADD", "s200", fmt.Sprint(i)})
	}
	for i := 0; i < 600; i++ {
		setup = append(setup, []any{"HSET", "h600", fmt.Sprint("f", i), "v"})
	}
	setup = append(setup, []any{"ZADD", "zbig", "1", string(make([]byte, 100))})
	steps := [][][]any{
		setup,
		{{"DEBUG", "RELOAD"}},
		{{"CONFIG", "SET", "hash-max-listpack-entries", "0"}, {"CONFIG", "SET", "zset-max-listpack-entries", "0"},
			{"CONFIG", "SET", "set-max-intset-entries", "1"}},
		{{"DEBUG", "RELOAD"}},
		{{"CONFIG", "SET", "hash-max-listpack-entries", "1000"}, {"CONFIG", "SET", "zset-max-listpack-entries", "128"},
			{"CONFIG", "SET", "zset-max-listpack-value", "200"}, {"CONFIG", "SET", "set-max-intset-entries", "512"}},
		{{"DEBUG", "RELOAD"}},
	}
	for i, step := range steps {
		for _, cmd := range step {
			a, errA := ours.Do(ctx, cmd...).Result()
			b, errB := theirs.Do(ctx, cmd...).Result()
			if fmt.Sprint(a, errA) != fmt.Sprint(b, errB) {
				t.Fatalf("step %d %v: ours %v %v, Redis %v %v", i, cmd, a, errA, b, errB)
			}
		}
		for _, k := range keys {
			a, _ := ours.ObjectEncoding(ctx, k).Result()
			b, _ := theirs.ObjectEncoding(ctx, k).Result()
			if a != b {
				t.Errorf("after step %d, OBJECT ENCODING %s: ours %q, Redis %q", i, k, a, b)
			}
		}
	}
	// RESTORE builds under the live thresholds too.
	for _, k := range keys {
		for _, c := range []*redis.Client{ours, theirs} {
			p := c.Dump(ctx, k).Val()
			c.Del(ctx, k)
			if err := c.Restore(ctx, k, 0, p).Err(); err != nil {
				t.Fatalf("RESTORE %s: %v", k, err)
			}
		}
		a, _ := ours.ObjectEncoding(ctx, k).Result()
		b, _ := theirs.ObjectEncoding(ctx, k).Result()
		if a != b {
			t.Errorf("after RESTORE, OBJECT ENCODING %s: ours %q, Redis %q", k, a, b)
		}
	}
}
