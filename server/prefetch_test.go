package server

import (
	"bytes"
	"io"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"
	"unsafe"
)

// pipelineReplies writes reqs on a new connection in parts (each one write,
// so the server reads batches that end mid-request too) and returns all the
// bytes received until the connection stays quiet.
// sameRepliesAsRedis sends stream to redis-server and to addr in pieces of
// cut bytes (odd sizes, so that batches end inside requests), fails unless
// the replies are the same bytes, and returns them.
func sameRepliesAsRedis(t *testing.T, redisAddr, addr, stream string, cut int) []byte {
	t.Helper()
	var parts []string
	for len(stream) > 0 {
		n := min(len(stream), cut)
		parts = append(parts, stream[:n])
		stream = stream[n:]
	}
	want := pipelineReplies(t, redisAddr, parts)
	if got := pipelineReplies(t, addr, parts); !bytes.Equal(got, want) {
		i := 0
		for i < len(got) && i < len(want) && got[i] == want[i] {
			i++
		}
		from := max(0, i-300)
		t.Fatalf("replies differ from Redis's at byte %d of %d (%d from Redis):\n got %q\nwant %q", i, len(got), len(want), got[from:min(len(got), i+300)], want[from:min(len(want), i+300)])
	}
	return want
}

func pipelineReplies(t *testing.T, addr string, parts []string) []byte {
	t.Helper()
	nc, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	var got bytes.Buffer
	buf := make([]byte, 64<<10)
	for i, p := range parts {
		if _, err := io.WriteString(nc, p); err != nil {
			t.Fatal(err)
		}
		// A short pause between parts lets each arrive as its own batch
		// (a late reply is read with the next part's); after the last,
		// read until the server has been silent for a while.
		idle := 20 * time.Millisecond
		if i == len(parts)-1 {
			idle = 300 * time.Millisecond
		}
		for {
			_ = nc.SetReadDeadline(time.Now().Add(idle))
			n, err := nc.Read(buf)
			got.Write(buf[:n])
			if err != nil {
				break
			}
		}
	}
	return got.Bytes()
}

// Prefetching the keys of pipelined requests (prefetch.go) is a hint: a
// pipeline mixing keyed commands, SELECT, MULTI/EXEC, an inline request,
// a many-argument MSET, unknown commands and requests split across reads
// gets, byte for byte, Redis 7.0's replies.
func TestPrefetchPipelineAgainstRedis(t *testing.T) {
	redisAddr := startRedis(t)
	s := startServer(t, func(c *Config) { c.Save = "" })
	var b strings.Builder
	for i := 0; i < 40; i++ {
		k := "k" + strconv.Itoa(i%13)
		b.WriteString(encode("SET", k, strings.Repeat("v", i)))
		b.WriteString(encode("GET", k))
		b.WriteString(encode("INCR", "n"+strconv.Itoa(i%5)))
		b.WriteString(encode("LPUSH", "l", k))
		b.WriteString(encode("HSET", "h", k, "x"))
		switch i % 10 {
		case 3:
			b.WriteString(encode("SELECT", "1"))
			b.WriteString(encode("GET", k))
			b.WriteString(encode("SET", k, "db1"))
			b.WriteString(encode("SELECT", "0"))
		case 5:
			b.WriteString(encode("MULTI"))
			b.WriteString(encode("INCR", k))
			b.WriteString(encode("GET", "n1"))
			b.WriteString(encode("EXEC"))
		case 7:
			b.WriteString("GET " + k + "\r\n")
			b.WriteString(encode("NOSUCH", k))
			mset := []string{"MSET"}
			for j := 0; j < 12; j++ {
				mset = append(mset, "m"+strconv.Itoa(j), k)
			}
			b.WriteString(encode(mset...))
			b.WriteString(encode("GET", "m11"))
		case 8: // hash tags route by the tag, not the key's hash
			b.WriteString(encode("SET", "{t}"+k, k))
			b.WriteString(encode("GET", "{t}"+k))
			b.WriteString(encode("GET", "{t}k1"))
		case 9:
			b.WriteString(encode("GET"))
			b.WriteString(encode("DEL", k, "n1"))
		}
	}
	want := sameRepliesAsRedis(t, redisAddr, s.Addr(), b.String(), 997)
	if len(want) < 1000 {
		t.Fatalf("only %d bytes of replies", len(want))
	}
}

