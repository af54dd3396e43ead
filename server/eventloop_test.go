package server

import (
	"context"
	"errors"
	"io"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// The connection modes: event loops (the default on Linux) and a goroutine
// per connection. Every case runs in both.
//
// The subtests pin the mode, so under CI's extra passes
// (DAMSELFLY_GOROUTINE_PER_CONN=1, DAMSELFLY_EVENT_LOOP=epoll) a subtest
// whose configuration equals the default pass's is skipped: the goroutine
// one always (it has no loops to pick a kind for), the event-loop one
// unless DAMSELFLY_EVENT_LOOP picks another kind of loop.
func forEachConnMode(t *testing.T, f func(t *testing.T, mutate func(*Config))) {
	extraPass := os.Getenv("DAMSELFLY_GOROUTINE_PER_CONN") == "1" || os.Getenv("DAMSELFLY_EVENT_LOOP") != ""
	for _, perConn := range []bool{false, true} {
		name := "eventloop"
		if perConn {
			name = "goroutine"
		}
		if extraPass && (perConn || os.Getenv("DAMSELFLY_EVENT_LOOP") == "") {
			continue // ran in the default pass with this very configuration
		}
		t.Run(name, func(t *testing.T) {
			f(t, func(c *Config) { c.GoroutinePerConn = perConn })
		})
	}
}

func encode(args ...string) string {
	var b strings.Builder
	b.WriteString("*" + strconv.Itoa(len(args)) + "\r\n")
	for _, a := range args {
		b.WriteString("$" + strconv.Itoa(len(a)) + "\r\n" + a + "\r\n")
	}
	return b.String()
}

// expectEOF checks that the server closed the connection.
func (r *rawConn) expectEOF() {
	r.t.Helper()
	r.nc.SetReadDeadline(time.Now().Add(5 * time.Second))
	b, err := r.rd.ReadByte()
	if err == nil {
		r.t.Fatalf("connection still open, read %q", b)
	}
	if !errors.Is(err, io.EOF) && !strings.Contains(err.Error(), "reset") {
		r.t.Fatalf("want EOF, got %v", err)
	}
}

// A command that may block arrives in the same read as others before and
// after it: the replies before it are written by the loop, the connection
// moves to its own goroutine with the rest of the input, and order holds.
func TestDetachKeepsPipelineOrder(t *testing.T) {
	forEachConnMode(t, func(t *testing.T, m func(*Config)) {
		s := startServer(t, m)
		r := dialRaw(t, s)
		r.send(encode("SET", "a", "1") + encode("WAIT", "0", "0") + encode("GET", "a") + encode("INCR", "a"))
		want(t, r.reply(), "+OK")
		want(t, r.reply(), ":0")
		want(t, r.reply(), "$1", "1")
		want(t, r.reply(), ":2")
		r.do("INCR", "a")
		want(t, r.reply(), ":3")

		// Entering Pub/Sub mid-pipeline.
		sub := dialRaw(t, s)
		sub.send(encode("SET", "b", "x") + encode("SUBSCRIBE", "ch") + encode("PING"))
		want(t, sub.reply(), "+OK")
		want(t, sub.reply(), "*3", "$9", "subscribe", "$2", "ch", ":1")
		want(t, sub.reply(), "*2", "$4", "pong", "$0", `""`)
		r.do("PUBLISH", "ch", "hello")
		want(t, r.reply(), ":1")
		want(t, sub.reply(), "*3", "$7", "message", "$2", "ch", "$5", "hello")

		// MULTI with a queued may-block command runs EXEC detached.
		r2 := dialRaw(t, s)
		r2.send(encode("MULTI") + encode("SET", "c", "1") + encode("WAIT", "0", "0") + encode("EXEC") + encode("GET", "c"))
		want(t, r2.reply(), "+OK")
		want(t, r2.reply(), "+QUEUED")
		want(t, r2.reply(), "+QUEUED")
		want(t, r2.reply(), "*2", "+OK", ":0")
		want(t, r2.reply(), "$1", "1")

		// Scripts run detached; the connection keeps working after.
		r3 := dialRaw(t, s)
		r3.send(encode("EVAL", "return redis.call('incr', KEYS[1])", "1", "n") + encode("GET", "n"))
		want(t, r3.reply(), ":1")
		want(t, r3.reply(), "$1", "1")
	})
}

// Replies larger than the socket buffers are written as the client reads
// them (EPOLLOUT), and input that arrived meanwhile is served after.
func TestLargeRepliesBackpressure(t *testing.T) {
	forEachConnMode(t, func(t *testing.T, m func(*Config)) {
		s := startServer(t, m)
		r := dialRaw(t, s)
		big := strings.Repeat("x", 3<<20)
		r.do("SET", "big", big)
		want(t, r.reply(), "+OK")
		var req strings.Builder
		for range 8 {
			req.WriteString(encode("GET", "big"))
		}
		req.WriteString(encode("PING"))
		go r.nc.Write([]byte(req.String()))
		time.Sleep(100 * time.Millisecond) // let the server fill the socket
		for range 8 {
			got := r.reply()
			if len(got) != 2 || got[0] != "$"+strconv.Itoa(len(big)) || got[1] != big {
				t.Fatalf("GET big: %d lines, header %q", len(got), got[0])
			}
		}
		want(t, r.reply(), "+PONG")
	})
}

func TestConnectionClosing(t *testing.T) {
	forEachConnMode(t, func(t *testing.T, m func(*Config)) {
		s := startServer(t, m)
		q := dialRaw(t, s)
		q.send(encode("QUIT") + encode("PING"))
		want(t, q.reply(), "+OK")
		q.expectEOF()

		p := dialRaw(t, s)
		p.send("*1\r\n$x\r\n")
		if got := p.reply(); !strings.HasPrefix(got[0], "-ERR Protocol error") {
			t.Fatalf("protocol error: %q", got)
		}
		p.expectEOF()

		victim, killer := dialRaw(t, s), dialRaw(t, s)
		victim.do("CLIENT", "ID")
		id := strings.TrimPrefix(victim.reply()[0], ":")
		killer.do("CLIENT", "KILL", "ID", id)
		want(t, killer.reply(), ":1")
		victim.expectEOF()

		self := dialRaw(t, s)
		self.do("CLIENT", "ID")
		id = strings.TrimPrefix(self.reply()[0], ":")
		self.do("CLIENT", "KILL", "ID", id, "SKIPME", "no")
		want(t, self.reply(), ":1")
		self.expectEOF()

		// A subscribed (detached) client is killed too.
		sub := dialRaw(t, s)
		sub.do("CLIENT", "ID")
		id = strings.TrimPrefix(sub.reply()[0], ":")
		sub.do("SUBSCRIBE", "x")
		sub.reply()
		killer.do("CLIENT", "KILL", "ID", id)
		want(t, killer.reply(), ":1")
		sub.expectEOF()
	})
}

// Server.Close ends every connection, loop-owned or detached, and returns.
func TestCloseEndsConnections(t *testing.T) {
	forEachConnMode(t, func(t *testing.T, m func(*Config)) {
		s := startServer(t, m)
		a, b := dialRaw(t, s), dialRaw(t, s)
		a.do("PING")
		want(t, a.reply(), "+PONG")
		b.do("SUBSCRIBE", "x")
		b.reply()
		done := make(chan struct{})
		go func() { s.Close(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			t.Fatal("Close hangs")
		}
		a.expectEOF()
		b.expectEOF()
	})
}

// Many clients at once, each with many round trips: no lost or crossed
// replies, and the connection count goes back down.
func TestManyClients(t *testing.T) {
	forEachConnMode(t, func(t *testing.T, m func(*Config)) {
		s := startServer(t, m)
		ctx := context.Background()
		var wg sync.WaitGroup
		errs := make(chan error, 32)
		for g := range 16 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				r := dialRaw(t, s)
				key := "k" + strconv.Itoa(g)
				for i := 1; i <= 200; i++ {
					r.nc.SetWriteDeadline(time.Now().Add(5 * time.Second))
					if _, err := r.nc.Write([]byte(encode("INCR", key) + encode("INCR", "total"))); err != nil {
						errs <- err
						return
					}
					got := r.reply()
					r.reply()
					if got[0] != ":"+strconv.Itoa(i) {
						errs <- errors.New(key + ": got " + got[0])
						return
					}
				}
				r.nc.Close()
			}()
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Fatal(err)
		}
		rdb := newClient(t, s)
		if n, err := rdb.Get(ctx, "total").Int(); err != nil || n != 16*200 {
			t.Fatalf("total = %d, %v", n, err)
		}
		deadline := time.Now().Add(5 * time.Second)
		for {
			s.clientsMu.Lock()
			n := len(s.clients)
			s.clientsMu.Unlock()
			if n == 1 {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("%d clients still registered, want 1", n)
			}
			time.Sleep(10 * time.Millisecond)
		}
	})
}
