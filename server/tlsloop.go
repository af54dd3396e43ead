package server

import (
	"crypto/tls"
	"net"
	"syscall"

	"github.com/damselflydb/damselfly/netpoll"
)

// TLS clients on the event loops: after the handshake a TLS client is
// adopted by a loop like a plain one and driven through a
// netpoll.TLSStream (see netpoll/tls.go for how crypto/tls is bridged to a
// loop's buffers): Readable decrypts into the client's input, Output
// encrypts its replies, and a client that detaches (a blocking command,
// PSYNC) keeps its *tls.Conn on its goroutine. A client whose first command
// arrived with the handshake (already decrypted, so epoll would not report
// it) stays on its goroutine.

// tlsLoopIO is a loop-served TLS client's stream (Client.tio).
type tlsLoopIO struct{ st *netpoll.TLSStream }

// read is Readable's read for a TLS client (netpoll.Read's answers).
func (t *tlsLoopIO) read(in netpoll.Input, c *Client) (int, syscall.Errno) {
	buf, n, errno := t.st.Read(in, c.in, c.w)
	if len(buf) != len(c.in) {
		c.setIn(buf)
	}
	return n, errno
}

// output encrypts the client's pending replies and returns what the loop
// has to write.
func (t *tlsLoopIO) output(c *Client) []byte {
	if c.outPos < len(c.out) {
		t.st.Encrypt(c.out[c.outPos:])
		c.outPos = 0
		c.resetOut()
	}
	return t.st.Output()
}

func (t *tlsLoopIO) wrote(n int) { t.st.Wrote(n) }

// detached makes the stream pass through to nc, the client's socket now
// served by its goroutine, and returns the connection that goroutine uses.
func (t *tlsLoopIO) detached(nc net.Conn) net.Conn { return t.st.Pass(nc) }

// adoptTLS hands an established TLS client to an event loop; false means it
// stays with the calling goroutine (no loops, input already decrypted and
// now in c.in, or the loop refused it), its wire passing through to raw.
func (s *Server) adoptTLS(c *Client, tc *tls.Conn, w *netpoll.TLSWire, raw *net.TCPConn) bool {
	if s.loops == nil {
		return false
	}
	st := netpoll.NewTLSStream(tc, w, &s.tls.rbufs)
	st.Buffer()
	buf, n, end := st.Decrypt(c.in, c.w)
	if len(buf) != len(c.in) {
		c.setIn(buf)
	}
	if n == 0 && !end {
		c.tio = &tlsLoopIO{st: st}
		if err := s.adopt(c, raw); err == nil {
			return true
		}
		c.tio = nil
	}
	c.w += n
	st.Pass(raw)
	return false
}
