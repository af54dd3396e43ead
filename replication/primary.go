package replication

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/damselflydb/damselfly/resp"
)

// Peer is a connection that asked for PSYNC or SYNC, with what it told us
// before (REPLCONF).
type Peer struct {
	Conn       net.Conn
	Pending    []byte // bytes the client sent after PSYNC, already read
	IP         string
	ListenPort int
	CapaEOF    bool
	CapaPsync2 bool
	// CapaNative: the replica is a Damselfly that sent REPLCONF capa
	// damselfly-native, so its full sync may come compressed (native.go).
	CapaNative bool
	// CapaParallel: REPLCONF capa damselfly-parallel (native.go).
	CapaParallel bool
}

// Replica states, as INFO names them.
const (
	stateWaitBgsave = "wait_bgsave"
	stateSendBulk   = "send_bulk"
	stateOnline     = "online"
)

// replicaConn is a replica attached to this node.
type replicaConn struct {
	n       *Node
	conn    net.Conn
	ip      string
	port    int
	state   atomic.Value // string
	ackOff  atomic.Int64
	ackTime atomic.Int64 // unix seconds of the last ACK
	acked   atomic.Bool  // a REPLCONF ACK arrived

	mu        sync.Mutex
	buf       []byte // stream bytes not yet handed to the socket
	softSince time.Time
	dead      bool

	signal    chan struct{} // buffered: something to send
	done      chan struct{} // closed by kill
	startOnce sync.Once
	start     chan struct{} // closed when the stream may flow
}

func (n *Node) newReplicaConn(p Peer) *replicaConn {
	r := &replicaConn{
		n: n, conn: p.Conn, ip: p.IP, port: p.ListenPort,
		signal: make(chan struct{}, 1), done: make(chan struct{}), start: make(chan struct{}),
	}
	r.state.Store(stateWaitBgsave)
	r.ackTime.Store(time.Now().Unix())
	return r
}

func (r *replicaConn) online() bool { return r.state.Load().(string) == stateOnline }

func (r *replicaConn) name() string { return net.JoinHostPort(r.ip, strconv.Itoa(r.port)) }

// push queues stream bytes; past the hard limit the replica is dropped.
// Called with n.mu held: it only copies.
func (r *replicaConn) push(b []byte) {
	r.mu.Lock()
	if r.dead {
		r.mu.Unlock()
		return
	}
	r.buf = append(r.buf, b...)
	size := int64(len(r.buf))
	lim := r.n.outLimits.Load()
	over := lim.Hard > 0 && size > lim.Hard
	if !over && lim.Soft > 0 && size > lim.Soft && r.softSince.IsZero() {
		r.softSince = time.Now()
	}
	r.mu.Unlock()
	if over {
		r.kill(fmt.Sprintf("output buffer %d bytes over the hard limit %d", size, lim.Hard))
		return
	}
	select {
	case r.signal <- struct{}{}:
	default:
	}
}

// checkSoft drops the replica when its buffer stayed over the soft limit
// for the soft period.
func (r *replicaConn) checkSoft() {
	lim := r.n.outLimits.Load()
	r.mu.Lock()
	over := lim.Soft > 0 && !r.softSince.IsZero() && time.Since(r.softSince) >= lim.SoftPeriod && int64(len(r.buf)) > lim.Soft
	if int64(len(r.buf)) <= lim.Soft {
		r.softSince = time.Time{}
	}
	r.mu.Unlock()
	if over {
		r.kill("output buffer over the soft limit for too long")
	}
}

// kill disconnects the replica; it will have to resync.
func (r *replicaConn) kill(why string) {
	r.mu.Lock()
	if r.dead {
		r.mu.Unlock()
		return
	}
	r.dead = true
	r.buf = nil
	r.mu.Unlock()
	close(r.done)
	r.conn.Close()
	r.n.log.Warn("replica disconnected", "replica", r.name(), "reason", why)
}

func (r *replicaConn) startStream() { r.startOnce.Do(func() { close(r.start) }) }

// sendLoop writes the buffered stream to the socket.
func (r *replicaConn) sendLoop() {
	select {
	case <-r.start:
	case <-r.done:
		return
	}
	var out []byte
	for {
		r.mu.Lock()
		for len(r.buf) == 0 && !r.dead {
			r.mu.Unlock()
			select {
			case <-r.signal:
			case <-r.done:
				return
			}
			r.mu.Lock()
		}
		if r.dead {
			r.mu.Unlock()
			return
		}
		out, r.buf = r.buf, out[:0]
		r.mu.Unlock()
		if _, err := r.conn.Write(out); err != nil {
			r.kill("write: " + err.Error())
			return
		}
		if cap(out) > 4<<20 {
			out = nil
		}
	}
}