// The window's key hints (keyHint): a pipelined request's lockKey takes the
// shard and hash computed by the prefetch, which are the key's own; a key
// slice elsewhere in memory with the same bytes is hashed afresh.
func TestPrefetchKeyHint(t *testing.T) {
	s := New(Config{Shards: 4, DBNum: 16})
	c := &Client{srv: s, id: 1, fd: -1, in: make([]byte, readBufSize), p: newParser(), proto: 2, authed: true}
	c.p.Authed = true
	var req []byte
	keys := []string{"a", "{t}b", "PING", "c"}
	for _, k := range keys {
		if k == "PING" {
			req = append(req, encode("PING", "x")...) // no key, but part of the window
			continue
		}
		req = append(req, encode("GET", k)...)
	}
	c.r, c.w = 0, copy(c.in, req)
	c.clk.batch = true
	for i, k := range keys {
		args, n, err := c.p.Next(c.in[c.r:c.w])
		if err != nil {
			t.Fatal(err)
		}
		c.prefetchNext(n)
		if k == "PING" {
			if c.keyHint.p != 0 {
				t.Fatalf("request %d (PING x) has a key hint", i)
			}
		} else {
			if c.keyHint.p == 0 {
				t.Fatalf("request %d (GET %s) has no key hint", i, k)
			}
			wantSh, wantH := s.store.ShardOf([]byte(k))
			sh, h := c.shardOf(args[1])
			if sh != wantSh || h != wantH {
				t.Fatalf("GET %s: hint gives shard %p hash %x, want %p %x", k, sh, h, wantSh, wantH)
			}
			other := []byte("zz" + k)[2:] // same bytes, another address
			if sh, h := c.shardOf(other); sh != wantSh || h != wantH {
				t.Fatalf("GET %s from a copy: shard %p hash %x, want %p %x", k, sh, h, wantSh, wantH)
			}
			if c.keyHint.p == uintptr(unsafe.Pointer(unsafe.SliceData(other))) {
				t.Fatal("the copy shares the input's address")
			}
		}
		c.execute(args)
		c.r += n
	}
	c.processInput() // nothing left: clears the hint
	if c.keyHint != (keyHint{}) {
		t.Fatalf("hint left after the batch: %+v", c.keyHint)
	}
}

// Prefetching hash fields (x-field commands) is a hint too: pipelined hash
// commands on a hash past the listpack limit (hashtable encoding), on a
// small one, on a missing key and on a string key (WRONGTYPE), with fields
// present and absent, get Redis 7.0's replies byte for byte.
func TestPrefetchHashFieldsAgainstRedis(t *testing.T) {
	redisAddr := startRedis(t)
	s := startServer(t, func(c *Config) { c.Save = "" })
	var b strings.Builder
	b.WriteString(encode("SET", "str", "x"))
	for i := 0; i < 300; i++ {
		f := "f" + strconv.Itoa(i*7%211)
		b.WriteString(encode("HSET", "big", f, strings.Repeat("v", i%80))) // past 64 bytes: hashtable
		b.WriteString(encode("HGET", "big", "f"+strconv.Itoa(i%250)))
		b.WriteString(encode("HSET", "small", "f"+strconv.Itoa(i%5), strconv.Itoa(i)))
		switch i % 7 {
		case 1:
			b.WriteString(encode("HINCRBY", "big", "n"+strconv.Itoa(i%3), "5"))
			b.WriteString(encode("HEXISTS", "big", f))
			b.WriteString(encode("HSTRLEN", "big", f))
		case 2:
			b.WriteString(encode("HMGET", "big", f, "nosuch", "f1"))
			b.WriteString(encode("HGET", "missing", f))
			b.WriteString(encode("HSET", "str", f, "v"))
		case 3:
			b.WriteString(encode("HDEL", "big", "f"+strconv.Itoa(i%211), "nosuch"))
			b.WriteString(encode("HSETNX", "big", f, "nx"))
		case 4:
			b.WriteString(encode("HINCRBYFLOAT", "small", "f1", "1.5"))
			b.WriteString(encode("HMSET", "big", f, "m", "g"+f, "m2"))
		}
	}
	b.WriteString(encode("OBJECT", "ENCODING", "big"))
	b.WriteString(encode("OBJECT", "ENCODING", "small"))
	b.WriteString(encode("HLEN", "big"))
	want := sameRepliesAsRedis(t, redisAddr, s.Addr(), b.String(), 1499)
	if !bytes.Contains(want, []byte("hashtable")) || !bytes.Contains(want, []byte("WRONGTYPE")) {
		t.Fatalf("the script does not reach the hashtable encoding or WRONGTYPE: %q", want[max(0, len(want)-200):])
	}
}

