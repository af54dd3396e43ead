//go:build linux

package netpoll

import (
	"bufio"
	"bytes"
	"io"
	"net"
	"testing"
	"time"
)

// TestPending: Pending sees ready events without taking them from the loop.
func TestPending(t *testing.T) {
	l, err := New(nil)
	if err != nil {
		t.Fatal(err)
	}
	if l.Pending() {
		t.Fatal("a fresh loop reports pending events")
	}
	l.wake() // the loop is not running: its wake-up stays ready
	for i := 0; i < 2; i++ {
		if !l.Pending() {
			t.Fatalf("check %d: the wake-up is not reported", i)
		}
	}
	done := make(chan struct{})
	go func() { l.Run(); close(done) }()
	l.Stop()
	<-done
	if l.Pending() {
		t.Error("a stopped loop reports pending events")
	}
}

// blockingHandler echoes lines like lineHandler; when a "block" line's
// reply is about to be sent, Output waits for release, keeping the loop
// busy after it has taken the completions of its batch (the io_uring loop
// asks for output after its reap).
type blockingHandler struct {
	*lineHandler
	entered, release chan struct{}
	blocked          bool
}

func (h *blockingHandler) Output() []byte {
	if !h.blocked && bytes.Contains(h.out, []byte("block\n")) {
		h.blocked = true
		close(h.entered)
		<-h.release
	}
	return h.lineHandler.Output()
}

// TestPendingWhileLoopBusy: a loop busy in a handler is Awake, and input
// that reaches it meanwhile is reported by Pending, on every kind of loop. On a DEFER_TASKRUN io_uring
// ring the receive is not in the completion ring yet: it waits as task
// work for the loop's next io_uring_enter (IORING_SQ_TASKRUN).
func TestPendingWhileLoopBusy(t *testing.T) {
	eachLoop(t, func(t *testing.T, k loopKind) {
		l, err := k.new()
		if err != nil {
			t.Fatal(err)
		}
		ran := make(chan struct{})
		go func() { l.Run(); close(ran) }()
		entered, release := make(chan struct{}), make(chan struct{})
		var conns []net.Conn
		t.Cleanup(func() {
			for _, nc := range conns {
				nc.Close()
			}
			l.Stop()
			<-ran
		})
		for i := range 2 {
			a, b := tcpPair(t)
			conns = append(conns, a)
			h := &blockingHandler{lineHandler: newLineHandler(1), entered: make(chan struct{}), release: release}
			if i == 0 {
				h.entered = entered
			}
			if err := l.Adopt(b, h, func(int) {}); err != nil {
				t.Fatal(err)
			}
			io.WriteString(a, "hello\n") // served: the connection is adopted and armed
			if got, err := bufio.NewReader(a).ReadString('\n'); err != nil || got != "hello\n" {
				t.Fatalf("conn %d: got %q, %v", i, got, err)
			}
		}
		// The loop reaps what is left (a send's completion) and idles.
		deadline := time.Now().Add(5 * time.Second)
		for l.Pending() || l.Awake() {
			if time.Now().After(deadline) {
				t.Fatalf("an idle loop reports pending input (%v) or is awake (%v)", l.Pending(), l.Awake())
			}
			time.Sleep(time.Millisecond)
		}
		io.WriteString(conns[0], "block\n")
		<-entered // the loop is busy in conns[0]'s handler from now on
		// Busy with nothing else queued: Awake (the loop wants a CPU, a
		// handler may be waiting for a lock whose holder must run).
		if !l.Awake() {
			close(release)
			t.Fatal("a loop busy in a handler is not Awake")
		}
		io.WriteString(conns[1], "waiting\n")
		deadline = time.Now().Add(5 * time.Second)
		for !l.Pending() {
			if time.Now().After(deadline) {
				close(release)
				t.Fatal("input sent to a busy loop is not reported by Pending")
			}
			time.Sleep(time.Millisecond)
		}
		close(release)
	})
}

// tcpPair returns the two ends of a loopback TCP connection.
func tcpPair(t *testing.T) (net.Conn, *net.TCPConn) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	a, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	b, err := ln.Accept()
	if err != nil {
		a.Close()
		t.Fatal(err)
	}
	a.SetDeadline(time.Now().Add(10 * time.Second))
	return a, b.(*net.TCPConn)
}
