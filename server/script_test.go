package server

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// SCRIPT KILL from another connection stops a read-only busy script (it
// needs no shard lock); a script that wrote cannot be killed.
func TestScriptKill(t *testing.T) {
	s := startServer(t)
	ctx := context.Background()
	a, b := newClient(t, s), newClient(t, s)
	// b's connection (and go-redis's CLIENT SETINFO on it) is made before
	// the script starts: like Redis, the server answers nothing but the
	// allowed commands until busy-reply-threshold while a script runs.
	if err := b.Ping(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- a.Eval(ctx, "local i = 0 while true do i = i + 1 end", nil).Err() }()
	deadline := time.Now().Add(5 * time.Second)
	for {
		err := b.ScriptKill(ctx).Err()
		if err == nil {
			break
		}
		if !strings.Contains(err.Error(), "NOTBUSY") || time.Now().After(deadline) {
			t.Fatal(err)
		}
		time.Sleep(5 * time.Millisecond)
	}
	err := <-done
	if err == nil || !strings.HasPrefix(err.Error(), "ERR Script killed by user with SCRIPT KILL... script: ") {
		t.Fatalf("killed script replied %v", err)
	}
	// The server is usable again.
	if err := a.Set(ctx, "k", "v", 0).Err(); err != nil {
		t.Fatal(err)
	}

	writer := func() {
		done <- a.Eval(ctx, "redis.call('set', 'w', '1') local t = redis.call('time') while tonumber(redis.call('time')[1]) < t[1] + 1 do end return 1", nil).Err()
	}
	go writer()
	for {
		err := b.ScriptKill(ctx).Err()
		if err != nil && strings.HasPrefix(err.Error(), "UNKILLABLE") {
			break
		}
		if err == nil {
			// The kill landed before the script's first write, which
			// Redis allows too: run it again.
			if err := <-done; err == nil || !strings.Contains(err.Error(), "Script killed") {
				t.Fatalf("killed script replied %v", err)
			}
			go writer()
		}
		if err != nil && strings.HasPrefix(err.Error(), "NOTBUSY") {
			select {
			case e := <-done: // the script ran its second before a kill met it
				if e != nil {
					t.Fatal(e)
				}
				go writer()
			default:
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("SCRIPT KILL of a writing script: %v", err)
		}
		time.Sleep(5 * time.Millisecond)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

// go-redis's Script helper (EVALSHA falling back to EVAL) and keys on
// several shards.
func TestScriptGoRedis(t *testing.T) {
	s := startServer(t)
	ctx := context.Background()
	rdb := newClient(t, s)
	sum := redis.NewScript(`local n = 0 for i, k in ipairs(KEYS) do n = n + redis.call('incrby', k, ARGV[1]) end return n`)
	keys := []string{"a", "b", "c", "d", "e", "f"}
	for i := 0; i < 3; i++ {
		n, err := sum.Run(ctx, rdb, keys, 2).Int()
		if err != nil || n != 2*(i+1)*len(keys) {
			t.Fatalf("run %d: %d, %v", i, n, err)
		}
	}
	// Errors never take the server down.
	for _, body := range []string{"return redis.call('get', 'a', 'b', 'c')", "error(nil)", "return string.rep('x', -1)",
		"local t = setmetatable({}, {__index = function(t, k) return t[k] end}) return t.x", "return {err=1}"} {
		rdb.Eval(ctx, body, nil)
	}
	if err := rdb.Ping(ctx).Err(); err != nil {
		t.Fatal(err)
	}
}