// readLoop handles what the replica sends: REPLCONF ACK.
func (r *replicaConn) readLoop(pending []byte) {
	cr := resp.NewReader(io.MultiReader(bytes.NewReader(pending), r.conn))
	for {
		args, _, err := cr.ReadCommand()
		if err != nil {
			r.kill("link closed: " + err.Error())
			return
		}
		if len(args) >= 3 && eqFold(args[0], "replconf") && eqFold(args[1], "ack") {
			off, err := strconv.ParseInt(string(args[2]), 10, 64)
			if err != nil {
				continue
			}
			r.ackOff.Store(off)
			r.ackTime.Store(time.Now().Unix())
			r.acked.Store(true)
			if r.online() {
				// Never while the RDB is still being sent: the stream
				// would interleave with it (see fullSync).
				r.startStream()
			}
			r.n.mu.Lock()
			r.n.notifyAckLocked()
			r.n.mu.Unlock()
		}
	}
}

func eqFold(b []byte, s string) bool { return bytes.EqualFold(b, []byte(s)) }

func (n *Node) register(r *replicaConn) {
	n.replicas[r] = struct{}{}
}

func (n *Node) unregister(r *replicaConn) {
	n.mu.Lock()
	delete(n.replicas, r)
	n.notifyAckLocked()
	n.mu.Unlock()
}

// ServePsync serves a replica that sent PSYNC replid offset (SYNC: sync
// true): +CONTINUE from the backlog when possible, a full sync otherwise.
// It returns when the replica is gone; the caller then closes the
// connection.
func (n *Node) ServePsync(ctx context.Context, p Peer, replid string, offset int64, sync bool) {
	r := n.newReplicaConn(p)
	defer n.unregister(r)
	defer r.kill("replica gone")
	if !sync && n.tryPartial(r, p, replid, offset) {
		n.syncPartialOK.Add(1)
		go r.sendLoop()
		r.readLoop(p.Pending)
		return
	}
	if !sync && replid != "?" {
		n.syncPartialErr.Add(1)
	}
	n.syncFull.Add(1)
	if err := n.fullSync(ctx, r, p, !sync); err != nil {
		n.log.Warn("full sync to replica failed", "replica", r.name(), "err", err)
		return
	}
	go r.sendLoop()
	r.readLoop(p.Pending)
}

// tryPartial attaches r for a partial resync when the backlog allows it.
func (n *Node) tryPartial(r *replicaConn, p Peer, replid string, offset int64) bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.backlog == nil || (replid != n.replid && (replid != n.replid2 || offset > n.secondOffset)) {
		return false
	}
	if !n.backlog.has(offset) {
		return false
	}
	line := "+CONTINUE\r\n"
	if p.CapaPsync2 {
		line = "+CONTINUE " + n.replid + "\r\n"
	}
	r.buf = n.backlog.since(append(r.buf, line...), offset)
	r.state.Store(stateOnline)
	r.ackOff.Store(offset - 1)
	n.register(r)
	r.startStream()
	n.log.Info("partial resynchronization accepted", "replica", r.name(), "offset", offset, "sent", n.offset-offset+1)
	return true
}

// spoolMemory is how much of a diskless full sync waits in memory for a
// slow replica before the rest waits in a temporary file (spool).
const spoolMemory = 8 << 20

// cutWriter holds the snapshot's bytes until the cut has been taken (the
// header may be written before it), then emits the sync preamble first.
type cutWriter struct {
	mu       sync.Mutex
	w        io.Writer
	cut      bool
	preamble []byte
	held     []byte
	n        int64
}

func (cw *cutWriter) setCut(preamble []byte) {
	cw.mu.Lock()
	cw.cut = true
	cw.preamble = preamble
	cw.mu.Unlock()
}

func (cw *cutWriter) Write(p []byte) (int, error) {
	cw.mu.Lock()
	defer cw.mu.Unlock()
	cw.n += int64(len(p))
	if !cw.cut {
		cw.held = append(cw.held, p...)
		return len(p), nil
	}
	if cw.preamble != nil || cw.held != nil {
		b := append(cw.preamble, cw.held...)
		cw.preamble, cw.held = nil, nil
		if _, err := cw.w.Write(b); err != nil {
			return 0, err
		}
	}
	return cw.w.Write(p)
}

