package server

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestCollectionReplicationForms checks the deterministic forms in which
// non-deterministic collection commands reach the replication journal.
func TestCollectionReplicationForms(t *testing.T) {
	var mu sync.Mutex
	var got []string
	// The journal is wrapped before Start: the event loops read it.
	s := startServerPrepared(t, func(s *Server) {
		inner := s.journal
		s.journal = func(db int, args [][]byte) int64 {
			parts := make([]string, len(args))
			for i, a := range args {
				parts[i] = string(a)
			}
			mu.Lock()
			got = append(got, strings.Join(parts, " "))
			mu.Unlock()
			return inner(db, args)
		}
	})
	ctx := context.Background()
	c := newClient(t, s)
	c.SAdd(ctx, "s", "only")
	c.SPop(ctx, "s")
	c.SAdd(ctx, "s", "1", "2")
	c.SRandMember(ctx, "s")
	c.HIncrByFloat(ctx, "h", "f", 1.5)
	c.RPush(ctx, "l", "a", "b", "c")
	c.BLPop(ctx, time.Second, "l")
	c.LMPop(ctx, "right", 5, "l")
	c.ZAdd(ctx, "z")
	c.Do(ctx, "ZADD", "z", "1", "m")
	c.BZPopMin(ctx, time.Second, "z")
	c.LPop(ctx, "nosuch")
	mu.Lock()
	defer mu.Unlock()
	want := []string{
		"sadd s only", "SREM s only", "sadd s 1 2", "HSET h f 1.5", "rpush l a b c",
		"LPOP l", "RPOP l 2", "ZADD z 1 m", "ZPOPMIN z",
	}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Fatalf("journal:\n got %q\nwant %q", got, want)
	}
}

func TestCollectionCopyMemoryEncoding(t *testing.T) {
	s := startServer(t)
	ctx := context.Background()
	c := newClient(t, s)
	c.RPush(ctx, "l", "a", "b")
	c.HSet(ctx, "h", "f", "v")
	c.SAdd(ctx, "s", "x", "y")
	c.Do(ctx, "ZADD", "z", "1", "m")
	for _, k := range []string{"l", "h", "s", "z"} {
		if n := c.Copy(ctx, k, k+"2", 0, false).Val(); n != 1 {
			t.Fatalf("COPY %s: %d", k, n)
		}
		if c.MemoryUsage(ctx, k).Val() <= 0 {
			t.Fatalf("MEMORY USAGE %s", k)
		}
		if a, b := c.ObjectEncoding(ctx, k).Val(), c.ObjectEncoding(ctx, k+"2").Val(); a != b {
			t.Fatalf("encoding %s: %s vs %s", k, a, b)
		}
	}
	// The copies are independent.
	c.RPush(ctx, "l2", "c")
	c.SRem(ctx, "s2", "x")
	if c.LLen(ctx, "l").Val() != 2 || c.SCard(ctx, "s").Val() != 2 {
		t.Fatal("COPY shares the collection")
	}
	if enc := c.ObjectEncoding(ctx, "s").Val(); enc != "hashtable" {
		t.Fatalf("small set encoding %s, Redis 7.0 says hashtable", enc)
	}
}
