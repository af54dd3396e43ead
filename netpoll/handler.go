// Package netpoll serves many non-blocking TCP and Unix-socket connections from a few
// goroutines with epoll, the way redis-server and memcached do, or with
// io_uring (NewIOUring; see uring_linux.go for what differs). Both of
// Damselfly's front ends (RESP in package server, the memcached protocol in
// package memcache) run their connections on the same loops, TLS ones
// included (tls.go bridges crypto/tls to a handler's buffers).
//
// Why: a goroutine per connection costs a goroutine wake-up (and a futex
// hand-off) per request when clients do not pipeline, about 40% more CPU
// per request than Redis spends; one epoll_wait per batch of ready
// connections does not.
//
// Design and invariants:
//   - A Loop is one goroutine. For each readable connection it calls
//     Handler.Readable once (level-triggered: input the handler did not read
//     is reported again), then writes the handler's pending output with as
//     few write(2) calls as the socket allows. Output the socket does not
//     take waits for EPOLLOUT, and the connection is not read meanwhile
//     (backpressure: a client that does not read its replies stops being
//     served instead of growing the server's buffers).
//   - Ownership: a connection's fd and its Handler's buffers belong to the
//     loop goroutine while the loop serves it. Other goroutines only queue
//     requests (Add, RequestClose, Stop), which wake the loop through an
//     eventfd. A Handler that must leave the loop (a command that blocks)
//     returns Detach: the loop stops watching the fd and hands it over with
//     Handler.Detached; from then on the fd is the handler's.
//   - The loop never blocks in a system call: epoll_wait runs with a zero
//     timeout, and when nothing is ready the goroutine parks in the Go
//     runtime's poller, which watches the epoll fd itself (an epoll instance
//     is readable while it has events ready). A goroutine blocked in
//     epoll_wait would have its P retaken by sysmon after 20µs and pay
//     thread hand-offs on every return: measured, that cost more than the
//     goroutine wake-ups the loop saves. Socket reads and writes are raw
//     system calls for the same reason (they never block).
//   - Every fd the loop owns is closed exactly once, by the loop, followed by
//     Handler.Closed; after Stop the loop closes all of them.
package netpoll

import "syscall"

// Action tells the loop what to do with a connection after Readable.
type Action int

const (
	// Keep serving: write the pending output and go on reading.
	Keep Action = iota
	// CloseNow: the peer is gone (EOF or read error). Pending output is
	// written if the socket takes it at once, then the connection closes.
	CloseNow
	// CloseAfterWrite: write all pending output (waiting for the socket if
	// need be), then close (QUIT, a killed client, a protocol error).
	CloseAfterWrite
	// Detach: hand the fd to the handler (Handler.Detached) without writing
	// anything; the handler writes its pending output itself.
	Detach
)

// Handler is the protocol side of one connection. The loop calls its
// methods from the loop goroutine only.
type Handler interface {
	// Readable is called when the connection has input, hung up or failed.
	// The handler reads with in.Read (once: what it leaves is reported
	// again), executes every complete request and buffers the replies.
	Readable(in Input, nowNanos int64) Action
	// Output returns the replies not written yet.
	Output() []byte
	// Wrote reports that n bytes of Output were written; when everything
	// was written the handler may reset its buffer.
	Wrote(n int)
	// Closed is called once the loop has closed the connection's fd.
	Closed()
	// Detached is called when the loop has stopped watching fd after
	// Readable returned Detach; the handler owns fd from now on. buffered
	// is input the loop received on fd but the handler has not read yet
	// (the io_uring loop receives ahead; the epoll loop never does): it
	// comes before anything read from fd.
	Detached(fd int, buffered []byte)
}

// Input is what Readable reads a connection's input through: read(2) on
// the socket under epoll, the data already received under io_uring.
type Input struct {
	fd  int
	src *inbuf // nil: read(2) on fd
}

// Fd is the connection's socket.
func (in Input) Fd() int { return in.fd }

// Read reads what is available without waiting: n > 0 bytes, or 0 and
// errno 0 at end of input, or EAGAIN when nothing is there yet, or the
// error that ended the connection.
func (in Input) Read(b []byte) (int, syscall.Errno) {
	if in.src == nil {
		return Read(in.fd, b)
	}
	return in.src.read(b)
}

// inbuf holds input the io_uring loop received for one connection:
// pend[off:] (a private copy of what an earlier Readable left), then cur
// (a view of the provided buffer being handed over, valid during one
// Readable). pend's storage is reused from one leftover to the next.
type inbuf struct {
	pend  []byte
	off   int
	cur   []byte
	eof   bool
	errno syscall.Errno
}

func (b *inbuf) read(p []byte) (int, syscall.Errno) {
	if len(p) == 0 {
		return 0, 0
	}
	n := 0
	if b.off < len(b.pend) {
		n = copy(p, b.pend[b.off:])
		b.off += n
		if b.off == len(b.pend) {
			b.pend, b.off = b.pend[:0], 0
		}
	}
	if n < len(p) && len(b.cur) > 0 {
		m := copy(p[n:], b.cur)
		b.cur = b.cur[m:]
		n += m
	}
	switch {
	case n > 0:
		return n, 0
	case b.errno != 0:
		return 0, b.errno
	case b.eof:
		return 0, 0
	}
	return 0, syscall.EAGAIN
}

// buffered reports how many received bytes wait to be read.
func (b *inbuf) buffered() int { return len(b.pend) - b.off + len(b.cur) }

// keep copies what is left of cur into pend: the provided buffer it views
// goes back to the kernel.
func (b *inbuf) keep() {
	if len(b.cur) > 0 {
		if b.off > 0 {
			b.pend = append(b.pend[:0], b.pend[b.off:]...)
			b.off = 0
		}
		b.pend = append(b.pend, b.cur...)
	}
	b.cur = nil
}

// unread returns the received input not read yet, as a copy.
func (b *inbuf) unread() []byte {
	if b.off == len(b.pend) && len(b.cur) == 0 {
		return nil
	}
	return append(append([]byte(nil), b.pend[b.off:]...), b.cur...)
}

// Deferrer is implemented by a Handler whose replies may have to wait for
// work shared by the whole batch, such as the append-only file's group
// commit (replies to writes leave only once the writes are fsynced). When
// Defer reports true after Readable returned Keep, the loop writes that
// output only once its Barrier (Loop.SetBarrier) lets it: the barrier is
// asked once per batch of events, and while it holds, the loop goes on
// serving every other connection.
type Deferrer interface {
	Defer() bool
}

// Barrier decides when deferred output may be written.
type Barrier interface {
	// Hold returns nil when the output deferred so far may be written now,
	// or a channel that is closed once it may.
	Hold() <-chan struct{}
}
