package server

import (
	"errors"
	"math"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/damselflydb/damselfly/shard"
)

// Blocking commands (BLPOP, BRPOP, BLMOVE, BRPOPLPUSH, BLMPOP, BZPOPMIN,
// BZPOPMAX, BZMPOP, XREAD and XREADGROUP with BLOCK).
//
// A blocking command first tries to serve itself like its non-blocking form,
// under the locks of all its keys. When every key is empty it registers a
// waiter on its keys in the server's blockRegistry while still holding
// those locks, unlocks, and waits in its own connection goroutine (holding
// no shard lock) for a wake-up, its timeout, CLIENT UNBLOCK, or the
// connection closing.
//
// Wake-ups: a key becomes non-empty only when a list or sorted set is
// created under it (a push to a missing key, a *STORE, RENAME, MOVE, COPY
// ...); the writer then calls signalReady while holding the key's shard lock.
// signalReady marks the first not-yet-signalled waiter of that key (FIFO per
// key) and wakes it. The woken client retries under the locks: when it pops
// and the key still has elements it signals the next waiter itself; when
// another client took the elements first it re-arms (under the locks, so no
// later push can be missed) and waits again, keeping its place in line.
// A signalled waiter that leaves without popping (timeout, disconnect,
// unblock) passes the signal on.
//
// Invariants: registry changes happen under blockRegistry.mu; signalReady is
// called with the key's shard lock held; lock order is shard locks, then mu.
// The hot path of a push reads one atomic counter when nobody waits.

// blockKey names a key in one database.
type blockKey struct {
	db  int
	key string
}

// waiter is one blocked client.
type waiter struct {
	c        *Client
	keys     []blockKey
	wake     chan struct{} // capacity 1
	signaled bool          // under blockRegistry.mu
	// unblocked is set by CLIENT UNBLOCK: unblockTimeout or unblockError.
	unblocked atomic.Int32
}

const (
	unblockTimeout = 1
	unblockError   = 2
)

// blockRegistry holds the waiters of one server.
type blockRegistry struct {
	n    atomic.Int64 // registered waiters (INFO blocked_clients)
	mu   sync.Mutex
	keys map[blockKey][]*waiter // FIFO per key
}

func (r *blockRegistry) init() { r.keys = map[blockKey][]*waiter{} }

// signalReady wakes the first waiter on key that is not already woken. The
// caller holds key's shard lock.
func (s *Server) signalReady(db int, key []byte) {
	r := &s.blocking
	if r.n.Load() == 0 {
		return
	}
	r.mu.Lock()
	for _, w := range r.keys[blockKey{db, string(key)}] {
		if !w.signaled {
			w.signaled = true
			select {
			case w.wake <- struct{}{}:
			default:
			}
			break
		}
	}
	r.mu.Unlock()
}

// signalIfBlockable is signalReady for a value of type t that was just
// stored under key by a generic key command (RENAME, MOVE, COPY, RESTORE).
func (s *Server) signalIfBlockable(db int, key []byte, t shard.Type) {
	switch t {
	case shard.TypeList, shard.TypeZSet:
		s.signalReady(db, key)
	case shard.TypeStream:
		s.signalStream(db, key)
	}
}

// signalStream wakes every waiter on key (XREAD and XREADGROUP): new
// entries are for all readers, unlike a popped element. A waiter that
// finds nothing for itself re-arms. The caller holds key's shard lock.
func (s *Server) signalStream(db int, key []byte) {
	r := &s.blocking
	if r.n.Load() == 0 {
		return
	}
	r.mu.Lock()
	for _, w := range r.keys[blockKey{db, string(key)}] {
		w.signaled = true
		select {
		case w.wake <- struct{}{}:
		default:
		}
	}
	r.mu.Unlock()
}

func (r *blockRegistry) register(w *waiter) {
	r.mu.Lock()
	for _, k := range w.keys {
		r.keys[k] = append(r.keys[k], w)
	}
	r.n.Add(1)
	r.mu.Unlock()
}

