//go:build linux

package netpoll

import (
	"bufio"
	"io"
	"net"
	"path/filepath"
	"testing"
	"time"
)

// TestUnixSocket serves Unix-socket connections from the loop exactly as
// TCP ones: echo, backpressure-free close after write, and detach into a
// net.Conn of the right kind.
func TestUnixSocket(t *testing.T) {
	eachLoop(t, func(t *testing.T, k loopKind) {
		l, err := k.new()
		if err != nil {
			t.Fatal(err)
		}
		ran := make(chan struct{})
		go func() { l.Run(); close(ran) }()
		path := filepath.Join(t.TempDir(), "s.sock")
		ln, err := net.Listen("unix", path)
		if err != nil {
			t.Fatal(err)
		}
		handlers := make(chan *lineHandler, 4)
		go func() {
			for {
				nc, err := ln.Accept()
				if err != nil {
					return
				}
				h := newLineHandler(2)
				if err := l.Adopt(nc.(*net.UnixConn), h, func(fd int) { h.fd = fd }); err != nil {
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
		dialUnix := func() net.Conn {
			nc, err := net.Dial("unix", path)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { nc.Close() })
			nc.SetDeadline(time.Now().Add(10 * time.Second))
			return nc
		}

		nc := dialUnix()
		r := bufio.NewReader(nc)
		io.WriteString(nc, "x\nquit\n")
		for _, want := range []string{"x\n", "x\n", "bye\n"} {
			if got, err := r.ReadString('\n'); err != nil || got != want {
				t.Fatalf("got %q, %v; want %q", got, err, want)
			}
		}
		if _, err := r.ReadByte(); err != io.EOF {
			t.Fatalf("after quit: %v, want EOF", err)
		}
		<-(<-handlers).closed

		nc = dialUnix()
		io.WriteString(nc, "detach\n")
		fd := <-(<-handlers).detached
		c, err := FileConn(fd)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		if _, ok := c.(*net.UnixConn); !ok {
			t.Fatalf("detached conn is %T, want *net.UnixConn", c)
		}
		go io.WriteString(c, "on its own goroutine\n")
		if got, err := bufio.NewReader(nc).ReadString('\n'); err != nil || got != "on its own goroutine\n" {
			t.Fatalf("got %q, %v", got, err)
		}
	})
}
