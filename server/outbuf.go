package server

import (
	"math/bits"
	"sync"
)

// A client's replies are appended to one output buffer (c.out), written to
// the socket once per batch and then emptied. Small buffers stay with their
// client. A big reply (LRANGE of a long list, RPOP with a count, a 10 MB
// GET) needs a big buffer for the moment it takes to write it: it grows by
// doubling, and once written it goes to the server's pool of big buffers,
// where the next big reply of any client finds it warm instead of zeroing
// and page-faulting a new one. The pool is a sync.Pool, so the garbage
// collector empties it when big replies stop: an idle server holds none.
// With maxmemory set there is no pool: used_memory counts the Go heap, and
// idle pooled buffers would count as data and make the server evict for
// them.
//
// Invariant: a buffer goes to the pool only once nothing refers to it any
// more: every byte written (the socket's write returned, or io_uring's send
// completed) or copied (TLS encrypts into its own buffer), and c.out no
// longer names it.

const (
	keepOutBytes = 64 << 10 // output buffers larger than this are dropped after a write...
	// ...unless at most this large and at least a quarter full: a client that
	// keeps pipelining big replies (LRANGE) reuses its buffer instead of
	// regrowing it from nothing every batch, and gives it up on the first
	// write that needs much less.
	reuseOutBytes = 1 << 20

	// Big buffers come in power-of-two sizes from 1<<minPooledShift to
	// 1<<maxPooledShift, one pool each; larger ones are left to the collector.
	minPooledShift = 21 // 2 MiB
	maxPooledShift = 26 // 64 MiB
)

// outPool holds written big output buffers by size class.
type outPool struct {
	class [maxPooledShift - minPooledShift + 1]sync.Pool // of *[]byte, len 0
}

// get returns an empty buffer of capacity at least n: a pooled one when
// there is one of its class, else a new one of the class's size.
func (p *outPool) get(n int) []byte {
	shift := max(bits.Len(uint(n-1)), minPooledShift)
	if shift > maxPooledShift {
		return make([]byte, 0, n)
	}
	if b, ok := p.class[shift-minPooledShift].Get().(*[]byte); ok {
		return *b
	}
	return make([]byte, 0, 1<<shift)
}

// put gives b back; only buffers get handed out are kept.
func (p *outPool) put(b []byte) {
	c := cap(b)
	if c < 1<<minPooledShift || c > 1<<maxPooledShift || c&(c-1) != 0 {
		return
	}
	b = b[:0]
	p.class[bits.Len(uint(c))-1-minPooledShift].Put(&b)
}

// reserve makes room for n more bytes of output. A buffer that must grow
// doubles: append grows a big slice by only 1.25x, so a reply built from
// many bulks would copy and zero about four times its size on the way up
// instead of once. Past reuseOutBytes the new buffer comes from the pool.
// Bulks and raw replies reserve (they make big replies); the small
// headers and simple replies append as they are.
func (c *Client) reserve(n int) {
	need := len(c.out) + n
	if need <= cap(c.out) {
		return
	}
	size := max(2*cap(c.out), need, 512)
	var grown []byte
	if size > reuseOutBytes && c.poolsOutput() {
		grown = c.srv.bigOut.get(size)[:len(c.out)]
	} else {
		grown = make([]byte, len(c.out), size)
	}
	copy(grown, c.out)
	c.releaseOut()
	c.out = grown
}

// poolsOutput reports whether big output buffers go through the pool (not
// with maxmemory: see above).
func (c *Client) poolsOutput() bool { return c.srv.cfg.maxMemory.Load() == 0 }

// releaseOut gives c.out to the pool if it is a pooled size; the caller
// then stops using it (nothing else may refer to it).
func (c *Client) releaseOut() {
	if c.poolsOutput() {
		c.srv.bigOut.put(c.out)
	}
}

// resetOut empties c.out after it was written.
func (c *Client) resetOut() {
	c.obufSoftSince = 0 // all written: no longer over the soft output limit
	if n := cap(c.out); n > keepOutBytes && (n > reuseOutBytes || len(c.out) < n/4) {
		c.releaseOut()
		c.out = nil
	} else {
		c.out = c.out[:0]
	}
}
