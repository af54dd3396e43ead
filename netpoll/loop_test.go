//go:build linux

package netpoll

import (
	"bufio"
	"bytes"
	"io"
	"net"
	"sync"
	"syscall"
	"testing"
	"time"
)

// lineHandler answers every input line with the line repeated `repeat`
// times; "quit" closes after the reply, "detach" hands the fd back.
type lineHandler struct {
	repeat   int
	fd       int // recorded by Adopt's owned callback
	in, out  []byte
	pos      int
	closed   chan struct{}
	detached chan int
	// detachDelay: work a "detach" line does before it detaches (input
	// arriving meanwhile is received ahead by the io_uring loop).
	detachDelay time.Duration
}

func newLineHandler(repeat int) *lineHandler {
	return &lineHandler{repeat: repeat, closed: make(chan struct{}), detached: make(chan int, 1)}
}

func (h *lineHandler) Readable(in Input, _ int64) Action {
	var buf [4096]byte
	n, err := in.Read(buf[:])
	if err == syscall.EAGAIN {
		return Keep
	}
	if n <= 0 {
		return CloseNow
	}
	h.in = append(h.in, buf[:n]...)
	for {
		i := bytes.IndexByte(h.in, '\n')
		if i < 0 {
			return Keep
		}
		line := string(h.in[:i])
		h.in = h.in[i+1:]
		switch line {
		case "quit":
			h.out = append(h.out, "bye\n"...)
			return CloseAfterWrite
		case "detach":
			time.Sleep(h.detachDelay)
			return Detach
		}
		for range h.repeat {
			h.out = append(h.out, line...)
			h.out = append(h.out, '\n')
		}
	}
}

func (h *lineHandler) Output() []byte { return h.out[h.pos:] }
func (h *lineHandler) Wrote(n int) {
	h.pos += n
	if h.pos == len(h.out) {
		h.out, h.pos = h.out[:0], 0
	}
}
func (h *lineHandler) Closed() { close(h.closed) }
func (h *lineHandler) Detached(fd int, buffered []byte) {
	h.in = append(h.in, buffered...)
	h.detached <- fd
}

// loopKind is one way to make a loop: every loop test runs on each.
type loopKind struct {
	name string
	new  func() (*Loop, error)
}

// loopKinds: epoll, and io_uring with multishot and single-shot receive
// where the kernel lets this process have io_uring.
func loopKinds(t *testing.T) []loopKind {
	kinds := []loopKind{{"epoll", func() (*Loop, error) { return New(nil) }}}
	l, err := NewIOUring(nil, IOUringOptions{})
	if err != nil {
		t.Logf("io_uring unavailable, testing epoll only: %v", err)
		return kinds
	}
	l.Stop()
	l.Run()
	return append(kinds,
		loopKind{"io_uring", func() (*Loop, error) { return NewIOUring(nil, IOUringOptions{}) }},
		loopKind{"io_uring-singleshot", func() (*Loop, error) { return NewIOUring(nil, IOUringOptions{SingleShot: true}) }},
		loopKind{"io_uring-plain", func() (*Loop, error) { return NewIOUring(nil, IOUringOptions{PlainRing: true}) }})
}

// eachLoop runs f as a subtest on every loop kind.
func eachLoop(t *testing.T, f func(t *testing.T, k loopKind)) {
	for _, k := range loopKinds(t) {
		t.Run(k.name, func(t *testing.T) { f(t, k) })
	}
}

// serve starts a loop of kind k and a listener whose connections it adopts
// with handlers made by mk; it returns the address.
func serve(t *testing.T, k loopKind, mk func() *lineHandler) (*Loop, string, chan *lineHandler) {
	t.Helper()
	l, err := k.new()
	if err != nil {
		t.Fatal(err)
	}
	ran := make(chan struct{})
	go func() { l.Run(); close(ran) }()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	handlers := make(chan *lineHandler, 16)
	go func() {
		for {
			nc, err := ln.Accept()
			if err != nil {
				return
			}
			h := mk()
			if err := l.Adopt(nc.(*net.TCPConn), h, func(fd int) { h.fd = fd }); err != nil {
				nc.Close()
				continue
			}
			handlers <- h
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		l.Stop()
		<-ran
	})
	return l, ln.Addr().String(), handlers
}

func dial(t *testing.T, addr string) net.Conn {
	t.Helper()
	nc, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { nc.Close() })
	nc.SetDeadline(time.Now().Add(10 * time.Second))
	return nc
}

func TestEchoAndQuit(t *testing.T) {
	eachLoop(t, func(t *testing.T, k loopKind) {
		_, addr, handlers := serve(t, k, func() *lineHandler { return newLineHandler(1) })
		nc := dial(t, addr)
		r := bufio.NewReader(nc)
		io.WriteString(nc, "a\nb\n")
		for _, want := range []string{"a\n", "b\n"} {
			if got, err := r.ReadString('\n'); err != nil || got != want {
				t.Fatalf("got %q, %v; want %q", got, err, want)
			}
		}
		io.WriteString(nc, "quit\n")
		if got, _ := r.ReadString('\n'); got != "bye\n" {
			t.Fatalf("got %q", got)
		}
		if _, err := r.ReadByte(); err != io.EOF {
			t.Fatalf("after quit: %v, want EOF", err)
		}
		<-(<-handlers).closed
	})
}

