package server

import (
	"runtime"
	"syscall"

	"github.com/damselflydb/damselfly/netpoll"
)

// Clients are served by event loops (package netpoll), one per GOMAXPROCS,
// shared with the memcached front end. A loop-owned client runs every
// command on its loop's goroutine, except one that may block (mayBlock):
// before running it the client is detached, and its own goroutine
// (serveFrom) serves it from then on, with its buffered input, parser state
// and unwritten replies.

// startLoops starts one event loop per GOMAXPROCS. Without them (not
// Linux, or epoll failed) it returns nil: every connection then gets a
// goroutine of its own.
func (s *Server) startLoops(kind string) []*netpoll.Loop {
	n := runtime.GOMAXPROCS(0)
	loops := make([]*netpoll.Loop, 0, n)
	for range n {
		l, err := s.newLoop(kind)
		if err != nil {
			s.log.Warn("no event loops; serving each connection on a goroutine", "err", err)
			for _, l := range loops {
				l.Stop()
			}
			return nil
		}
		l.SetBarrier((*aofHold)(s))
		loops = append(loops, l)
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			l.Run()
		}()
	}
	return loops
}

// adopt hands a freshly accepted connection to a loop; on error the caller
// still owns tc and serves c on a goroutine.
func (s *Server) adopt(c *Client, tc netpoll.Conn) error {
	s.loopMu.Lock()
	l := s.loops[s.nextLoop%len(s.loops)]
	s.nextLoop++
	s.loopMu.Unlock()
	return l.Adopt(tc, (*loopClient)(c), func(fd int) {
		c.connMu.Lock()
		c.nc, c.loop, c.fd = nil, l, fd
		c.gate = s.scripts.gateOf(l)
		c.statSlot = s.statSlotOf(l)
		c.connMu.Unlock()
		c.view.fd.Store(int32(fd))
	})
}

// loopClient is a Client as a netpoll.Handler (the loop's callbacks are not
// part of Client's own API).
type loopClient Client

func (lc *loopClient) Readable(in netpoll.Input, now int64) netpoll.Action {
	c := (*Client)(lc)
	if c.w == len(c.in) {
		c.makeRoom()
	}
	var n int
	var err syscall.Errno
	if c.tio != nil {
		n, err = c.tio.read(in, c) // TLS: decrypted (tlsloop.go)
	} else {
		n, err = in.Read(c.in[c.w:])
	}
	if err == syscall.EAGAIN || err == syscall.EINTR {
		return netpoll.Keep
	}
	eof := n <= 0
	if n > 0 {
		c.w += n
		c.netRead(n) // netstats.go
		// client-query-buffer-limit (querybuf.go)
		if c.overQueryLimit() {
			c.aofSyncReplies()
			return netpoll.CloseNow
		}
	}
	c.lastSeen.Store(now)
	c.gate.active.Store(1) // see scriptCache.begin
	perr := c.processInput()
	c.gate.active.Store(0)
	if perr != nil {
		c.quit = true
	}
	c.noteBuffers(len(c.out) - c.outPos)
	if c.detach || c.handoff != nil {
		c.aofSyncReplies()
		return netpoll.Detach
	}
	if c.r == c.w {
		c.inputDrained() // inbuf.go
	}
	switch {
	case eof:
		c.aofSyncReplies()
		return netpoll.CloseNow
	case c.quit || c.closed.Load():
		c.aofSyncReplies()
		return netpoll.CloseAfterWrite
	}
	return netpoll.Keep
}

func (lc *loopClient) Output() []byte {
	if lc.tio != nil {
		return lc.tio.output((*Client)(lc))
	}
	return lc.out[lc.outPos:]
}

func (lc *loopClient) Wrote(n int) {
	if lc.tio != nil {
		(*Client)(lc).netWrote(n) // netstats.go
		lc.tio.wrote(n)
		return
	}
	(*Client)(lc).netWrote(n) // netstats.go
	lc.outPos += n
	if lc.outPos == len(lc.out) {
		(*Client)(lc).resetOut()
		lc.outPos = 0
	}
}

func (lc *loopClient) Closed() {
	c := (*Client)(lc)
	c.connMu.Lock()
	c.loop, c.fd = nil, -1
	c.connMu.Unlock()
	c.endSession()
	c.releaseRetainedIn() // inbuf.go
	c.srv.dropClient(c)
}

func (lc *loopClient) Detached(fd int, buffered []byte) {
	c := (*Client)(lc)
	if len(buffered) > 0 && c.tio == nil {
		// Input the io_uring loop received ahead: it precedes what the
		// goroutine reads from the socket.
		for len(c.in)-c.w < len(buffered) {
			c.makeRoom()
		}
		c.w += copy(c.in[c.w:], buffered)
	}
	nc, err := netpoll.FileConn(fd)
	if err != nil {
		c.srv.log.Warn("event loop: cannot detach connection", "client", c.id, "err", err)
		lc.Closed()
		return
	}
	if c.tio != nil { // TLS: the goroutine serves the same tls.Conn
		nc, c.tio = c.tio.detached(netpoll.PrefixConn(nc, buffered)), nil
	}
	c.connMu.Lock()
	c.nc, c.loop, c.fd = nc, nil, -1
	c.connMu.Unlock()
	c.view.fd.Store(connFD(nc))
	c.detach = false
	go c.serveFrom(true)
}
