package server

import (
	"errors"
	"io"
	"math/rand/v2"
	"net"
	"runtime/debug"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/damselflydb/damselfly/acl"
	"github.com/damselflydb/damselfly/netpoll"
)

const readBufSize = 16 << 10

// Client is one connection and its session state. Its fields are touched by
// its own goroutine only, except those under mu (read by CLIENT LIST/KILL).
type Client struct {
	srv *Server
	id  int64

	// The connection is either served by its own goroutine (nc set, loop
	// nil) or owned by an event loop (loop and fd set, nc nil) until a
	// command that may block detaches it (eventloop_linux.go); connMu
	// guards the switch so that CLIENT KILL and shutdown (closeConn) reach
	// whichever owns the connection.
	connMu sync.Mutex
	nc     net.Conn
	loop   *netpoll.Loop
	fd     int
	// detach is set by execute when a loop-owned client must continue on
	// its own goroutine before running the command at in[r:]; outPos is
	// how much of out a loop has written so far.
	detach bool
	outPos int
	// gateWait: a write of this client took a save's memory budget past
	// its soft limit, so it waits at the save's gate before its next write
	// (writergate.go); waitDetached: it was detached from its loop only to
	// wait at that gate, and goes back to a loop afterwards (reattach).
	gateWait, waitDetached bool

	in   []byte // input buffer; unconsumed bytes are in[r:w]
	r, w int
	p    *parser
	out  []byte

	db     int
	proto  int
	authed bool
	closed atomic.Bool // set by CLIENT KILL or shutdown
	quit   bool        // close after flushing replies

	mu       sync.Mutex
	name     string
	lastCmd  atomic.Pointer[command]
	created  time.Time
	lastSeen atomic.Int64 // unix ns of the last command
	addr     string
	laddr    string
	isUnix   bool

	reply replyState // CLIENT REPLY ON|OFF|SKIP (cmd_client_reply.go)

	lower  [32]byte // scratch for lower-casing command names
	numBuf [24]byte // scratch for formatting a number (a stack buffer would escape)

	view clientView // what CLIENT LIST shows of the session

	dirtyMark uint64   // shard change counter(s) when the command locked them
	propagate [][]byte // how the running command is replicated (nil: not at all)
	// propagateMany, when set, replaces propagate by several commands,
	// replicated inside MULTI/EXEC (rewriteMany); commitWrite clears it.
	propagateMany [][][]byte
	// rwArgs and rwID are reusable storage for a rewritten replication form
	// (XADD's concrete ID); valid until the command's next call.
	rwArgs [][]byte
	rwID   []byte

	sess session // Pub/Sub, MULTI/EXEC, WATCH and script state (multi.go)
	// Replication (see replication.go). fromPrimary marks the internal
	// client that applies the primary's stream; woff is the stream offset
	// after this client's last write (WAIT); handoff, when a command sets it,
	// takes the connection over once pending replies are written (PSYNC):
	// the serve loop stops reading and calls it instead.
	fromPrimary bool
	woff        int64
	handoff     func(nc net.Conn, pending []byte)
	replPort    int
	replIP      string
	replCapaEOF bool
	replPsync2  bool
	rnd         *rand.Rand             // random source of the collection commands
	blocked     atomic.Pointer[waiter] // set while the client waits in a blocking command
	// replCapaNative: REPLCONF capa damselfly-native (replication/native.go)
	replCapaNative bool
	// replCapaParallel: REPLCONF capa damselfly-parallel (repl_sync.go)
	replCapaParallel bool
	// noBlock makes blocking commands answer at once as if timed out (set
	// while running EXEC or a script, as Redis does).
	noBlock bool
	// obufSoftSince is when the pending output first passed the soft
	// output buffer limit (unix ns; 0: under it). See outlimit.go.
	obufSoftSince int64
	// waitedNs is how long the running command waited holding no shard
	// (blockOn), which the watchdog does not count.
	waitedNs int64
	// aofWait: this batch wrote, so its replies wait for the AOF's
	// barrier (aof.go); aofLoading marks the client replaying the AOF.
	aofWait    bool
	aofLoading bool
	// gate is the event loop's busy-script gate (script.go), nil off loops.
	gate *loopGate
	// tio is a TLS client's encryption while a loop serves it (tlsloop.go).
	tio *tlsLoopIO
	// kseMark is 1 + the length of out when the running command raised its
	// first keyspace event (0: none); cmdOut is the length of out when the
	// command began, where its reply starts. See notify.go.
	kseMark, cmdOut int

	user atomic.Pointer[acl.User] // the ACL user (acl.go); nil: internal, unrestricted

	// Command statistics (cmdstats.go): the command being dispatched (an
	// error before it runs is a rejection), errors written, the counter slot.
	rejectable *command
	errCount   uint32
	statSlot   uint8
	monitoring bool   // in MONITOR mode (monitor.go)
	callErr    string // the last error redis.call got (cmdstats.go)
	// Client-side caching (tracking.go) and CLIENT's per-connection
	// switches: NO-EVICT, NO-TOUCH, SETINFO (clientadmin.go).
	track clientTrack
	admin clientAdmin
	// cl is the connection's cluster state: READONLY, ASKING (cluster.go).
	cl clusterSession

	// Command clock (issue 20, cmdclock.go).
	cmdMs int64
	clk   cmdClock
	// The last command name looked up and its command (issue 20,
	// cmdcache.go): a pipeline repeats its command.
	cmdCache cmdCache
	// The key prefetch window over pipelined requests (prefetch.go).
	ahead     *lookahead
	aheadLeft int
	keyHint   keyHint // the running request's key, shard and hash, from the window
	// inHeld and inAhead are this client's shares of Server.inRetained
	// and Server.inAhead (inbuf.go).
	inHeld, inAhead int64
}

