package server

import (
	"bufio"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"
)

// Memcached connections on the event loops never wait for a busy script
// there: they leave the loop for a goroutine, so the loop's RESP clients
// keep getting answers (-BUSY), and once the script is killed the memcached
// requests complete with their data intact.
func TestBusyScriptMemcachedLeavesLoop(t *testing.T) {
	s := startServer(t, func(c *Config) { c.MemcachedPort = -1; c.Shards = 2 })
	var mcs []net.Conn
	var rds []*bufio.Reader
	for i := range 4 {
		nc, err := net.Dial("tcp", s.MemcachedAddr())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { nc.Close() })
		rd := bufio.NewReader(nc)
		fmt.Fprintf(nc, "set k%d 0 0 1\r\n%d\r\n", i, i)
		nc.SetReadDeadline(time.Now().Add(5 * time.Second))
		if l, _ := rd.ReadString('\n'); l != "STORED\r\n" {
			t.Fatalf("set: %q", l)
		}
		mcs, rds = append(mcs, nc), append(rds, rd)
	}
	ctl := dialRaw(t, s)
	ctl.do("CONFIG", "SET", "busy-reply-threshold", "300")
	ctl.reply()
	looper := dialRaw(t, s)
	looper.do("EVAL", "local i = 0 while true do i = i + 1 end", "0")
	waitBusy(t, s)
	for i, nc := range mcs {
		fmt.Fprintf(nc, "get k%d\r\n", i)
	}
	time.Sleep(100 * time.Millisecond)
	// Every loop still answers: new RESP clients land on each in turn.
	for range 4 {
		r := dialRaw(t, s)
		start := time.Now()
		r.do("PING")
		if got := r.reply(); !strings.HasPrefix(got[0], "-BUSY ") {
			t.Fatalf("PING during a busy script: %q", got)
		}
		if d := time.Since(start); d > 2*time.Second {
			t.Fatalf("PING waited %v: an event loop is blocked", d)
		}
	}
	kill := dialRaw(t, s)
	kill.do("SCRIPT", "KILL")
	if got := kill.reply(); got[0] != "+OK" {
		t.Fatalf("SCRIPT KILL: %q", got)
	}
	for i, rd := range rds {
		mcs[i].SetReadDeadline(time.Now().Add(5 * time.Second))
		var got strings.Builder
		for !strings.HasSuffix(got.String(), "END\r\n") {
			l, err := rd.ReadString('\n')
			if err != nil {
				t.Fatalf("get k%d after the script: %v (so far %q)", i, err, got.String())
			}
			got.WriteString(l)
		}
		if want := fmt.Sprintf("VALUE k%d 0 1\r\n%d\r\nEND\r\n", i, i); got.String() != want {
			t.Fatalf("get k%d: %q, want %q", i, got.String(), want)
		}
		// The connection goes on working from its goroutine.
		fmt.Fprintf(mcs[i], "incr k%d 10\r\n", i)
		if l, _ := rd.ReadString('\n'); l != fmt.Sprintf("%d\r\n", i+10) {
			t.Fatalf("incr after leaving the loop: %q", l)
		}
	}
}