// TestPrefetchSetMembersAgainstRedis runs pipelines of the set and sorted
// set commands registered x-field (their member is prefetched like a hash
// field) on big (hashtable, skiplist) and small collections, a missing key
// and a string key, against redis-server, byte for byte.
func TestPrefetchSetMembersAgainstRedis(t *testing.T) {
	redisAddr := startRedis(t)
	s := startServer(t, func(c *Config) { c.Save = "" })
	var b strings.Builder
	b.WriteString(encode("SET", "str", "x"))
	for i := 0; i < 300; i++ {
		m := "m" + strconv.Itoa(i*7%211)
		b.WriteString(encode("SADD", "bigs", m, "n"+m))
		b.WriteString(encode("SISMEMBER", "bigs", "m"+strconv.Itoa(i%250)))
		b.WriteString(encode("SADD", "smalls", strconv.Itoa(i%5)))
		b.WriteString(encode("ZADD", "bigz", strconv.Itoa(i%17), m))
		b.WriteString(encode("ZSCORE", "bigz", "m"+strconv.Itoa(i%250)))
		b.WriteString(encode("ZADD", "smallz", strconv.Itoa(i), "s"+strconv.Itoa(i%4)))
		switch i % 7 {
		case 1:
			b.WriteString(encode("SREM", "bigs", "n"+m, "nosuch"))
			b.WriteString(encode("SMISMEMBER", "bigs", m, "nosuch", "n"+m))
			b.WriteString(encode("SISMEMBER", "smalls", "3"))
		case 2:
			b.WriteString(encode("ZRANK", "bigz", m))
			b.WriteString(encode("ZREVRANK", "bigz", m))
			b.WriteString(encode("ZSCORE", "smallz", "s1"))
			b.WriteString(encode("ZRANK", "smallz", "s2"))
		case 3:
			b.WriteString(encode("ZREM", "bigz", "m"+strconv.Itoa(i%211), "nosuch"))
			b.WriteString(encode("ZMSCORE", "bigz", m, "nosuch"))
		case 4:
			b.WriteString(encode("SADD", "str", m))
			b.WriteString(encode("ZSCORE", "str", m))
			b.WriteString(encode("SISMEMBER", "missing", m))
			b.WriteString(encode("ZREM", "missing", m))
		}
	}
	b.WriteString(encode("OBJECT", "ENCODING", "bigs"))
	b.WriteString(encode("OBJECT", "ENCODING", "bigz"))
	b.WriteString(encode("SCARD", "bigs"))
	b.WriteString(encode("ZCARD", "bigz"))
	want := sameRepliesAsRedis(t, redisAddr, s.Addr(), b.String(), 1499)
	if !bytes.Contains(want, []byte("hashtable")) || !bytes.Contains(want, []byte("skiplist")) || !bytes.Contains(want, []byte("WRONGTYPE")) {
		t.Fatalf("the script does not reach the big encodings or WRONGTYPE: %q", want[max(0, len(want)-200):])
	}
}
