package server

import (
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"log/slog"
	"math/rand"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hdt3213/rdb/crc64jones"
	"github.com/redis/go-redis/v9"
)

// Bad input with bounded memory (issue 13, "So this cannot come back"):
// each test is bounded in time, checks the server keeps serving others, and
// logs this process's RSS before and after (client and server share it).

func logRSS(t *testing.T, before int64, bound int64) {
	t.Helper()
	after := rssBytes()
	t.Logf("RSS before %d MB, after %d MB", before>>20, after>>20)
	if after-before > bound {
		t.Errorf("RSS grew by %d MB (bound %d MB)", (after-before)>>20, bound>>20)
	}
}

func mustPing(t *testing.T, s *Server) {
	t.Helper()
	rdb := redis.NewClient(&redis.Options{Addr: s.Addr(), Protocol: 2, ReadTimeout: 5 * time.Second, MaxRetries: -1})
	defer rdb.Close()
	if err := rdb.Ping(context.Background()).Err(); err != nil {
		t.Fatalf("server no longer serves others: %v", err)
	}
}

// unauthLimits: before AUTH, requests larger than Redis allows get Redis's
// texts; after AUTH the ordinary limits apply.
func unauthLimits(t *testing.T, addr string) {
	r := dialAddr(t, addr)
	r.send("*11\r\n")
	if got := r.reply(); got[0] != "-ERR Protocol error: unauthenticated multibulk length" {
		t.Errorf("*11 before AUTH: %q", got)
	}
	r = dialAddr(t, addr)
	r.send("*2\r\n$16385\r\n")
	if got := r.reply(); got[0] != "-ERR Protocol error: unauthenticated bulk length" {
		t.Errorf("$16385 before AUTH: %q", got)
	}
	r = dialAddr(t, addr)
	r.send("*1\r\n$536870913\r\n")
	if got := r.reply(); got[0] != "-ERR Protocol error: invalid bulk length" {
		t.Errorf("$536870913 before AUTH: %q", got)
	}
	r = dialAddr(t, addr)
	r.do("AUTH", "pw")
	r.reply()
	r.send("*1\r\n$536870913\r\n")
	if got := r.reply(); got[0] != "-ERR Protocol error: invalid bulk length" {
		t.Errorf("$536870913 after AUTH: %q", got)
	}
	r = dialAddr(t, addr)
	r.do("AUTH", "pw")
	r.reply()
	r.do("SET", "k", strings.Repeat("x", 20000), "GET")
	if got := r.reply(); got[0] != "$-1" {
		t.Errorf("a 20000-byte SET after AUTH: %q", got)
	}
}

func TestUnauthenticatedLimits(t *testing.T) {
	unauthLimits(t, startServer(t, func(c *Config) { c.RequirePass = "pw" }).Addr())
}

func TestUnauthenticatedLimitsAgainstRedis(t *testing.T) {
	unauthLimits(t, startRedis(t, "--requirepass", "pw"))
}

// TestMalformedRESP: malformed and truncated requests get an error (or
// wait for more), never crash or wedge the server, and a huge declared
// length is not allocated before its bytes arrive.
func TestMalformedRESP(t *testing.T) {
	s := startServer(t)
	before := rssBytes()
	inputs := []string{
		"*-1\r\n", "*abc\r\n", "*2\r\n$3\r\nGET\r\n:1\r\n", "*1\r\n$-5\r\n", "*1\r\n$x\r\n",
		"*3000000000\r\n", "*1\r\n$99999999999999999999\r\n", "*2\r\n$3\r\nGE", "$3\r\nGET\r\n",
		"\"unbalanced\r\n", strings.Repeat("a", 70<<10), "*1\r\n" + strings.Repeat("$", 70<<10),
		"*1\r\n$4\r\nPING\r\n*1\r\n$4\r\n", "\x00\x01\x02\xff\r\n", "*1\r\n$536870912\r\nabc",
		"*2\r\n$3\r\nSET\r\n$1\r\nk\r\n",
	}
	for i := 0; i < 100; i++ { // random prefixes of valid requests, and noise
		req := fmt.Sprintf("*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$%d\r\n%s\r\n", i, strings.Repeat("v", i))
		inputs = append(inputs, req[:rand.Intn(len(req))])
		b := make([]byte, rand.Intn(64))
		rand.Read(b)
		inputs = append(inputs, string(b))
	}
	for _, in := range inputs {
		nc, err := net.Dial("tcp", s.Addr())
		if err != nil {
			t.Fatal(err)
		}
		nc.Write([]byte(in))
		nc.SetReadDeadline(time.Now().Add(10 * time.Millisecond))
		buf := make([]byte, 512)
		nc.Read(buf)
		nc.Close()
	}
	mustPing(t, s)
	logRSS(t, before, 128<<20)
}