func (s *Server) newClient(nc net.Conn) *Client {
	c := &Client{
		srv:     s,
		nc:      nc,
		fd:      -1,
		id:      s.nextClientID.Add(1),
		in:      make([]byte, readBufSize),
		p:       newParser(),
		proto:   2,
		created: time.Now(),
		addr:    nc.RemoteAddr().String(),
		laddr:   nc.LocalAddr().String(),
	}
	if _, ok := nc.(*net.UnixConn); ok {
		c.isUnix = true
		c.addr = "/unixsocket:0"
	}
	c.user.Store(s.acl.def)
	c.authed = s.aclNoAuthNeeded()
	c.p.Authed = c.authed
	c.statSlot = uint8(c.id) & uint8(s.obs.nslots-1)
	c.p.MaxBulk = int(s.cfg.protoMaxBulkLen.Load())
	c.lastSeen.Store(time.Now().UnixNano())
	c.view.multi.Store(-1)
	c.view.proto.Store(2)
	c.view.fd.Store(connFD(nc))
	c.view.rbs.Store(int32(len(c.in)))
	c.view.qbufFree.Store(int32(len(c.in)))
	return c
}

// serve runs the connection on its own goroutine: read what is available,
// execute every complete request, write all replies at once.
func (c *Client) serve() { c.serveFrom(false) }

// serveFrom is serve; resumed (a client detached from an event loop) first
// writes the replies the loop had not written yet and executes the input
// already buffered before reading more.
// A client detached only to wait at a save's gate goes back to a loop
// once it may (reattach); the loop owns it from then on.
func (c *Client) serveFrom(resumed bool) {
	nc, reattached := c.nc, false
	defer func() {
		if reattached {
			return
		}
		c.endSession()
		nc.Close()
		c.releaseRetainedIn() // inbuf.go
		c.srv.dropClient(c)
	}()
	if resumed && c.outPos < len(c.out) {
		n, err := c.nc.Write(c.out[c.outPos:])
		c.netWrote(n) // netstats.go
		if err != nil {
			return
		}
	}
	c.out, c.outPos = c.out[:0], 0
	for {
		var n int
		var rerr error
		if !resumed {
			if c.w == len(c.in) {
				c.makeRoom()
			}
			n, rerr = c.nc.Read(c.in[c.w:])
			c.w += n
			c.netRead(n) // netstats.go
			c.lastSeen.Store(time.Now().UnixNano())
			if c.overQueryLimit() { // querybuf.go
				return
			}
		}
		resumed = false
		perr := c.processInput()
		c.aofSyncReplies()
		if c.sess.outq != nil { // subscribed: output goes through the queue
			if !c.queueOutput() {
				return
			}
		} else if len(c.out) > 0 {
			n, err := c.nc.Write(c.out)
			c.netWrote(n) // netstats.go
			if err != nil {
				return
			}
			c.resetOut()
		}
		c.noteBuffers(0) // written (or queued: omem)
		if perr != nil || c.quit || c.closed.Load() {
			return
		}
		if h := c.handoff; h != nil {
			c.handoff = nil
			h(c.nc, append([]byte(nil), c.in[c.r:c.w]...))
			return
		}
		if rerr != nil {
			if !errors.Is(rerr, io.EOF) && !errors.Is(rerr, net.ErrClosed) {
				c.srv.log.Debug("read error", "client", c.id, "err", rerr)
			}
			return
		}
		if c.r == c.w {
			c.inputDrained() // inbuf.go
		}
		if c.waitDetached && c.reattach() { // writergate.go
			reattached = true
			return
		}
	}
}

