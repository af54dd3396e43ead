package netpoll

import (
	"crypto/tls"
	"net"
	"sync"
	"syscall"
	"time"
)

// TLS connections on a loop. A loop reads and writes raw file descriptors
// and never blocks, while crypto/tls wants a net.Conn. TLSWire is the
// net.Conn under such a connection's *tls.Conn:
//
//   - During the handshake (on the accepting goroutine) it passes reads and
//     writes through to the socket.
//   - On a loop it is a pair of buffers: TLSStream.Read reads what the
//     socket has into the wire and lets tls.Conn decrypt every complete
//     record into the handler's input; when the wire runs dry it answers
//     with a temporary net.Error, which crypto/tls returns without failing
//     the connection (a partial record stays inside tls.Conn until more
//     arrives). TLSStream.Encrypt turns replies into records in the wire's
//     output, which the loop writes like any other output.
//   - A handler that leaves the loop (Detach) passes the wire through to the
//     socket again (TLSStream.Pass) and keeps serving the same *tls.Conn.
//
// Invariant: epoll reports only what is still in the socket, so a stream is
// adopted only when tls.Conn holds no decrypted input (Decrypt after the
// handshake returned nothing), and TLSStream.Read always decrypts all the
// wire holds before returning, leaving the wire empty.

// TLSWire is the net.Conn under a loop-served *tls.Conn (see above).
type TLSWire struct {
	net.Conn     // the socket while passing through; nil on a loop
	laddr, raddr net.Addr
	in           []byte // raw input not yet taken by tls.Conn
	out          []byte // encrypted output not yet written
	outPos       int
}

// NewTLSWire wraps an accepted socket, passing through to it.
func NewTLSWire(nc net.Conn) *TLSWire {
	return &TLSWire{Conn: nc, laddr: nc.LocalAddr(), raddr: nc.RemoteAddr()}
}

// wouldBlock tells tls.Conn that the wire has no more input for now.
type wouldBlock struct{}

func (wouldBlock) Error() string   { return "would block" }
func (wouldBlock) Timeout() bool   { return true }
func (wouldBlock) Temporary() bool { return true }

func (w *TLSWire) Read(b []byte) (int, error) {
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

func (w *TLSWire) Write(b []byte) (int, error) {
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

func (w *TLSWire) Close() error {
	if w.Conn != nil {
		return w.Conn.Close()
	}
	return nil // the loop closes its fd
}

func (w *TLSWire) LocalAddr() net.Addr  { return w.laddr }
func (w *TLSWire) RemoteAddr() net.Addr { return w.raddr }

func (w *TLSWire) SetDeadline(t time.Time) error {
	if w.Conn != nil {
		return w.Conn.SetDeadline(t)
	}
	return nil
}

func (w *TLSWire) SetReadDeadline(t time.Time) error {
	if w.Conn != nil {
		return w.Conn.SetReadDeadline(t)
	}
	return nil
}

func (w *TLSWire) SetWriteDeadline(t time.Time) error {
	if w.Conn != nil {
		return w.Conn.SetWriteDeadline(t)
	}
	return nil
}

// SyscallConn exposes the socket's fd (CLIENT LIST).
func (w *TLSWire) SyscallConn() (syscall.RawConn, error) {
	if sc, ok := w.Conn.(syscall.Conn); ok {
		return sc.SyscallConn()
	}
	return nil, syscall.EINVAL
}

// TLSStream is a TLS connection as a loop handler drives it.
type TLSStream struct {
	tc    *tls.Conn
	w     *TLSWire
	rbufs *sync.Pool // read buffers, shared: a stream keeps none between reads
}

// NewTLSStream drives tc, whose underlying conn is w; rbufs lends the
// buffers raw input is read into (it may be shared by many streams).
func NewTLSStream(tc *tls.Conn, w *TLSWire, rbufs *sync.Pool) *TLSStream {
	return &TLSStream{tc: tc, w: w, rbufs: rbufs}
}

// Buffer switches the wire from the socket to buffers (before adoption).
func (t *TLSStream) Buffer() { t.w.Conn = nil }

// Pass switches the wire back to a socket (nc: the accepted one, or
// FileConn's after a detach) and returns the connection to serve.
func (t *TLSStream) Pass(nc net.Conn) net.Conn {
	t.w.Conn = nc
	return t.tc
}

// Decrypt lets tls.Conn take every complete record the wire holds and
// appends the plaintext to buf[:off], growing it: it returns the buffer (a
// new one when it grew), the plaintext length and whether the stream ended
// (close_notify or a TLS error).
func (t *TLSStream) Decrypt(buf []byte, off int) ([]byte, int, bool) {
	n := 0
	for {
		if off+n == len(buf) {
			nb := make([]byte, 2*len(buf)+512)
			copy(nb, buf[:off+n])
			buf = nb
		}
		k, err := t.tc.Read(buf[off+n:])
		n += k
		if err != nil {
			if _, ok := err.(wouldBlock); ok {
				return buf, n, false
			}
			return buf, n, true
		}
	}
}

// Read is a handler's read for a TLS connection: raw bytes from the loop's
// input (never the fd itself: the io_uring loop receives for it), decrypted
// into buf after off (see Decrypt). It answers as netpoll.Read does: EAGAIN
// when nothing usable arrived (part of a record), n <= 0 at the end of the
// stream.
func (t *TLSStream) Read(in Input, buf []byte, off int) ([]byte, int, syscall.Errno) {
	rb, _ := t.rbufs.Get().(*[]byte)
	if rb == nil {
		b := make([]byte, 16<<10+512)
		rb = &b
	}
	defer t.rbufs.Put(rb)
	k, errno := in.Read(*rb)
	if errno == syscall.EAGAIN || errno == syscall.EINTR {
		return buf, 0, errno
	}
	if k <= 0 {
		return buf, 0, 0
	}
	t.w.in = (*rb)[:k]
	buf, n, end := t.Decrypt(buf, off)
	t.w.in = nil // empty unless the stream ended
	switch {
	case n > 0:
		return buf, n, 0 // an end shows again on the next read
	case end:
		return buf, 0, 0
	}
	return buf, 0, syscall.EAGAIN
}

// Encrypt turns p into records in the wire's output.
func (t *TLSStream) Encrypt(p []byte) { _, _ = t.tc.Write(p) } // into the wire: cannot fail

// Output is the encrypted output not yet written.
func (t *TLSStream) Output() []byte { return t.w.out[t.w.outPos:] }

// Wrote reports that n bytes of Output were written.
func (t *TLSStream) Wrote(n int) {
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

// PrefixConn returns nc reading prefix first: ciphertext an io_uring loop
// received ahead of a TLS connection's detach, which the tls.Conn must see
// before what the socket holds.
func PrefixConn(nc net.Conn, prefix []byte) net.Conn {
	if len(prefix) == 0 {
		return nc
	}
	return &prefixConn{Conn: nc, pre: append([]byte(nil), prefix...)}
}

type prefixConn struct {
	net.Conn
	pre []byte
}

func (p *prefixConn) Read(b []byte) (int, error) {
	if len(p.pre) > 0 {
		n := copy(b, p.pre)
		p.pre = p.pre[n:]
		return n, nil
	}
	return p.Conn.Read(b)
}