// TestSlowloris: 2000 connections that each send half a request and stall
// cost little memory and do not slow anyone else down.
func TestSlowloris(t *testing.T) {
	if testing.Short() {
		t.Skip("opens 2000 connections")
	}
	s := startServer(t)
	before := rssBytes()
	var conns []net.Conn
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	for i := 0; i < 2000; i++ {
		nc, err := net.Dial("tcp", s.Addr())
		if err != nil {
			t.Fatalf("connection %d: %v", i, err)
		}
		nc.Write([]byte("*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$100000\r\nvvvv"))
		conns = append(conns, nc)
	}
	start := time.Now()
	mustPing(t, s)
	if d := time.Since(start); d > time.Second {
		t.Fatalf("PING took %v with 2000 stalled clients", d)
	}
	logRSS(t, before, 256<<20)
}

// TestPipelineWithoutReading: a client that pipelines a million GETs and
// reads nothing stops being read once its replies back up; memory stays
// bounded and others are served.
func TestPipelineWithoutReading(t *testing.T) {
	if testing.Short() {
		t.Skip("writes a million requests")
	}
	s := startServer(t)
	rdb := newClient(t, s)
	rdb.Set(context.Background(), "k", strings.Repeat("v", 100), 0)
	before := rssBytes()
	nc, err := net.Dial("tcp", s.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	req := []byte(strings.Repeat("*2\r\n$3\r\nGET\r\n$1\r\nk\r\n", 10000))
	var wg sync.WaitGroup
	wg.Add(1)
	sent := 0
	go func() {
		defer wg.Done()
		nc.SetWriteDeadline(time.Now().Add(3 * time.Second))
		for i := 0; i < 100; i++ {
			if _, err := nc.Write(req); err != nil {
				return // blocked by backpressure: the server stopped reading
			}
			sent += 10000
		}
	}()
	wg.Wait()
	t.Logf("%d GETs written before the server stopped reading", sent)
	mustPing(t, s)
	logRSS(t, before, 256<<20)
}

// TestSubscriberStopsReading: a subscriber that reads nothing is cut off at
// the pubsub output limit; publishers go on.
func TestSubscriberStopsReading(t *testing.T) {
	s := startServer(t)
	rdb := newClient(t, s)
	ctx := context.Background()
	rdb.ConfigSet(ctx, "client-output-buffer-limit", "pubsub 4mb 1mb 60")
	before := rssBytes()
	nc, err := net.Dial("tcp", s.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	nc.Write([]byte("*2\r\n$9\r\nSUBSCRIBE\r\n$2\r\nch\r\n"))
	for deadline := time.Now().Add(5 * time.Second); rdb.PubSubNumSub(ctx, "ch").Val()["ch"] == 0; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("not subscribed")
		}
	}
	msg := strings.Repeat("m", 16<<10)
	dropped := false
	for i := 0; i < 5000 && !dropped; i++ { // up to 80 MB of messages
		if err := rdb.Publish(ctx, "ch", msg).Err(); err != nil {
			t.Fatal(err)
		}
		dropped = rdb.PubSubNumSub(ctx, "ch").Val()["ch"] == 0
	}
	if !dropped {
		t.Fatal("the subscriber that does not read was never disconnected")
	}
	mustPing(t, s)
	logRSS(t, before, 128<<20)
}

