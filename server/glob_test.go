package server

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestGlobPathologicalPatterns replays issue 13's reproductions: patterns of
// nested stars that never match must not hold a shard, nor slow PUBLISH.
func TestGlobPathologicalPatterns(t *testing.T) {
	s := startServer(t)
	rdb := newClient(t, s)
	ctx := context.Background()
	key := strings.Repeat("a", 40)
	rdb.Set(ctx, key, "1", 0)
	bad := strings.Repeat("a*", 20) + "b"

	start := time.Now()
	if keys, err := rdb.Keys(ctx, bad).Result(); err != nil || len(keys) != 0 {
		t.Fatalf("KEYS: %v %v", keys, err)
	}
	if d := time.Since(start); d > time.Second {
		t.Fatalf("KEYS took %v", d)
	}

	// 200k members, one SSCAN over all of them with a failing pattern.
	members := make([]any, 0, 10000)
	for i := 0; i < 200000; i++ {
		members = append(members, strings.Repeat("a", 20)+string(rune('a'+i%26))+strings.Repeat("a", i%7)+strconv.Itoa(i))
		if len(members) == cap(members) {
			rdb.SAdd(ctx, "s", members...)
			members = members[:0]
		}
	}
	start = time.Now()
	_, _, err := rdb.SScan(ctx, "s", 0, "*a*a*a*a*a*a*a*a*a*a*a*b", 1000000).Result()
	if err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d > 3*time.Second {
		t.Fatalf("SSCAN over 200k members took %v", d)
	}

	// A subscriber with a failing pattern must not slow PUBLISH down.
	sub := rdb.PSubscribe(ctx, bad)
	defer sub.Close()
	if _, err := sub.Receive(ctx); err != nil {
		t.Fatal(err)
	}
	start = time.Now()
	for i := 0; i < 100; i++ {
		if n, err := rdb.Publish(ctx, key, "x").Result(); err != nil || n != 0 {
			t.Fatalf("PUBLISH: %v %v", n, err)
		}
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Fatalf("100 PUBLISH took %v", d)
	}
	chans, err := rdb.PubSubChannels(ctx, bad).Result()
	if err != nil || len(chans) != 0 {
		t.Fatalf("PUBSUB CHANNELS: %v %v", chans, err)
	}
}
