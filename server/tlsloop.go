package server

import (
	"crypto/tls"
	"net"
	"syscall"
	"time"

	"github.com/damselflydb/damselfly/netpoll"
)

// TLS clients on the event loops. A loop reads and writes raw file
// descriptors and must never block, while crypto/tls wants a net.Conn. The
// bridge is tlsWire, the net.Conn under each TLS client's *tls.Conn:
//
//   - During the handshake (on the accepting goroutine) it passes reads and
//     writes through to the socket.
//   - On a loop it is a pair of buffers: Readable reads what the socket has
//     into the wire and lets tls.Conn decrypt every complete record into the
//     client's input; when the wire runs dry it answers with a temporary
//     net.Error, which crypto/tls returns without failing the connection
//     (a partial record stays inside tls.Conn until more arrives). Output
//     encrypts the pending replies, and tls.Conn's record writes land in the
//     wire's output, which the loop writes like any other output.
//   - When the client detaches to a goroutine (a blocking command, PSYNC),
//     the wire passes through to the socket again (netpoll.FileConn), first
//     handing over what it still buffered, and the goroutine serves the
//     same *tls.Conn.
//
// Invariant: a TLS client is adopted by a loop only when tls.Conn holds no
// decrypted input, because epoll reports only what is still in the socket;
// Readable therefore always decrypts everything the wire holds, and a client
// that arrives with input already buffered is served on its goroutine.

// tlsWire is the net.Conn under a TLS client's tls.Conn (see above).
type tlsWire struct {
	net.Conn     // the socket while passing through; nil on a loop
	raw          *net.TCPConn
	laddr, raddr net.Addr
	in           []byte // raw input read by the loop, not yet taken by tls.Conn
	out          []byte // encrypted output not yet written
	outPos       int
}

// errWouldBlock tells tls.Conn that the wire has no more input for now.
type wouldBlock struct{}

func (wouldBlock) Error() string   { return "would block" }
func (wouldBlock) Timeout() bool   { return true }
func (wouldBlock) Temporary() bool { return true }

func (w *tlsWire) Read(b []byte) (int, error) {
	if len(w.in) > 0 {
		n := copy(b, w.in)
		w.in = w.in[n:]
		return n, nil
	}
	if w.Conn != nil {
		return w.Conn.Read(b)
	}
	return 0, wouldBlock{}
}

func (w *tlsWire) Write(b []byte) (int, error) {
	if w.Conn == nil {
		w.out = append(w.out, b...)
		return len(b), nil
	}
	if w.outPos < len(w.out) { // left over from the loop
		if _, err := w.Conn.Write(w.out[w.outPos:]); err != nil {
			return 0, err
		}
		w.out, w.outPos = nil, 0
	}
	return w.Conn.Write(b)
}

func (w *tlsWire) Close() error {
	if w.Conn != nil {
		return w.Conn.Close()
	}
	return nil // the loop closes its fd
}

func (w *tlsWire) LocalAddr() net.Addr  { return w.laddr }
func (w *tlsWire) RemoteAddr() net.Addr { return w.raddr }

func (w *tlsWire) SetDeadline(t time.Time) error {
	if w.Conn != nil {
		return w.Conn.SetDeadline(t)
	}
	return nil
}

func (w *tlsWire) SetReadDeadline(t time.Time) error {
	if w.Conn != nil {
		return w.Conn.SetReadDeadline(t)
	}
	return nil
}

func (w *tlsWire) SetWriteDeadline(t time.Time) error {
	if w.Conn != nil {
		return w.Conn.SetWriteDeadline(t)
	}
	return nil
}

// SyscallConn lets CLIENT LIST show the socket's fd.
func (w *tlsWire) SyscallConn() (syscall.RawConn, error) {
	if sc, ok := w.Conn.(syscall.Conn); ok {
		return sc.SyscallConn()
	}
	return nil, syscall.EINVAL
}

// tlsLoopIO is a loop-served client's TLS state (Client.tio).
type tlsLoopIO struct {
	tc *tls.Conn
	w  *tlsWire
}

// decrypt lets tls.Conn take every complete record the wire holds and
// appends the plaintext to c.in after c.w (growing it), without moving c.w.
// It returns the plaintext length and whether the stream ended (close_notify
// or a TLS error).
func (t *tlsLoopIO) decrypt(c *Client) (n int, end bool) {
	for {
		if c.w+n == len(c.in) {
			buf := make([]byte, 2*len(c.in))
			copy(buf, c.in[:c.w+n])
			c.setIn(buf)
		}
		k, err := t.tc.Read(c.in[c.w+n:])
		n += k
		if err != nil {
			if _, ok := err.(wouldBlock); ok {
				return n, false
			}
			return n, true
		}
	}
}

// read is Readable's read for a TLS client: raw bytes from fd, decrypted
// into c.in[c.w:]. It answers as netpoll.Read does: EAGAIN when nothing
// usable arrived (only part of a record), n <= 0 at the end.
func (t *tlsLoopIO) read(fd int, c *Client) (int, syscall.Errno) {
	// The read buffer is borrowed: decrypt leaves the wire empty unless the
	// stream ended, so no client keeps ciphertext between reads.
	pool := &c.srv.tls.rbufs
	rb, _ := pool.Get().(*[]byte)
	if rb == nil {
		b := make([]byte, 16<<10+512)
		rb = &b
	}
	defer pool.Put(rb)
	k, errno := netpoll.Read(fd, *rb)
	if errno == syscall.EAGAIN || errno == syscall.EINTR {
		return 0, errno
	}
	if k <= 0 {
		return 0, 0
	}
	t.w.in = (*rb)[:k]
	n, end := t.decrypt(c)
	t.w.in = nil
	switch {
	case n > 0:
		return n, 0 // an end shows again on the next read
	case end:
		return 0, 0
	}
	return 0, syscall.EAGAIN
}

// output encrypts the client's pending replies and returns what the loop
// has to write.
func (t *tlsLoopIO) output(c *Client) []byte {
	if c.outPos < len(c.out) {
		_, _ = t.tc.Write(c.out[c.outPos:]) // into the wire: cannot fail
		c.outPos = 0
		c.resetOut()
	}
	return t.w.out[t.w.outPos:]
}

func (t *tlsLoopIO) wrote(n int) {
	t.w.outPos += n
	if t.w.outPos == len(t.w.out) {
		if cap(t.w.out) > 64<<10 {
			t.w.out = nil
		} else {
			t.w.out = t.w.out[:0]
		}
		t.w.outPos = 0
	}
}

// detached makes the wire pass through to nc, the client's socket now served
// by its goroutine, and returns the connection that goroutine uses.
func (t *tlsLoopIO) detached(nc net.Conn) net.Conn {
	t.w.Conn = nc
	return t.tc
}

// adoptTLS hands an established TLS client to an event loop; false means it
// stays with the calling goroutine (no loops, input already decrypted, or
// the loop refused it), with its wire passing through to raw again.
func (s *Server) adoptTLS(c *Client, tc *tls.Conn, w *tlsWire) bool {
	if s.loops == nil {
		return false
	}
	w.Conn = nil // buffers from now on
	n, end := (&tlsLoopIO{tc: tc, w: w}).decrypt(c)
	if n == 0 && !end {
		c.tio = &tlsLoopIO{tc: tc, w: w}
		if err := s.adopt(c, w.raw); err == nil {
			return true
		}
		c.tio = nil
	}
	c.w += n
	w.Conn = w.raw
	return false
}