// unregister removes w and reports whether it had been signalled.
func (r *blockRegistry) unregister(w *waiter) bool {
	r.mu.Lock()
	for _, k := range w.keys {
		ws := r.keys[k]
		for i, o := range ws {
			if o == w {
				ws = append(ws[:i], ws[i+1:]...)
				break
			}
		}
		if len(ws) == 0 {
			delete(r.keys, k)
		} else {
			r.keys[k] = ws
		}
	}
	r.n.Add(-1)
	sig := w.signaled
	r.mu.Unlock()
	return sig
}

// rearm makes w wakeable again after a wake-up that found nothing; the
// caller holds the locks of w's keys.
func (r *blockRegistry) rearm(w *waiter) {
	r.mu.Lock()
	w.signaled = false
	select {
	case <-w.wake:
	default:
	}
	r.mu.Unlock()
}

// blockedClients is INFO's blocked_clients.
func (s *Server) blockedClients() int64 { return s.blocking.n.Load() }

// parseTimeout parses a blocking timeout in seconds (decimals allowed) as
// Redis's getTimeoutFromObjectOrReply does; zero means forever.
func parseTimeout(c *Client, b []byte) (time.Duration, bool) {
	f, err := strconv.ParseFloat(string(b), 64)
	if err != nil || len(b) == 0 || isSpace(b[0]) || math.IsNaN(f) || hasHexOrUnderscore(b) {
		c.err("ERR timeout is not a float or out of range")
		return 0, false
	}
	ms := f * 1000
	if ms < 0 && ms > -1 {
		ms = 0 // Redis truncates to whole milliseconds before the sign check
	}
	if ms < 0 || ms >= math.MaxInt64 {
		// Redis converts to a long long: out-of-range values (inf) become
		// LLONG_MIN on x86-64, hence "negative".
		c.err("ERR timeout is negative")
		return 0, false
	}
	if ms >= float64(math.MaxInt64)-float64(time.Now().UnixMilli()) {
		c.err("ERR timeout is out of range")
		return 0, false
	}
	return time.Duration(int64(ms)) * time.Millisecond, true
}

func hasHexOrUnderscore(b []byte) bool {
	for _, ch := range b {
		if ch == 'x' || ch == 'X' || ch == '_' || ch == 'p' || ch == 'P' {
			return true
		}
	}
	return false
}

// blockOn runs a blocking command. try is called with the locks of keys
// held; it serves the command (replying, possibly with an error) and returns
// true, or returns false when every key is empty. first is true on the
// first attempt (a key of the wrong type is an error then; while blocked,
// such a key is treated as empty, as Redis 7.0 does). onTimeout replies
// the command's timeout reply.
func (c *Client) blockOn(keys [][]byte, timeout time.Duration, try func(first bool) bool, onTimeout func()) {
	set := c.lockKeys(keys)
	if try(true) {
		c.unlock(set)
		return
	}
	if c.noBlock || c.inTransaction() {
		onTimeout()
		c.unlock(set)
		return
	}
	w := &waiter{c: c, wake: make(chan struct{}, 1)}
	for _, k := range keys {
		bk := blockKey{c.db, string(k)}
		dup := false
		for _, o := range w.keys {
			dup = dup || o == bk
		}
		if !dup {
			w.keys = append(w.keys, bk)
		}
	}
	r := &c.srv.blocking
	r.register(w)
	c.unlock(set)
	c.srv.kseAfter(c) // notify.go: what the try raised (XREAD's keymiss) leaves before we wait, as from Redis
	waitStart := time.Now()
	defer func() { c.waitedNs += int64(time.Since(waitStart)) }()
	c.blocked.Store(w)
	defer c.blocked.Store(nil)

	// The replies of earlier pipelined commands go out now.
	if len(c.out) > 0 {
		n, err := c.nc.Write(c.out)
		c.netWrote(n) // netstats.go
		if err != nil {
			c.leave(w)
			c.quit = true
			return
		}
		c.out = c.out[:0]
		c.cmdOut = 0 // our reply will start there (notify.go)
	}
	watch := c.watchConn()
	defer c.stopWatch(watch)
	var deadline <-chan time.Time
	if timeout > 0 {
		t := time.NewTimer(timeout)
		defer t.Stop()
		deadline = t.C
	}
	for {
		if how := w.unblocked.Load(); how != 0 {
			c.leave(w)
			if how == unblockError {
				c.err("UNBLOCKED client unblocked via CLIENT UNBLOCK")
			} else {
				onTimeout()
			}
			return
		}
		select {
		case <-w.wake:
			if w.unblocked.Load() != 0 {
				continue
			}
			c.refreshCmdClock() // cmdclock.go: the keys are judged now, not when the command began
			set := c.lockKeys(keys)
			if try(false) {
				r.unregister(w)
				c.unlock(set)
				return
			}
			r.rearm(w)
			c.unlock(set)
		case <-deadline:
			c.leave(w)
			onTimeout()
			return
		case <-watch.gone:
			c.leave(w)
			c.quit = true
			return
		case <-c.srv.done:
			c.leave(w)
			c.quit = true
			return
		}
	}
}