// TestRestoreCorruptPayloads: RESTORE of damaged DUMP payloads (with a valid
// checksum, so the decoder really runs) answers an error, never a panic,
// and the server goes on.
func TestRestoreCorruptPayloads(t *testing.T) {
	s := startServer(t)
	rdb := newClient(t, s)
	ctx := context.Background()
	rdb.Set(ctx, "str", "hello world", 0)
	rdb.Set(ctx, "int", "12345", 0)
	rdb.RPush(ctx, "list", "a", "b", strings.Repeat("c", 100))
	rdb.SAdd(ctx, "set", "1", "2", "x")
	rdb.SAdd(ctx, "iset", "1", "2", "3")
	rdb.HSet(ctx, "hash", "f", "v", "g", strings.Repeat("w", 70))
	rdb.ZAdd(ctx, "zset", redis.Z{Score: 1, Member: "a"}, redis.Z{Score: 2.5, Member: "b"})
	rdb.XAdd(ctx, &redis.XAddArgs{Stream: "stream", Values: []string{"f", "v"}})
	var big []any
	for i := 0; i < 300; i++ {
		big = append(big, fmt.Sprint("member", i))
	}
	rdb.SAdd(ctx, "bigset", big...)
	rdb.RPush(ctx, "biglist", big...)
	before := rssBytes()
	rng := rand.New(rand.NewSource(1))
	var payloads [][]byte
	for _, k := range []string{"str", "int", "list", "set", "iset", "hash", "zset", "stream", "bigset", "biglist"} {
		p, err := rdb.Dump(ctx, k).Result()
		if err != nil {
			t.Fatal(k, err)
		}
		payloads = append(payloads, []byte(p))
	}
	reseal := func(body []byte) string { // body without its 8-byte CRC
		d := crc64jones.New()
		d.Write(body)
		return string(binary.LittleEndian.AppendUint64(append([]byte(nil), body...), d.Sum64()))
	}
	tries, errs := 0, 0
	for _, p := range payloads {
		body := p[:len(p)-8]
		for i := 0; i < 150; i++ {
			b := append([]byte(nil), body...)
			switch i % 3 {
			case 0: // flip bytes
				for j := 0; j < 1+rng.Intn(3); j++ {
					b[rng.Intn(len(b))] ^= byte(1 + rng.Intn(255))
				}
			case 1: // truncate (keeping the 2-byte version trailer)
				n := rng.Intn(len(b) - 2)
				b = append(b[:n:n], body[len(body)-2:]...)
			case 2: // huge lengths
				if len(b) > 4 {
					j := rng.Intn(len(b) - 4)
					copy(b[j:], []byte{0x80, 0x7f, 0xff, 0xff, 0xff})
				}
			}
			tries++
			err := rdb.Restore(ctx, fmt.Sprint("r", tries), 0, reseal(b)).Err()
			if err != nil {
				errs++
				if strings.Contains(err.Error(), "internal error") || strings.Contains(err.Error(), "runtime") {
					t.Fatalf("RESTORE of a damaged payload panicked: %v", err)
				}
			}
		}
	}
	if err := rdb.Restore(ctx, "bad", 0, "garbage-without-checksum").Err(); err == nil ||
		err.Error() != "ERR DUMP payload version or checksum are wrong" {
		t.Fatalf("RESTORE garbage: %v", err)
	}
	t.Logf("%d damaged payloads, %d refused", tries, errs)
	mustPing(t, s)
	logRSS(t, before, 128<<20)
}

// TestCorruptDumpAtStart: damaged and truncated dumps make LoadDump fail
// naming the file (and the offset, for a decoding error), never with a Go
// panic's text.
func TestCorruptDumpAtStart(t *testing.T) {
	dir := t.TempDir()
	s := startServer(t, func(c *Config) { c.Dir = dir })
	rdb := newClient(t, s)
	ctx := context.Background()
	for i := 0; i < 200; i++ {
		rdb.Set(ctx, fmt.Sprint("s", i), strings.Repeat("v", i), 0)
		rdb.RPush(ctx, fmt.Sprint("l", i%7), i)
		rdb.HSet(ctx, fmt.Sprint("h", i%5), fmt.Sprint("f", i), i)
		rdb.ZAdd(ctx, "z", redis.Z{Score: float64(i), Member: fmt.Sprint(i)})
	}
	if err := rdb.Save(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	good, err := os.ReadFile(filepath.Join(dir, "dump.rdb"))
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewSource(2))
	failures := 0
	for i := 0; i < 60; i++ {
		b := append([]byte(nil), good...)
		if i%2 == 0 {
			b = b[:rng.Intn(len(b))]
		} else {
			for j := 0; j < 1+rng.Intn(4); j++ {
				b[9+rng.Intn(len(b)-17)] ^= byte(1 + rng.Intn(255))
			}
			if i%4 == 1 { // reseal, so the decoder meets the damage
				d := crc64jones.New()
				d.Write(b[:len(b)-8])
				binary.LittleEndian.PutUint64(b[len(b)-8:], d.Sum64())
			}
		}
		d := t.TempDir()
		if err := os.WriteFile(filepath.Join(d, "dump.rdb"), b, 0o644); err != nil {
			t.Fatal(err)
		}
		s2 := New(Config{Dir: d, DBFilename: "dump.rdb", Shards: 2, DBNum: 16, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
		err := s2.LoadDump()
		if err == nil {
			continue // a flip inside a value's bytes may still load (then the checksum catches it, or not)
		}
		failures++
		msg := err.Error()
		if !strings.Contains(msg, "dump.rdb") {
			t.Errorf("error without the file: %v", msg)
		}
		for _, bad := range []string{"runtime error", "goroutine", "panic", "index out of range", "nil pointer"} {
			if strings.Contains(msg, bad) {
				t.Errorf("Go panic text in the load error: %v", msg)
			}
		}
	}
	t.Logf("%d of 60 damaged dumps refused", failures)
}