// flush writes what is still held (a snapshot that ended without writing
// after its cut).
func (cw *cutWriter) flush() error {
	cw.mu.Lock()
	defer cw.mu.Unlock()
	if cw.preamble != nil || cw.held != nil {
		b := append(cw.preamble, cw.held...)
		cw.preamble, cw.held = nil, nil
		_, err := cw.w.Write(b)
		return err
	}
	return nil
}

// fullSync sends +FULLRESYNC and the snapshot, buffering every write
// committed after the cut for r. psync false: the old SYNC, whose reply is
// the bulk payload alone.
func (n *Node) fullSync(ctx context.Context, r *replicaConn, p Peer, psync bool) error {
	if n.cfg.Snapshot == nil {
		return fmt.Errorf("no snapshot engine")
	}
	start := time.Now()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		select {
		case <-r.done:
			cancel()
		case <-ctx.Done():
		}
	}()
	var cutID string
	var cutOff int64
	onCut := func() {
		n.mu.Lock()
		n.ensureBacklogLocked()
		cutID, cutOff = n.replid, n.offset
		n.lastDB = -1
		n.register(r)
		n.mu.Unlock()
	}
	fullLine := func() string {
		if !psync {
			return ""
		}
		return fmt.Sprintf("+FULLRESYNC %s %d\r\n", cutID, cutOff)
	}
	r.state.Store(stateWaitBgsave)
	bw := bufio.NewWriterSize(p.Conn, 64<<10)
	var keys, sent int64
	var err error
	if p.CapaEOF && psync {
		keys, sent, err = n.sendDiskless(ctx, r, p, bw, onCut, fullLine)
	} else {
		keys, sent, err = n.sendThroughFile(ctx, r, p, bw, onCut, fullLine)
	}
	if err != nil {
		return err
	}
	r.state.Store(stateOnline)
	if r.acked.Load() { // the ACK came before we went online (readLoop)
		r.startStream()
	}
	n.log.Info("full sync sent to replica", "replica", r.name(), "diskless", p.CapaEOF && psync, "compressed", p.CapaNative, "format", n.syncFormat(p),
		"offset", cutOff, "keys", keys, "bytes", sent, "seconds", fmt.Sprintf("%.3f", time.Since(start).Seconds()))
	return nil
}

// sendDiskless streams the snapshot to the replica as it is made (an
// $EOF:<mark> payload), spooling what the connection cannot take yet;
// onCut runs at the cut and fullLine is the reply line sent before it.
func (n *Node) sendDiskless(ctx context.Context, r *replicaConn, p Peer, bw *bufio.Writer, onCut func(), fullLine func() string) (keys, sent int64, err error) {
	mark := newReplID()
	sp := newSpool(bw, spoolMemory, "")
	cw := &cutWriter{w: sp}
	keys, err = n.snapshotFor(ctx, p, cw, func() {
		onCut()
		cw.setCut([]byte(fullLine() + "$EOF:" + mark + "\r\n"))
	})
	r.state.Store(stateSendBulk)
	if err == nil {
		err = cw.flush()
	}
	if err == nil {
		_, err = sp.Write([]byte(mark))
	}
	if err != nil {
		sp.Discard()
		return 0, 0, err
	}
	if err = sp.Close(); err == nil {
		err = bw.Flush()
	}
	if err != nil {
		return 0, 0, err
	}
	return keys, cw.n, nil
}

// sendThroughFile writes the snapshot to a temporary file, then sends it
// as a sized bulk payload.
func (n *Node) sendThroughFile(ctx context.Context, r *replicaConn, p Peer, bw *bufio.Writer, onCut func(), fullLine func() string) (keys, sent int64, err error) {
	f, err := os.CreateTemp("", "damselfly-sync-*.rdb")
	if err != nil {
		return 0, 0, err
	}
	defer os.Remove(f.Name())
	defer f.Close()
	fw := bufio.NewWriterSize(f, 256<<10)
	keys, err = n.snapshotFor(ctx, p, fw, onCut)
	if err == nil {
		err = fw.Flush()
	}
	if err != nil {
		return 0, 0, err
	}
	size, err := f.Seek(0, io.SeekCurrent)
	if err != nil {
		return 0, 0, err
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return 0, 0, err
	}
	r.state.Store(stateSendBulk)
	fmt.Fprintf(bw, "%s$%d\r\n", fullLine(), size)
	if _, err := io.Copy(bw, f); err != nil {
		return 0, 0, err
	}
	if err := bw.Flush(); err != nil {
		return 0, 0, err
	}
	r.startStream()
	return keys, size, nil
}