// TestBackpressure: a client that does not read gets its replies later, in
// full and in order, once it reads; the loop keeps serving others meanwhile.
func TestBackpressure(t *testing.T) {
	eachLoop(t, func(t *testing.T, k loopKind) {
		_, addr, _ := serve(t, k, func() *lineHandler { return newLineHandler(20000) })
		slow := dial(t, addr)
		line := bytes.Repeat([]byte("x"), 99)
		io.WriteString(slow, string(line)+"\n") // ~2 MB of replies
		other := dial(t, addr)
		io.WriteString(other, string(line)+"\n")
		if _, err := io.ReadFull(other, make([]byte, 20000*100)); err != nil {
			t.Fatalf("other client starved: %v", err)
		}
		got, err := io.ReadAll(io.LimitReader(slow, 20000*100))
		if err != nil || len(got) != 20000*100 || !bytes.Equal(got[:100], append(line, '\n')) {
			t.Fatalf("slow client got %d bytes, %v", len(got), err)
		}
	})
}

// TestCloseAfterWriteWaitsForOutput: a quit behind replies the socket could
// not take at once still delivers them all before closing.
func TestCloseAfterWriteWaitsForOutput(t *testing.T) {
	eachLoop(t, func(t *testing.T, k loopKind) {
		_, addr, _ := serve(t, k, func() *lineHandler { return newLineHandler(20000) })
		nc := dial(t, addr)
		io.WriteString(nc, "0123456789\nquit\n")
		time.Sleep(50 * time.Millisecond) // let the loop fill the socket
		got, err := io.ReadAll(nc)
		if err != nil || len(got) != 20000*11+4 || !bytes.HasSuffix(got, []byte("bye\n")) {
			t.Fatalf("got %d bytes, %v", len(got), err)
		}
	})
}

func TestRequestCloseAndStop(t *testing.T) {
	eachLoop(t, func(t *testing.T, k loopKind) {
		l, addr, handlers := serve(t, k, func() *lineHandler { return newLineHandler(1) })
		a, b := dial(t, addr), dial(t, addr)
		ha, hb := <-handlers, <-handlers
		_ = b
		l.RequestClose(hb.fd, ha) // wrong pair: ignored
		l.RequestClose(ha.fd, ha)
		<-ha.closed
		if _, err := a.Read(make([]byte, 1)); err != io.EOF {
			t.Fatalf("closed connection read: %v", err)
		}
		select {
		case <-hb.closed:
			t.Fatal("RequestClose closed another connection")
		case <-time.After(50 * time.Millisecond):
		}
		l.Stop()
		<-hb.closed
	})
}

func TestDetach(t *testing.T) {
	eachLoop(t, func(t *testing.T, k loopKind) {
		_, addr, handlers := serve(t, k, func() *lineHandler { return newLineHandler(1) })
		nc := dial(t, addr)
		io.WriteString(nc, "detach\n")
		h := <-handlers
		fd := <-h.detached
		c, err := FileConn(fd)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		var wg sync.WaitGroup
		wg.Add(1)
		go func() {
			defer wg.Done()
			io.WriteString(c, "served by its own goroutine\n")
		}()
		got, err := bufio.NewReader(nc).ReadString('\n')
		if err != nil || got != "served by its own goroutine\n" {
			t.Fatalf("got %q, %v", got, err)
		}
		wg.Wait()
	})
}

// TestDetachHandsOverReceivedInput: input that arrives while a handler
// works on the command that detaches it reaches the handler, through
// Detached's buffered input (io_uring received it ahead) or the socket.
func TestDetachHandsOverReceivedInput(t *testing.T) {
	eachLoop(t, func(t *testing.T, k loopKind) {
		_, addr, handlers := serve(t, k, func() *lineHandler {
			h := newLineHandler(1)
			h.detachDelay = 100 * time.Millisecond
			return h
		})
		nc := dial(t, addr)
		io.WriteString(nc, "detach\n")
		h := <-handlers
		time.Sleep(20 * time.Millisecond)
		io.WriteString(nc, "more\n")
		fd := <-h.detached
		c, err := FileConn(fd)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		got := string(h.in)
		if got != "more\n" {
			c.SetReadDeadline(time.Now().Add(5 * time.Second))
			line, err := bufio.NewReader(c).ReadString('\n')
			if err != nil {
				t.Fatalf("buffered %q, then reading: %v", got, err)
			}
			got += line
		}
		if got != "more\n" {
			t.Fatalf("input after detach: %q", got)
		}
		t.Logf("handed over with Detached: %q", h.in)
	})
}

// TestIOUringDeferTaskrun: on Linux 6.1 and later the io_uring loop runs
// with IORING_SETUP_SINGLE_ISSUER|DEFER_TASKRUN and a registered ring fd.
func TestIOUringDeferTaskrun(t *testing.T) {
	if !kernelAtLeast(6, 1) {
		t.Skip("DEFER_TASKRUN needs Linux 6.1")
	}
	l, err := NewIOUring(nil, IOUringOptions{})
	if err != nil {
		t.Skipf("io_uring unavailable: %v", err)
	}
	deferTR := l.u.r.deferTR
	l.Stop()
	l.Run()
	if !deferTR {
		t.Fatal("ring set up without DEFER_TASKRUN")
	}
	k := loopKind{"io_uring", func() (*Loop, error) { return NewIOUring(nil, IOUringOptions{}) }}
	_, addr, _ := serve(t, k, func() *lineHandler { return newLineHandler(1) })
	nc := dial(t, addr)
	io.WriteString(nc, "a\n")
	if got, err := bufio.NewReader(nc).ReadString('\n'); err != nil || got != "a\n" {
		t.Fatalf("got %q, %v", got, err)
	}
}
