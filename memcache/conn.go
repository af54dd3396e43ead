package memcache

import (
	"bytes"
	"errors"
	"io"
	"net"
	"runtime/debug"
	"sync"
	"syscall"
	"time"

	"github.com/damselflydb/damselfly/netpoll"
)

const (
	readBufSize  = 16 << 10
	keepOutBytes = 64 << 10 // output buffers larger than this are dropped after a write
	// maxLine is the longest command line accepted without its newline,
	// except for retrievals, which may name many keys (up to maxGetLine);
	// memcached closes the connection past it too.
	maxLine    = 2048
	maxGetLine = 1 << 20
	maxKeyLen  = 250
)

// pending is a storage command waiting for its data block.
type pending struct {
	active  bool
	meta    bool // ms (opts holds its flags) rather than a classic command
	mode    storeMode
	key     []byte // owned copy: the input buffer may move while waiting
	flags   uint32
	exp     int64 // see parseExptime
	n       int   // data length without the trailing \r\n
	cas     uint64
	noreply bool
	opts    metaOpts
}

// conn is one client connection. It is served either by its own goroutine
// (serve, nc set) or by an event loop (as a netpoll.Handler, loop and fd
// set); either way only that goroutine touches its buffers. mu guards the
// fields Close reads to reach whichever serves it.
type conn struct {
	s *Server

	mu   sync.Mutex
	nc   net.Conn
	loop *netpoll.Loop
	fd   int

	in      []byte // unconsumed input is in[r:w]
	r, w    int
	out     []byte
	outPos  int // how much of out an event loop has written
	pend    pending
	swallow int // input bytes still to discard (refused data block)
	quit    bool
	detach  bool // leave the event loop before the next command (a busy script)

	// tio drives a TLS connection served by a loop (netpoll/tls.go).
	tio *netpoll.TLSStream

	obs obsState // Config.Observe (observe.go)

	toks    [][]byte // tokens of the current line (views into in)
	jargs   [][]byte // journal arguments (reused)
	now     int64    // unix ms of the current read: one clock read per batch, not per command
	scratch []byte   // value assembly (append, incr, CAS stamping)
	keyBuf  []byte
	num     [24]byte
	num2    [24]byte
}

func newConn(s *Server, nc net.Conn) *conn {
	c := &conn{s: s, nc: nc, fd: -1, in: make([]byte, readBufSize), toks: make([][]byte, 0, 32)}
	c.initObserve(nc) // observe.go
	return c
}

// Readable, Output, Wrote, Closed and Detached serve the connection on an
// event loop (netpoll.Handler): read once, execute every complete request,
// leave the replies for the loop to write.
func (c *conn) Readable(in netpoll.Input, nowNanos int64) netpoll.Action {
	c.now = nowNanos / 1e6
	if c.w == len(c.in) {
		c.makeRoom()
	}
	var n int
	var err syscall.Errno
	if c.tio != nil {
		c.in, n, err = c.tio.Read(in, c.in, c.w) // TLS: decrypted
	} else {
		n, err = in.Read(c.in[c.w:])
	}
	if err == syscall.EAGAIN || err == syscall.EINTR {
		return netpoll.Keep
	}
	if n <= 0 {
		return netpoll.CloseNow
	}
	c.w += n
	c.s.stats.bytesRead.Add(int64(n))
	perr := c.process()
	if c.detach && perr == nil && !c.quit {
		return netpoll.Detach
	}
	if c.r == c.w {
		c.r, c.w = 0, 0
		if len(c.in) > 4*readBufSize {
			c.in = make([]byte, readBufSize)
		}
	}
	if perr != nil || c.quit {
		return netpoll.CloseAfterWrite
	}
	return netpoll.Keep
}

func (c *conn) Output() []byte {
	if c.tio != nil {
		if c.outPos < len(c.out) {
			c.tio.Encrypt(c.out[c.outPos:])
			c.outPos = 0
			c.resetOut()
		}
		return c.tio.Output()
	}
	return c.out[c.outPos:]
}

func (c *conn) Wrote(n int) {
	c.s.stats.bytesWritten.Add(int64(n))
	if c.tio != nil {
		c.tio.Wrote(n)
		return
	}
	c.outPos += n
	if c.outPos == len(c.out) {
		c.resetOut()
		c.outPos = 0
	}
}

func (c *conn) Closed() { c.s.dropConn(c) }