// makeRoom compacts or grows the input buffer when it is full. A request
// whose size the parser knows gets a buffer of exactly that size if the
// budget allows (inbuf.go); otherwise the buffer grows at most to twice
// what was received, so a client announcing a huge bulk cannot make the
// server allocate it before sending it.
func (c *Client) makeRoom() {
	if c.r > 0 {
		n := copy(c.in, c.in[c.r:c.w])
		c.r, c.w = 0, n
		if c.w < len(c.in) {
			return
		}
	}
	size := 2 * len(c.in)
	need := c.p.Need()
	if need > size && c.growExact(need) {
		return
	}
	if need > len(c.in) && need < size {
		size = need
	}
	buf := make([]byte, size)
	copy(buf, c.in[:c.w])
	c.setIn(buf)
}

// processInput executes every complete request in the input buffer, as
// one batch for the command clock (cmdclock.go).
func (c *Client) processInput() error {
	c.clk.batch = true
	c.aheadLeft = 0 // prefetch.go: a new window
	err := c.processBatch()
	c.clk.batch, c.clk.last = false, 0
	c.keyHint = keyHint{} // the input may change before the next batch
	return err
}

func (c *Client) processBatch() error {
	for c.r < c.w && !c.quit && !c.closed.Load() && c.handoff == nil && !c.detach {
		args, n, err := c.p.Next(c.in[c.r:c.w])
		switch {
		case err == errNeedMore:
			return nil
		case err == errEmptyMultibulk:
			c.r += n
			continue
		case err != nil:
			c.err("ERR " + err.Error())
			c.srv.log.Debug("protocol error", "client", c.id, "addr", c.addr, "err", err)
			return err
		}
		c.prefetchNext(n) // prefetch.go
		c.execute(args)
		if c.detach {
			// Not run: the request stays buffered for the goroutine
			// that takes the connection over (the parser is back at a
			// command start, so it parses it again).
			return nil
		}
		c.r += n
		if c.outputLimitReached() {
			return nil
		}
	}
	return nil
}

// execute runs one command, recovering from a panic inside it so that one
// bad command never takes the server down.
func (c *Client) execute(args [][]byte) {
	if c.reply.mode != replyOn || c.reply.changed {
		c.executeReplyMode(args)
		return
	}
	c.dispatch(args)
}

// executeReplyMode is execute under CLIENT REPLY OFF/SKIP (or just after
// it changed). Kept apart so that dispatch and run, with no defer or one,
// get Go's open-coded defers.
func (c *Client) executeReplyMode(args [][]byte) {
	mark, mode := c.reply.begin(c)
	defer c.reply.after(c, mark, mode)
	c.dispatch(args)
}