// leave unregisters a waiter that did not pop; a wake-up it received goes
// to the next waiter of its keys.
func (c *Client) leave(w *waiter) {
	if !c.srv.blocking.unregister(w) {
		return
	}
	for _, k := range w.keys {
		sh, h := c.srv.store.ShardOf([]byte(k.key))
		sh.Lock()
		if e, ok := sh.Lookup(k.db, h, []byte(k.key), now()); ok && (e.Type() == shard.TypeList || e.Type() == shard.TypeZSet) {
			c.srv.signalReady(k.db, []byte(k.key))
		}
		sh.Unlock()
	}
}

// unblock is CLIENT UNBLOCK: it reports whether c was blocked.
func (c *Client) unblock(how int32) bool {
	w := c.blocked.Load()
	if w == nil || !w.unblocked.CompareAndSwap(0, how) {
		return false
	}
	select {
	case w.wake <- struct{}{}:
	default:
	}
	return true
}

// connWatch reads a blocked client's connection so that a disconnect is
// noticed at once; what the client sends meanwhile is kept for later.
type connWatch struct {
	done chan struct{} // the reader stopped
	gone chan struct{} // the connection is closed
	data []byte
}

const maxBlockedInput = 1 << 20

func (c *Client) watchConn() *connWatch {
	w := &connWatch{done: make(chan struct{}), gone: make(chan struct{})}
	go func() {
		defer close(w.done)
		buf := make([]byte, 4096)
		for len(w.data) < maxBlockedInput {
			n, err := c.nc.Read(buf)
			c.netRead(n) // netstats.go
			w.data = append(w.data, buf[:n]...)
			if err != nil {
				if !errors.Is(err, os.ErrDeadlineExceeded) {
					close(w.gone)
				}
				return
			}
		}
	}()
	return w
}

// stopWatch stops the reader and appends what it read to the input buffer.
func (c *Client) stopWatch(w *connWatch) {
	_ = c.nc.SetReadDeadline(time.Now())
	<-w.done
	_ = c.nc.SetReadDeadline(time.Time{})
	select {
	case <-w.gone:
		c.quit = true
	default:
	}
	if len(w.data) == 0 {
		return
	}
	if len(c.in)-c.w < len(w.data) {
		// The running command's arguments view the old buffer: copy, do
		// not overwrite.
		buf := make([]byte, c.w+len(w.data)+readBufSize)
		copy(buf, c.in[:c.w])
		c.setIn(buf)
	}
	c.w += copy(c.in[c.w:], w.data)
}
