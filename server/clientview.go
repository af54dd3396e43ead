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
}

func (c *Client) setDB(db int) {
	c.db = db
	c.view.db.Store(int32(db))
}

func (c *Client) setTx(tx *txState) {
	c.sess.tx = tx
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
	if c.sess.subs.total.Load() > 0 {
		f = append(f, 'P')
	}
	if c.view.multi.Load() >= 0 {
		f = append(f, 'x')
	}
	if c.blocked.Load() != nil {
		f = append(f, 'b')
	}
	if len(f) == 0 {
		return "N"
	}
	return string(f)
}