// Detached takes the connection off its event loop when a command would
// wait for a busy script (process set detach): from now on a goroutine
// serves it, starting with the replies and requests already buffered.
func (c *conn) Detached(fd int, buffered []byte) {
	if len(buffered) > 0 && c.tio == nil {
		// Input the io_uring loop received ahead comes before the socket's.
		for len(c.in)-c.w < len(buffered) {
			c.makeRoom()
		}
		c.w += copy(c.in[c.w:], buffered)
	}
	nc, err := netpoll.FileConn(fd)
	if err != nil {
		c.s.log.Warn("memcached: leaving the event loop", "err", err)
		c.s.dropConn(c)
		return
	}
	if c.tio != nil { // TLS: the goroutine serves the same tls.Conn
		nc, c.tio = c.tio.Pass(netpoll.PrefixConn(nc, buffered)), nil
	}
	c.mu.Lock()
	c.nc, c.loop, c.fd = nc, nil, -1
	c.mu.Unlock()
	c.detach = false
	if len(c.out) > c.outPos {
		if _, err := nc.Write(c.out[c.outPos:]); err != nil {
			nc.Close()
			c.s.dropConn(c)
			return
		}
	}
	c.resetOut()
	c.outPos = 0
	go c.serve()
}

// nowMs is the time commands judge expiry by: the time of the read that
// brought them (commands run for microseconds; Redis caches its clock per
// command the same way).
func (c *conn) nowMs() int64 { return c.now }

func (c *conn) resetOut() {
	if cap(c.out) > keepOutBytes {
		c.out = nil
	} else {
		c.out = c.out[:0]
	}
}

// serve runs the connection: read what is available, execute every complete
// request, write all replies at once.
func (c *conn) serve() {
	defer c.s.dropConn(c)
	defer c.nc.Close()
	leftByLoop := c.r < c.w // requests an event loop read (or a TLS handshake brought) but did not run
	for {
		if c.w == len(c.in) {
			c.makeRoom()
		}
		var n int
		var rerr error
		if leftByLoop {
			leftByLoop = false
		} else {
			n, rerr = c.nc.Read(c.in[c.w:])
		}
		c.w += n
		c.now = time.Now().UnixMilli()
		c.s.stats.bytesRead.Add(int64(n))
		perr := c.process()
		if len(c.out) > 0 {
			c.s.stats.bytesWritten.Add(int64(len(c.out)))
			if _, err := c.nc.Write(c.out); err != nil {
				return
			}
			c.resetOut()
		}
		if perr != nil || c.quit {
			return
		}
		if rerr != nil {
			if !errors.Is(rerr, io.EOF) && !errors.Is(rerr, net.ErrClosed) {
				c.s.log.Debug("memcached read error", "err", rerr)
			}
			return
		}
		if c.r == c.w {
			c.r, c.w = 0, 0
			if len(c.in) > 4*readBufSize {
				c.in = make([]byte, readBufSize)
			}
		}
	}
}

// need is how many unconsumed bytes the next request needs in one piece.
func (c *conn) need() int {
	if c.pend.active {
		return c.pend.n + 2
	}
	return 0
}

// makeRoom compacts or grows the full input buffer. It grows at most to twice
// its size (bounded by what the pending request needs), so the buffer is
// never more than twice what the client actually sent.
func (c *conn) makeRoom() {
	if c.r > 0 {
		n := copy(c.in, c.in[c.r:c.w])
		c.r, c.w = 0, n
		if c.w < len(c.in) {
			return
		}
	}
	size := 2 * len(c.in)
	if need := c.need(); need > len(c.in) && need < size {
		size = need
	}
	buf := make([]byte, size)
	copy(buf, c.in[:c.w])
	c.in = buf
}

var errClose = errors.New("close connection")

// processBatch executes every complete request in the input buffer (process,
// observe.go, wraps it); it returns errClose when the connection must be
// closed.
func (c *conn) processBatch() error {
	for c.r < c.w && !c.quit {
		if c.loop != nil && c.s.cfg.Busy != nil && c.s.cfg.Busy() {
			c.detach = true
			return nil
		}
		if c.swallow > 0 {
			n := min(c.swallow, c.w-c.r)
			c.r += n
			c.swallow -= n
			continue
		}
		if c.pend.active {
			need := c.pend.n + 2
			if c.w-c.r < need {
				return nil
			}
			data := c.in[c.r : c.r+c.pend.n]
			term := c.in[c.r+c.pend.n : c.r+need]
			c.r += need
			c.pend.active = false
			if term[0] != '\r' || term[1] != '\n' {
				mark := len(c.out)
				if !c.pend.noreply {
					c.reply("CLIENT_ERROR bad data chunk\r\n")
				}
				if c.s.cfg.Observe != nil {
					c.badChunkObserved(mark) // observe.go
				}
				continue
			}
			if c.s.cfg.Observe != nil {
				c.completeObserved(data) // observe.go
				continue
			}
			c.safely(func() { c.complete(data) })
			continue
		}
		buf := c.in[c.r:c.w]
		i := bytes.IndexByte(buf, '\n')
		if i < 0 {
			if len(buf) > maxLine && (!isRetrieval(buf) || len(buf) > maxGetLine) {
				return errClose
			}
			return nil
		}
		line := buf[:i]
		c.r += i + 1
		if len(line) > 0 && line[len(line)-1] == '\r' {
			line = line[:len(line)-1]
		}
		c.safely(func() { c.dispatch(line) })
	}
	return nil
}