// dispatch checks one command and runs it.
func (c *Client) dispatch(args [][]byte) {
	c.dispatching(nil)              // cmdstats.go: no command yet (an unknown one is nobody's rejection)
	cmd := c.lookupCommand(args[0]) // cmdcache.go
	if cmd == nil {
		c.unknownCommand(args)
		c.txFlag()
		return
	}
	if cmd.subs != nil && len(args) > 1 {
		sub := cmd.lookupSub(c, args)
		if sub == nil {
			c.err("ERR unknown subcommand '" + sanitize(args[1], 128) + "'. Try " + strings.ToUpper(cmd.name) + " HELP.")
			c.txFlag()
			return
		}
		cmd = sub
	}
	c.dispatching(cmd)                         // cmdstats.go: errors from here on are rejections
	if c.monitoring && c.monitorRefuses(cmd) { // monitor.go
		return
	}
	if !cmd.arityOK(args) {
		c.err("ERR wrong number of arguments for '" + cmd.name + "' command")
		c.txFlag()
		return
	}
	if c.debugDenied(cmd) {
		return
	}
	if !c.authed && !cmd.noAuth && !c.srv.aclNoAuthNeeded() { // acl.go: as Redis, a nopass default admits everyone
		c.err("NOAUTH Authentication required.")
		return
	}
	if c.aclDenied(cmd, args) { // acl.go
		return
	}
	if c.srv.cluster != nil && c.clusterCheck(cmd, args) { // cluster.go
		return
	}
	if c.srv.scripts.busy.Load() != nil && (c.clockBreak() || !c.waitBusy(cmd, args)) { // script.go
		return
	}
	if c.srv.pause.kind.Load() != pauseOff && (c.clockBreak() || c.pausedWait(cmd) || c.clusterAfterPause(cmd, args)) { // clientadmin.go, cluster_failover.go
		return
	}
	if c.srv.shutdownRefused(c) {
		// Shutting down: this connection is being closed; never reply.
		c.closed.Store(true)
		return
	}
	if (cmd.write || cmd.name == "ping") && c.srv.persist.lastErr.Load() && c.srv.writesDenied() {
		c.err(misconfErr)
		return
	}
	if !c.aofLoading && c.srv.refusedWhileLoading(cmd) {
		c.err(loadingErr)
		c.txFlag()
		return
	}
	if (cmd.write || cmd.name == "ping") && !c.fromPrimary && !c.aofLoading {
		if e := c.srv.aofMisconf(); e != "" {
			c.err(e)
			return
		}
	}
	if cmd.denyOOM && !c.fromPrimary && !c.aofLoading && c.srv.cfg.maxMemory.Load() > 0 {
		c.clockBreak() // eviction may take a while
		if !c.admitCommand(cmd, args) {
			c.err("OOM command not allowed when used memory > 'maxmemory'.")
			c.txFlag()
			return
		}
	}
	if c.intercept(cmd, args) { // MULTI queuing, Pub/Sub context
		return
	}
	if c.gateWait && gated(cmd) && !c.waitAtGate() { // writergate.go
		return
	}
	if (c.loop != nil || c.waitDetached) && c.mayBlock(cmd, args) {
		if c.loop != nil {
			c.detach = true
			return
		}
		c.waitDetached = false // it would have been detached: stay off the loops
		c.srv.gateKept.Add(1)
	}
	if cmd.write && !c.fromPrimary && c.srv.repl.IsReplica() {
		c.err("READONLY You can't write against a read only replica.")
		return
	}
	if c.lastCmd.Load() != cmd { // a pipeline repeats its command: skip the store's write barrier
		c.lastCmd.Store(cmd)
	}
	c.run(cmd, args)
}

// run runs a checked command, recovering from a panic inside it.
func (c *Client) run(cmd *command, args [][]byte) {
	defer func() {
		if r := recover(); r != nil {
			c.clockBreak()
			c.srv.log.Error("panic in command", "command", cmd.name, "panic", r, "stack", string(debug.Stack()))
			c.err("ERR internal error while running '" + cmd.name + "'")
			c.kseMark = 0
			c.srv.kse.disown(c) // notify.go: what it raised goes with the next drain
		}
	}()
	c.propagate = args
	c.cmdOut = len(c.out)
	start, wallMs := c.cmdStart() // cmdclock.go: the previous command's end, in a batch
	c.cmdBeginAt(cmd, args, wallMs)
	errs := c.errCount
	if c.track.on || c.admin.noTouch.Load() {
		c.beforeCommand(cmd, args) // clientadmin.go
	}
	cmd.fn(c, args)
	if c.track.on || len(c.track.own) > 0 {
		c.trackAfter(cmd) // tracking.go
	}
	c.cmdEnded(c.cmdDone(cmd, args, start, errs, callDirect))
	c.srv.kseAfter(c) // notify.go
	c.propagate, c.propagateMany = nil, nil
}

