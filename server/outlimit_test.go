package server

import (
	"context"
	"net"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"
)

// rssBytes is this process's resident set size (0 when unknown).
func rssBytes() int64 {
	b, err := os.ReadFile("/proc/self/statm")
	if err != nil {
		return 0
	}
	f := strings.Fields(string(b))
	if len(f) < 2 {
		return 0
	}
	pages, _ := strconv.ParseInt(f[1], 10, 64)
	return pages * int64(os.Getpagesize())
}

// TestOutputBufferLimitNormal is issue 13's reproduction: a client pipelines
// GETs of a large value without reading. With client-output-buffer-limit
// normal set it is disconnected at the hard limit, memory stays bounded, and
// everyone else is served.
func TestOutputBufferLimitNormal(t *testing.T) {
	s := startServer(t)
	rdb := newClient(t, s)
	ctx := context.Background()
	val := strings.Repeat("v", 8<<20)
	if err := rdb.Set(ctx, "big", val, 0).Err(); err != nil {
		t.Fatal(err)
	}
	if err := rdb.ConfigSet(ctx, "client-output-buffer-limit", "normal 4mb 2mb 10").Err(); err != nil {
		t.Fatal(err)
	}
	before := rssBytes()
	nc, err := net.Dial("tcp", s.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	var req strings.Builder
	for i := 0; i < 64; i++ {
		req.WriteString("*2\r\n$3\r\nGET\r\n$3\r\nbig\r\n")
	}
	if _, err := nc.Write([]byte(req.String())); err != nil {
		t.Fatal(err)
	}
	// Unread, the connection must be closed by the server.
	deadline := time.Now().Add(10 * time.Second)
	for infoField(t, rdb, "stats", "client_output_buffer_limit_disconnections") == 0 {
		if time.Now().After(deadline) {
			t.Fatal("the client was not disconnected")
		}
		time.Sleep(20 * time.Millisecond)
	}
	_ = nc.SetReadDeadline(time.Now().Add(5 * time.Second))
	buf := make([]byte, 1<<20)
	for {
		if _, err := nc.Read(buf); err != nil {
			break // EOF or reset: closed without the replies
		}
	}
	if err := rdb.Set(ctx, "k", "v", 0).Err(); err != nil {
		t.Fatalf("others are not served: %v", err)
	}
	after := rssBytes()
	t.Logf("RSS before %d MB, after %d MB (64 unread replies would be 512 MB)", before>>20, after>>20)
	if after-before > 256<<20 {
		t.Fatalf("RSS grew by %d MB", (after-before)>>20)
	}
	// With the default (no normal limit) a client reading its replies is
	// served as before.
	if err := rdb.ConfigSet(ctx, "client-output-buffer-limit", "normal 0 0 0").Err(); err != nil {
		t.Fatal(err)
	}
	if got, err := rdb.Get(ctx, "big").Result(); err != nil || len(got) != len(val) {
		t.Fatalf("GET big: %d bytes, %v", len(got), err)
	}
}

// TestOutputBufferSoftLimit: the soft limit disconnects a client whose
// pending output stays over it for longer than the soft seconds; a client
// whose replies are written in between is not (its clock restarts).
func TestOutputBufferSoftLimit(t *testing.T) {
	s := startServer(t)
	rdb := newClient(t, s)
	ctx := context.Background()
	rdb.Set(ctx, "mid", strings.Repeat("m", 600<<10), 0)
	rdb.ConfigSet(ctx, "client-output-buffer-limit", "normal 0 512kb 1")
	r := dialRaw(t, s)
	for i := 0; i < 2; i++ {
		r.do("GET", "mid")
		if got := r.reply(); len(got) != 2 || len(got[1]) != 600<<10 {
			t.Fatalf("GET %d: %d lines", i, len(got))
		}
		time.Sleep(1100 * time.Millisecond)
	}
	// Pending output held over the soft limit: the first check starts the
	// clock, a check more than the soft seconds later disconnects.
	c := &Client{srv: s, out: make([]byte, 600<<10)}
	if c.outputLimitReached() {
		t.Fatal("disconnected at the first check over the soft limit")
	}
	c.obufSoftSince -= int64(1100 * time.Millisecond)
	if !c.outputLimitReached() || !c.closed.Load() || len(c.out) != 0 {
		t.Fatal("not disconnected after the soft seconds")
	}
}
