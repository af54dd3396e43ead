package replication

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/damselflydb/damselfly/resp"
)

// Link states, as ROLE names them.
const (
	linkConnect    = "connect"
	linkConnecting = "connecting"
	linkSync       = "sync"
	linkConnected  = "connected"
)

// link is a replica's connection to its primary, re-established with
// backoff until REPLICAOF changes it.
type link struct {
	n      *Node
	host   string
	port   int
	ctx    context.Context
	cancel context.CancelFunc
	done   chan struct{}

	state     atomic.Value // string
	lastIO    atomic.Int64 // unix seconds
	downSince atomic.Int64 // unix seconds, 0 while up
	syncing   atomic.Bool

	wmu  sync.Mutex // writes to conn (ACKs from two goroutines)
	conn net.Conn
}

// ReplicaOf makes the node a replica of host:port (REPLICAOF host port).
// It returns at once; the link connects and retries in the background.
func (n *Node) ReplicaOf(host string, port int) {
	n.mu.Lock()
	old := n.link
	if old != nil && old.host == host && old.port == port {
		n.mu.Unlock()
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	l := &link{n: n, host: host, port: port, ctx: ctx, cancel: cancel, done: make(chan struct{})}
	l.state.Store(linkConnect)
	l.downSince.Store(time.Now().Unix())
	n.link = l
	wasPrimary := !n.replica.Load()
	n.replica.Store(true)
	n.mu.Unlock()
	if old != nil {
		old.stop()
	}
	n.log.Info("connecting to primary", "primary", net.JoinHostPort(host, strconv.Itoa(port)), "was_primary", wasPrimary)
	go l.run()
}

// ReplicaOfNoOne promotes the node to primary (REPLICAOF NO ONE): the data
// stays, a new replication ID starts and the old one is kept as replid2 so
// the former siblings can continue with +CONTINUE.
func (n *Node) ReplicaOfNoOne() {
	n.mu.Lock()
	l := n.link
	n.link = nil
	if !n.replica.Load() {
		n.mu.Unlock()
		return
	}
	n.replica.Store(false)
	n.shiftReplIDLocked()
	for r := range n.replicas {
		r.kill("replication ID changed (promotion)")
	}
	n.mu.Unlock()
	if l != nil {
		l.stop()
	}
	n.log.Info("promoted to primary", "replid", n.replid, "replid2", n.replid2, "second_repl_offset", n.secondOffset)
}

// shiftReplIDLocked starts a new history: replid2 = replid, valid up to
// the current offset.
func (n *Node) shiftReplIDLocked() {
	n.replid2 = n.replid
	n.secondOffset = n.offset + 1
	n.replid = newReplID()
	n.lastDB = -1
}

func (l *link) stop() {
	l.cancel()
	l.wmu.Lock()
	if l.conn != nil {
		l.conn.Close()
	}
	l.wmu.Unlock()
	<-l.done
}

func (l *link) addr() string { return net.JoinHostPort(l.host, strconv.Itoa(l.port)) }

func (l *link) run() {
	defer close(l.done)
	backoff := 100 * time.Millisecond
	for {
		started := time.Now()
		err := l.session()
		l.state.Store(linkConnect)
		l.syncing.Store(false)
		if l.downSince.Load() == 0 {
			l.downSince.Store(time.Now().Unix())
		}
		if l.ctx.Err() != nil {
			return
		}
		if time.Since(started) > 5*time.Second {
			backoff = 100 * time.Millisecond
		}
		l.n.log.Warn("link to primary down, retrying", "primary", l.addr(), "err", err, "retry_in", backoff)
		select {
		case <-l.ctx.Done():
			return
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, 2*time.Second)
	}
}

func (l *link) write(b []byte) error {
	l.wmu.Lock()
	defer l.wmu.Unlock()
	if l.conn == nil {
		return net.ErrClosed
	}
	_ = l.conn.SetWriteDeadline(time.Now().Add(l.n.cfg.Timeout))
	_, err := l.conn.Write(b)
	return err
}

func (l *link) command(args ...string) error {
	return l.write(resp.AppendCommandStrings(nil, args...))
}

// reply reads one reply line, skipping keepalive newlines.
func (l *link) reply(cr *resp.Reader) (string, error) {
	for {
		_ = l.conn.SetReadDeadline(time.Now().Add(l.n.cfg.Timeout))
		ln, err := cr.ReadLine()
		if err != nil {
			return "", err
		}
		if len(ln) > 0 {
			l.lastIO.Store(time.Now().Unix())
			return string(ln), nil
		}
	}
}

// session connects, synchronizes and applies the stream until the link
// breaks.
func (l *link) session() error {
	l.state.Store(linkConnecting)
	conn, err := l.dial()
	if err != nil {
		return err
	}
	l.wmu.Lock()
	if l.ctx.Err() != nil {
		l.wmu.Unlock()
		conn.Close()
		return l.ctx.Err()
	}
	l.conn = conn
	l.wmu.Unlock()
	defer func() {
		l.wmu.Lock()
		l.conn.Close()
		l.conn = nil
		l.wmu.Unlock()
	}()
	cr := resp.NewReader(conn)
	if err := l.handshake(cr); err != nil {
		return err
	}
	if err := l.psync(cr); err != nil {
		return err
	}
	return l.stream(cr)
}

// dial connects to the primary (through the configured dialer, if any).
func (l *link) dial() (net.Conn, error) {
	if dial := l.n.cfg.Dial; dial != nil {
		return dial(l.ctx, l.addr())
	}
	d := net.Dialer{Timeout: 5 * time.Second}
	return d.DialContext(l.ctx, "tcp", l.addr())
}

// handshake is PING, AUTH when configured, and the REPLCONFs announcing
// the port and capabilities.
func (l *link) handshake(cr *resp.Reader) error {
	if err := l.command("PING"); err != nil {
		return err
	}
	rep, err := l.reply(cr)
	if err != nil {
		return err
	}
	if rep[0] == '-' && !strings.HasPrefix(rep, "-NOAUTH") && !strings.HasPrefix(rep, "-NOPERM") && !strings.HasPrefix(rep, "-ERR operation not permitted") {
		return fmt.Errorf("PING: %s", rep)
	}
	if auth := l.n.authArgs(); auth != nil {
		if err := l.command(auth...); err != nil {
			return err
		}
		if rep, err = l.reply(cr); err != nil {
			return err
		}
		if rep[0] == '-' {
			return fmt.Errorf("AUTH: %s", rep)
		}
	}
	if err := l.command("REPLCONF", "listening-port", strconv.Itoa(l.n.cfg.ListenPort())); err != nil {
		return err
	}
	if rep, err = l.reply(cr); err != nil {
		return err
	}
	if rep[0] == '-' {
		l.n.log.Warn("primary refused REPLCONF listening-port", "reply", rep)
	}
	// damselfly-native: a Damselfly primary may send the full sync
	// compressed (native.go); Redis and Valkey ignore capabilities they do
	// not know.
	if err := l.command("REPLCONF", "capa", "eof", "capa", "psync2", "capa", CapaNative, "capa", CapaParallel); err != nil {
		return err
	}
	_, err = l.reply(cr)
	return err
}

// psync asks to continue from what we hold, if anything, and performs the
// full synchronization when the primary answers FULLRESYNC.
func (l *link) psync(cr *resp.Reader) error {
	l.n.mu.Lock()
	replid, off := "?", int64(-1)
	if l.n.backlog != nil {
		replid, off = l.n.replid, l.n.offset+1
	}
	l.n.mu.Unlock()
	if err := l.command("PSYNC", replid, strconv.FormatInt(off, 10)); err != nil {
		return err
	}
	rep, err := l.reply(cr)
	if err != nil {
		return err
	}
	switch {
	case strings.HasPrefix(rep, "+FULLRESYNC"):
		f := strings.Fields(rep)
		if len(f) != 3 {
			return fmt.Errorf("bad FULLRESYNC reply %q", rep)
		}
		moff, err := strconv.ParseInt(f[2], 10, 64)
		if err != nil {
			return fmt.Errorf("bad FULLRESYNC offset %q", rep)
		}
		if err := l.fullSync(cr, f[1], moff); err != nil {
			return err
		}
	case strings.HasPrefix(rep, "+CONTINUE"):
		f := strings.Fields(rep)
		l.n.mu.Lock()
		if len(f) == 2 && f[1] != l.n.replid {
			l.n.shiftReplIDLocked()
			l.n.replid = f[1]
			for r := range l.n.replicas {
				r.kill("primary's replication ID changed")
			}
		}
		l.n.mu.Unlock()
		l.n.log.Info("partial resynchronization with primary", "primary", l.addr(), "offset", off)
	default:
		return fmt.Errorf("PSYNC: %s", rep)
	}
	return nil
}

// fullSync receives the RDB and loads it; the old dataset stays until the
// new one is complete.
func (l *link) fullSync(cr *resp.Reader, replid string, moff int64) error {
	l.state.Store(linkSync)
	l.syncing.Store(true)
	defer l.syncing.Store(false)
	start := time.Now()
	hdr, err := l.reply(cr)
	if err != nil {
		return err
	}
	if len(hdr) < 2 || hdr[0] != '$' {
		return fmt.Errorf("bad bulk header %q", hdr)
	}
	_ = l.conn.SetReadDeadline(time.Time{})
	var body io.Reader
	var eof *eofReader
	var lim *io.LimitedReader
	if strings.HasPrefix(hdr, "$EOF:") {
		mark := []byte(hdr[5:])
		if len(mark) != 40 {
			return fmt.Errorf("bad EOF mark %q", hdr)
		}
		eof = &eofReader{r: cr, mark: mark}
		body = eof
	} else {
		size, err := strconv.ParseInt(hdr[1:], 10, 64)
		if err != nil || size < 0 {
			return fmt.Errorf("bad bulk header %q", hdr)
		}
		lim = &io.LimitedReader{R: cr, N: size}
		body = lim
	}
	tr := &touchReader{r: body, l: l}
	l.n.log.Info("full sync from primary: receiving", "primary", l.addr(), "replid", replid, "offset", moff)
	// The link is up, with the primary's ID and offset, at the instant its
	// data replaces ours (as in Redis, where the load and that state change
	// happen in one event-loop turn): a client that reads the new data never
	// sees INFO say the sync is still in progress.
	commit := func() {
		l.n.mu.Lock()
		l.n.replid = replid
		l.n.replid2 = zeroReplID
		l.n.secondOffset = -1
		l.n.offset = moff
		l.n.backlog = newBacklog(l.n.backlogSize, moff)
		l.n.active.Store(true)
		l.n.lastDB = -1
		l.n.mu.Unlock()
		l.state.Store(linkConnected)
		l.syncing.Store(false)
		l.downSince.Store(0)
	}
	keys, err := l.n.cfg.Load(tr, commit)
	if err != nil {
		return fmt.Errorf("loading the primary's full sync: %w (previous dataset kept)", err)
	}
	// Consume what the loader left (the end mark, trailing bytes).
	if _, err := io.Copy(io.Discard, tr); err != nil {
		return err
	}
	if eof != nil && !eof.done {
		return errors.New("RDB transfer ended without its EOF mark")
	}
	l.n.mu.Lock()
	for r := range l.n.replicas {
		r.kill("new dataset from our primary")
	}
	l.n.mu.Unlock()
	l.n.cfg.ResetExec()
	l.n.log.Info("full sync from primary done", "primary", l.addr(), "keys", keys, "bytes", tr.n,
		"seconds", fmt.Sprintf("%.3f", time.Since(start).Seconds()))
	return nil
}

// touchReader counts bytes and notes I/O for master_last_io_seconds_ago.
type touchReader struct {
	r io.Reader
	l *link
	n int64
}

func (t *touchReader) Read(p []byte) (int, error) {
	n, err := t.r.Read(p)
	t.n += int64(n)
	if n > 0 {
		t.l.lastIO.Store(time.Now().Unix())
	}
	return n, err
}

// eofReader returns the bytes before a 40-byte end mark and then io.EOF.
// Like Redis, it takes the mark as the end when the last 40 bytes received
// are the mark and nothing more is waiting: the primary sends nothing after
// the mark until our first REPLCONF ACK.
type eofReader struct {
	r    *resp.Reader
	mark []byte
	buf  []byte // received, not yet returned; the last len(mark) are held back
	done bool
}

func (e *eofReader) Read(p []byte) (int, error) {
	var chunk [64 << 10]byte
	for {
		if avail := len(e.buf) - len(e.mark); avail > 0 {
			n := copy(p, e.buf[:avail])
			e.buf = e.buf[n:]
			return n, nil
		}
		if e.done {
			return 0, io.EOF
		}
		if bytes.Equal(e.buf, e.mark) && e.r.Buffered() == 0 {
			e.done = true
			e.buf = nil
			return 0, io.EOF
		}
		n, err := e.r.Read(chunk[:])
		e.buf = append(e.buf, chunk[:n]...)
		if err != nil {
			if err == io.EOF {
				err = io.ErrUnexpectedEOF
			}
			return 0, err
		}
	}
}

// stream applies the primary's command stream, acknowledging every second
// and on REPLCONF GETACK.
func (l *link) stream(cr *resp.Reader) error {
	n := l.n
	l.state.Store(linkConnected)
	l.downSince.Store(0)
	l.lastIO.Store(time.Now().Unix())
	n.log.Info("link with primary up", "primary", l.addr())
	ack := func() error {
		return l.command("REPLCONF", "ACK", strconv.FormatInt(n.Offset(), 10))
	}
	if err := ack(); err != nil {
		return err
	}
	stop := make(chan struct{})
	defer close(stop)
	go func() {
		t := time.NewTicker(time.Second)
		defer t.Stop()
		for {
			select {
			case <-stop:
				return
			case <-t.C:
				if ack() != nil {
					return
				}
			}
		}
	}()
	for {
		_ = l.conn.SetReadDeadline(time.Now().Add(n.cfg.Timeout))
		// args and raw alias cr's buffer until the next read: Exec and
		// feedLocked copy what they keep.
		args, raw, err := cr.ReadCommand()
		if err != nil {
			return err
		}
		l.lastIO.Store(time.Now().Unix())
		if len(args) >= 2 && eqFold(args[0], "replconf") && eqFold(args[1], "getack") {
			if err := ack(); err != nil {
				return err
			}
			n.feedRaw(raw)
			continue
		}
		if len(args) == 0 {
			n.feedRaw(raw)
			continue
		}
		n.mu.Lock()
		n.pending = raw
		n.mu.Unlock()
		n.cfg.Exec(args)
		// A command that wrote nothing joins our stream now.
		n.mu.Lock()
		if n.pending != nil && n.backlog != nil {
			n.feedLocked(n.pending)
			n.pending = nil
		}
		n.mu.Unlock()
	}
}

// feedRaw adds bytes received from our primary to our own stream.
func (n *Node) feedRaw(b []byte) {
	n.mu.Lock()
	if n.backlog != nil {
		n.feedLocked(b)
	}
	n.mu.Unlock()
}
