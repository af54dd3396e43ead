//go:build linux

package netpoll

import (
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"testing"
	"time"
)

// stampEnv makes TestFairnessClientHelper also dial the address it names
// and send its wall clock (UnixNano, 8 bytes) every stampEvery.
const (
	stampEnv   = fairnessClientEnv + "_STAMPS"
	stampEvery = 2 * time.Millisecond
)

// sendStamps is the helper side of TestNetpollWakeupsBesideBusyLoop.
func sendStamps(addr string, stop func() bool) {
	nc, err := net.Dial("tcp", addr)
	if err != nil {
		return
	}
	defer nc.Close()
	var b [8]byte
	for !stop() {
		binary.LittleEndian.PutUint64(b[:], uint64(time.Now().UnixNano()))
		if _, err := nc.Write(b[:]); err != nil {
			return
		}
		time.Sleep(stampEvery)
	}
}

// TestNetpollWakeupsBesideBusyLoop: while another process keeps a loop
// busy with unpipelined requests, a goroutine blocked reading a net.Conn
// (what a replica's link, the cluster bus or a detached client is) wakes
// within a millisecond or two of its data arriving, on io_uring as on
// epoll. With one P held by an io_uring loop that waited for its next
// request holding the P, only sysmon polled the network: measured p50
// 5.1-5.5 ms, p99 11-17 ms (now ~0.6 ms and 2-4 ms; epoll 0.1 ms and
// 1-6 ms on a loaded machine).
func TestNetpollWakeupsBesideBusyLoop(t *testing.T) {
	if os.Getenv(fairnessClientEnv) != "" {
		t.Skip("in the helper process")
	}
	if raceEnabled {
		t.Skip("timing comparison; the race detector's overhead swamps it")
	}
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	p50s, p99s := map[string]time.Duration{}, map[string]time.Duration{}
	// Best of three (up to six while it fails), the kinds taking turns: a
	// loaded machine only ever slows a wake-up down.
	var problems []string
	for round := 1; round <= 6; round++ {
		for _, k := range loopKinds(t) {
			if k.name == "io_uring-singleshot" {
				continue // same waits as io_uring
			}
			p50, p99, n := netpollWakeups(t, k, 600*time.Millisecond)
			t.Logf("%s: %d wake-ups, p50 %v, p99 %v", k.name, n, p50, p99)
			if old, ok := p99s[k.name]; !ok || p99 < old {
				p50s[k.name], p99s[k.name] = p50, p99
			}
		}
		problems = problems[:0]
		for name, p99 := range p99s {
			// yieldEvery (1 ms) bounds a wake-up's wait beside a busy
			// loop; the margins are for a loaded machine.
			if p50 := p50s[name]; p50 > 2*time.Millisecond || p99 > max(8*time.Millisecond, 2*p99s["epoll"]) {
				problems = append(problems, fmt.Sprintf("%s: wake-ups p50 %v, p99 %v (epoll %v, %v): goroutines woken by the Go poller wait for the loop", name, p50, p99, p50s["epoll"], p99s["epoll"]))
			}
		}
		if round >= 3 && len(problems) == 0 {
			return
		}
	}
	for _, p := range problems {
		t.Error(p)
	}
}

// netpollWakeups serves a client process on a loop of kind k for d while
// the same process sends timestamps every stampEvery to a goroutine here;
// it returns the median and 99th percentile of the delay between sending
// and the reader's wake-up, and the number of wake-ups.
func netpollWakeups(t *testing.T, k loopKind, d time.Duration) (time.Duration, time.Duration, int) {
	t.Helper()
	_, addr, _ := serve(t, k, func() *lineHandler { return newLineHandler(1) })
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	cmd := exec.Command(os.Args[0], "-test.run=^TestFairnessClientHelper$")
	cmd.Env = append(os.Environ(), fairnessClientEnv+"="+addr, fairnessClientEnv+"_CONNS=4", stampEnv+"="+ln.Addr().String())
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Wait()
	defer stdin.Close()
	nc, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	var delays []time.Duration
	var b [8]byte
	start := time.Now()
	for time.Since(start) < d {
		if _, err := io.ReadFull(nc, b[:]); err != nil {
			t.Fatal(err)
		}
		sent := int64(binary.LittleEndian.Uint64(b[:]))
		if time.Since(start) > 50*time.Millisecond { // connections up and busy
			delays = append(delays, time.Duration(time.Now().UnixNano()-sent))
		}
	}
	if len(delays) == 0 {
		t.Fatalf("%s: no wake-ups", k.name)
	}
	slices.Sort(delays)
	return delays[len(delays)/2], delays[len(delays)*99/100], len(delays)
}
