package server

import (
	"net"
	"sync/atomic"
	"syscall"
)

// clientView is the part of a client's state that CLIENT LIST and CLIENT
// INFO show. The session itself belongs to the goroutine serving the client;
// these copies are atomics so that another client can read them without a
// race. They change only when the session does (SELECT, MULTI, a new
// connection owner), never per request.
type clientView struct {
	db    atomic.Int32
	multi atomic.Int32 // commands queued since MULTI; -1 outside MULTI
	fd    atomic.Int32 // the connection's file descriptor
	rbs   atomic.Int32 // input buffer size
	// After each read: input not consumed yet (qbuf), room left (qbuf-free)
	// and replies not written yet (obl); updated once per read, not per
	// request.
	qbuf, qbufFree, obl atomic.Int32
	proto               atomic.Int32             // RESP version (HELLO)
	multiMem            atomic.Int64             // argument bytes queued since MULTI
	outq                atomic.Pointer[outQueue] // Pub/Sub output queue (omem)
}

// noteBuffers records the buffer sizes CLIENT LIST shows (after a read and
// the commands it brought; unwritten: bytes of out not written yet).
func (c *Client) noteBuffers(unwritten int) {
	c.view.qbuf.Store(int32(c.w - c.r))
	c.view.qbufFree.Store(int32(len(c.in) - c.w))
	c.view.obl.Store(int32(unwritten))
}

// bufferFields is CLIENT LIST's qbuf ... tot-mem part.
func (c *Client) bufferFields() string {
	rbs, qbuf, obl := int64(c.view.rbs.Load()), int64(c.view.qbuf.Load()), int64(c.view.obl.Load())
	var omem int64
	if q := c.view.outq.Load(); q != nil {
		omem = int64(q.pending())
	}
	return " qbuf=" + itoa(qbuf) + " qbuf-free=" + itoa(int64(c.view.qbufFree.Load())) +
		" argv-mem=0 multi-mem=" + itoa(c.view.multiMem.Load()) + " rbs=" + itoa(rbs) + " rbp=" + itoa(rbs) + " obl=" + itoa(obl) +
		" oll=0 omem=" + itoa(omem) + " tot-mem=" + itoa(rbs+obl+omem)
}

func (c *Client) setDB(db int) {
	c.db = db
	c.view.db.Store(int32(db))
}

func (c *Client) setTx(tx *txState) {
	c.sess.tx = tx
	c.view.multiMem.Store(0)
	if tx == nil {
		c.view.multi.Store(-1)
	} else {
		c.view.multi.Store(int32(len(tx.queue)))
	}
}

func (c *Client) setIn(buf []byte) {
	c.in = buf
	c.view.rbs.Store(int32(len(buf)))
}

// connFD is the file descriptor behind nc (-1 when it has none).
func connFD(nc net.Conn) int32 {
	if tc, ok := nc.(interface{ NetConn() net.Conn }); ok { // TLS: the socket under it
		nc = tc.NetConn()
	}
	sc, ok := nc.(interface {
		SyscallConn() (syscall.RawConn, error)
	})
	if !ok {
		return -1
	}
	raw, err := sc.SyscallConn()
	if err != nil {
		return -1
	}
	fd := int32(-1)
	_ = raw.Control(func(f uintptr) { fd = int32(f) })
	return fd
}

// listFlags are CLIENT LIST's flags: M the primary's link, P subscribed,
// x in MULTI, b blocked, N none of these.
func (c *Client) listFlags() string {
	var f []byte
	if c.fromPrimary {
		f = append(f, 'M')
	}
	if c.sess.subs.Subscribed() {
		f = append(f, 'P')
	}
	if c.view.multi.Load() >= 0 {
		f = append(f, 'x')
	}
	if c.blocked.Load() != nil {
		f = append(f, 'b')
	}
	if c.isMonitor() {
		f = append(f, 'O')
	}
	f = c.adminListFlags(f) // clientadmin.go: t R B (tracking), e (no-evict), T (no-touch)
	if len(f) == 0 {
		return "N"
	}
	return string(f)
}