// lowerName lower-cases a command name without allocating for short names.
func (c *Client) lowerName(b []byte) string {
	if len(b) > len(c.lower) {
		return strings.ToLower(string(b))
	}
	for i, ch := range b {
		if ch >= 'A' && ch <= 'Z' {
			ch += 'a' - 'A'
		}
		c.lower[i] = ch
	}
	return unsafeString(c.lower[:len(b)])
}

func (c *Client) unknownCommand(args [][]byte) {
	var sb strings.Builder
	sb.WriteString("ERR unknown command '")
	sb.WriteString(sanitize(args[0], 128))
	sb.WriteString("', with args beginning with: ")
	for _, a := range args[1:] {
		if sb.Len() > 1024 {
			break
		}
		sb.WriteString("'")
		sb.WriteString(sanitize(a, 128))
		sb.WriteString("' ")
	}
	c.err(sb.String())
}

// sanitize truncates and replaces control characters so an error reply
// stays one line.
func sanitize(b []byte, max int) string {
	if len(b) > max {
		b = b[:max]
	}
	s := []byte(string(b))
	for i, ch := range s {
		if ch == '\r' || ch == '\n' {
			s[i] = ' '
		}
	}
	return string(s)
}

// closeConn closes the connection from any goroutine (CLIENT KILL,
// shutdown); the goroutine or loop serving it notices and cleans up.
func (c *Client) closeConn() {
	c.connMu.Lock()
	nc, l, fd := c.nc, c.loop, c.fd
	c.connMu.Unlock()
	if nc != nil {
		_ = nc.Close()
	} else if l != nil {
		l.RequestClose(fd, (*loopClient)(c))
	}
}

// mayBlock reports whether cmd may wait inside its handler or take the
// connection over, so that an event loop must not run it: blocking
// commands, WAIT, entering Pub/Sub (output through a writer goroutine),
// PSYNC/SYNC (handoff), scripts (SCRIPT KILL must reach a busy one), and
// the slow admin commands DEBUG and SAVE (all x-detach or blocking in the
// command table). EXEC qualifies when it would run one of them, or one that
// waits for locks or other goroutines itself (x-own-locks).
func (c *Client) mayBlock(cmd *command, args [][]byte) bool {
	if cmd.mayBlock || cmd.blockOption && blockOptionGiven(args) || cmd.randCount && manyRandPicks(args) {
		return true
	}
	if cmd.name == "exec" && c.sess.tx != nil {
		for _, q := range c.sess.tx.queue {
			if q.cmd.mayBlock || q.cmd.ownLocks {
				return true
			}
		}
	}
	return false
}

// info describes the client as CLIENT LIST does.
func (c *Client) info() string {
	c.mu.Lock()
	name := c.name
	c.mu.Unlock()
	last := "NULL"
	if cmd := c.lastCmd.Load(); cmd != nil {
		last = cmd.name
	}
	now := time.Now()
	age := int64(now.Sub(c.created).Seconds())
	idle := (now.UnixNano() - c.lastSeen.Load()) / 1e9
	var sb strings.Builder
	sb.WriteString("id=")
	sb.WriteString(itoa(c.id))
	sub := &c.sess.subs
	sb.WriteString(" addr=" + c.addr + " laddr=" + c.laddr + " fd=" + itoa(int64(c.view.fd.Load())) + " name=" + name)
	sb.WriteString(" age=" + itoa(age) + " idle=" + itoa(idle) + " flags=" + c.listFlags() + " db=" + itoa(int64(c.view.db.Load())))
	sb.WriteString(" sub=" + itoa(int64(sub.Count(kindChannel))) + " psub=" + itoa(int64(sub.Count(kindPattern))) +
		" ssub=" + itoa(int64(sub.Count(kindShard))) + " multi=" + itoa(int64(c.view.multi.Load())))
	sb.WriteString(c.bufferFields())
	sb.WriteString(" events=r cmd=" + last + " user=" + c.userName() + " redir=" + itoa(c.trackRedir()) + " resp=" + itoa(int64(c.view.proto.Load())) + c.libFields())
	return sb.String()
}