// safely runs one command so that a panic in it answers SERVER_ERROR
// instead of taking the server down (shard locks are released by defers).
func (c *conn) safely(fn func()) {
	defer func() {
		if r := recover(); r != nil {
			c.s.log.Error("panic in memcached command", "panic", r, "stack", string(debug.Stack()))
			c.reply("SERVER_ERROR internal error\r\n")
		}
	}()
	fn()
}

func isRetrieval(b []byte) bool {
	return bytes.HasPrefix(b, []byte("get ")) || bytes.HasPrefix(b, []byte("gets ")) ||
		bytes.HasPrefix(b, []byte("gat ")) || bytes.HasPrefix(b, []byte("gats "))
}

// tokenize splits line on spaces, skipping empty tokens, like memcached.
func (c *conn) tokenize(line []byte) [][]byte {
	toks := c.toks[:0]
	start := -1
	for i, ch := range line {
		if ch == ' ' {
			if start >= 0 {
				toks = append(toks, line[start:i])
				start = -1
			}
		} else if start < 0 {
			start = i
		}
	}
	if start >= 0 {
		toks = append(toks, line[start:])
	}
	c.toks = toks
	return toks
}

func (c *conn) reply(s string) { c.out = append(c.out, s...) }

// dispatch runs one command line.
func (c *conn) dispatch(line []byte) {
	t := c.tokenize(line)
	if len(t) == 0 {
		c.reply("ERROR\r\n")
		return
	}
	if c.s.cfg.Observe != nil {
		c.dispatchObserved(t, line) // observe.go
		return
	}
	if c.s.cfg.Route != nil && c.clusterRefuses(t) { // cluster.go
		return
	}
	c.run(t)
}

// run runs the command of the tokens t.
func (c *conn) run(t [][]byte) {
	n := len(t)
	switch string(t[0]) {
	case "get":
		c.cmdGet(t, false, false)
	case "gets":
		c.cmdGet(t, true, false)
	case "gat":
		c.cmdGet(t, false, true)
	case "gats":
		c.cmdGet(t, true, true)
	case "set":
		c.cmdStore(t, modeSet)
	case "add":
		c.cmdStore(t, modeAdd)
	case "replace":
		c.cmdStore(t, modeReplace)
	case "append":
		c.cmdStore(t, modeAppend)
	case "prepend":
		c.cmdStore(t, modePrepend)
	case "cas":
		c.cmdStore(t, modeCAS)
	case "incr":
		c.cmdArith(t, true)
	case "decr":
		c.cmdArith(t, false)
	case "delete":
		c.cmdDelete(t)
	case "touch":
		c.cmdTouch(t)
	case "mg":
		c.cmdMetaGet(t)
	case "ms":
		c.cmdMetaSet(t)
	case "md":
		c.cmdMetaDelete(t)
	case "ma":
		c.cmdMetaArith(t)
	case "mn":
		c.reply("MN\r\n")
	case "stats":
		c.cmdStats(t)
	case "flush_all":
		if n > 3 {
			c.reply("ERROR\r\n")
			return
		}
		c.cmdFlushAll(t)
	case "version":
		c.reply("VERSION " + Version + "\r\n")
	case "verbosity":
		if n != 2 && n != 3 {
			c.reply("ERROR\r\n")
			return
		}
		c.cmdVerbosity(t)
	case "quit":
		c.quit = true
	default:
		c.reply("ERROR\r\n")
	}
}

// noreply reports whether the last token is "noreply".
func noreply(t [][]byte) bool {
	return len(t) > 1 && string(t[len(t)-1]) == "noreply"
}

// validKey applies memcached's key rules: 1 to 250 bytes, no control
// characters (spaces cannot occur: they separate tokens).
func validKey(k []byte) bool {
	if len(k) == 0 || len(k) > maxKeyLen {
		return false
	}
	for _, ch := range k {
		if ch < ' ' || ch == 0x7f {
			return false
		}
	}
	return true
}
