package replication

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"io"
	"log/slog"
	"net"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/damselflydb/damselfly/resp"
	"github.com/damselflydb/damselfly/shard"
)

// Config is what a Node needs from its server.
type Config struct {
	Store *shard.Store
	Log   *slog.Logger
	// BacklogSize is repl-backlog-size (default 1mb).
	BacklogSize int
	// Snapshot writes a point-in-time RDB of Store to w, calling onCut once
	// at the snapshot instant while every shard is locked. It returns the
	// number of keys written.
	Snapshot func(ctx context.Context, w io.Writer, onCut func()) (int64, error)
	// Load replaces the dataset with the RDB read from r, all or nothing: on
	// error the previous dataset is left as it was. It calls commit once, at
	// the instant the new dataset replaces the old, while every shard is
	// locked: what commit records (the link up, the new replication ID and
	// offset) is then never seen apart from the data it goes with.
	Load func(r io.Reader, commit func()) (int64, error)
	// Exec applies one command received from the primary through the
	// command table, on the server's master client (which keeps its SELECTed
	// database between calls). A write it commits must call
	// Node.CommitFromPrimary while the shard locks are held.
	Exec func(args [][]byte)
	// ResetExec puts the master client back on database 0 (after a full sync).
	ResetExec func()
	// ListenPort is the port announced with REPLCONF listening-port.
	ListenPort func() int
	// MasterAuth is sent with AUTH during the handshake when set, after
	// MasterUser when that is set too; SetMasterAuth changes both later.
	MasterAuth string
	MasterUser string
	// Output buffer limits for replicas (client-output-buffer-limit
	// replica 256mb 64mb 60 when nil); SetOutputLimits changes them later.
	OutputLimits *OutputLimits
	// PingPeriod is repl-ping-replica-period (10s).
	PingPeriod time.Duration
	// Timeout is repl-timeout (60s): a silent primary link is dropped.
	Timeout time.Duration
	// Dial, when set, opens the connection to the primary (the server's
	// TLS dialer with tls-replication yes); nil dials plain TCP.
	Dial func(ctx context.Context, addr string) (net.Conn, error)

	// Parallel full sync (native.go). SnapshotSync, when set, writes the
	// snapshot in the parallel sync format for replicas that announce
	// CapaParallel; it has Snapshot's contract otherwise.
	SnapshotSync func(ctx context.Context, w io.Writer, onCut func()) (int64, error)
}

func (c *Config) defaults() {
	if c.Log == nil {
		c.Log = slog.Default()
	}
	if c.BacklogSize <= 0 {
		c.BacklogSize = 1 << 20
	}
	if c.OutputLimits == nil {
		c.OutputLimits = &OutputLimits{Hard: 256 << 20, Soft: 64 << 20, SoftPeriod: 60 * time.Second}
	}
	if c.PingPeriod == 0 {
		c.PingPeriod = 10 * time.Second
	}
	if c.Timeout == 0 {
		c.Timeout = 60 * time.Second
	}
	if c.ListenPort == nil {
		c.ListenPort = func() int { return 0 }
	}
	if c.Exec == nil {
		c.Exec = func([][]byte) {}
	}
	if c.ResetExec == nil {
		c.ResetExec = func() {}
	}
}

// Node is the replication state of one server, primary or replica.
type Node struct {
	cfg       Config
	log       *slog.Logger
	outLimits atomic.Pointer[OutputLimits]
	creds     atomic.Pointer[masterCredentials] // auth.go

	// active is set once a backlog exists: before that, Append has nothing
	// to do (like Redis, which creates the backlog for the first replica).
	active  atomic.Bool
	replica atomic.Bool // role: replica of some primary

	mu           sync.Mutex // order: shard locks, then mu, then replicaConn.mu
	replid       string
	replid2      string
	offset       int64 // master_repl_offset: offset of the last byte of the stream
	secondOffset int64 // second_repl_offset: replid2 is valid up to here
	backlog      *backlog
	backlogSize  int
	lastDB       int // database of the last SELECT in the stream; -1 forces one
	replicas     map[*replicaConn]struct{}
	ackCh        chan struct{} // closed and replaced on every ACK
	scratch      []byte
	link         *link  // the link to our primary when a replica
	pending      []byte // raw bytes of the primary's command being applied

	// INFO stats: sync_full, sync_partial_ok, sync_partial_err.
	syncFull, syncPartialOK, syncPartialErr atomic.Int64

	// handingOver: WaitReplica is waiting for a planned failover's
	// replica (INFO's master_failover_state: waiting-for-sync).
	handingOver atomic.Bool

	closed chan struct{}
	wg     sync.WaitGroup
}

// OutputLimits bound what a replica may leave unread: past Hard bytes it
// is dropped at once, past Soft bytes for SoftPeriod too. A zero limit is
// no limit, as in Redis.
type OutputLimits struct {
	Hard, Soft int64
	SoftPeriod time.Duration
}

// SetOutputLimits applies CONFIG SET client-output-buffer-limit replica
// ... to the replicas attached and to come.
func (n *Node) SetOutputLimits(l OutputLimits) { n.outLimits.Store(&l) }

// SyncStats returns INFO's sync_full, sync_partial_ok and sync_partial_err.
func (n *Node) SyncStats() (full, partialOK, partialErr int64) {
	return n.syncFull.Load(), n.syncPartialOK.Load(), n.syncPartialErr.Load()
}

// New makes a Node (a primary with a fresh replication ID).
func New(cfg Config) *Node {
	cfg.defaults()
	n := &Node{
		cfg:          cfg,
		log:          cfg.Log,
		replid:       newReplID(),
		replid2:      zeroReplID,
		secondOffset: -1,
		backlogSize:  cfg.BacklogSize,
		lastDB:       -1,
		replicas:     map[*replicaConn]struct{}{},
		ackCh:        make(chan struct{}),
		closed:       make(chan struct{}),
	}
	n.outLimits.Store(cfg.OutputLimits)
	n.SetMasterAuth(cfg.MasterUser, cfg.MasterAuth)
	n.wg.Add(1)
	go n.cron()
	return n
}

const zeroReplID = "0000000000000000000000000000000000000000"

func newReplID() string {
	b := make([]byte, 20)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// Close stops the link to a primary, disconnects replicas and stops the
// background work.
func (n *Node) Close() {
	select {
	case <-n.closed:
		return
	default:
	}
	close(n.closed)
	n.mu.Lock()
	l := n.link
	n.link = nil
	for r := range n.replicas {
		r.kill("server closing")
	}
	n.mu.Unlock()
	if l != nil {
		l.stop()
	}
	n.wg.Wait()
}

// IsReplica reports whether the node replicates a primary (REPLICAOF).
func (n *Node) IsReplica() bool { return n.replica.Load() }

// Offset is master_repl_offset.
func (n *Node) Offset() int64 {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.offset
}

// SetBacklogSize changes repl-backlog-size.
func (n *Node) SetBacklogSize(size int) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.backlogSize = size
	if n.backlog != nil {
		n.backlog.resize(size)
	}
}

// Append adds a committed write (args, in database db; db < 0 for commands
// that do not depend on it, such as PING) to the stream and returns the
// stream offset after it. The caller holds the writer's shard locks. It
// never waits for the network.
func (n *Node) Append(db int, args [][]byte) int64 {
	if !n.active.Load() {
		return 0
	}
	n.mu.Lock()
	if n.backlog == nil {
		n.mu.Unlock()
		return 0
	}
	b := n.scratch[:0]
	if db >= 0 && db != n.lastDB {
		b = resp.AppendCommandStrings(b, "SELECT", strconv.Itoa(db))
		n.lastDB = db
	}
	b = resp.AppendCommand(b, args...)
	n.feedLocked(b)
	if cap(b) <= 64<<10 {
		n.scratch = b
	}
	off := n.offset
	n.mu.Unlock()
	return off
}

// AppendExpired replicates the expiry of key as DEL (called under the
// shard lock by the shard's OnExpire hook). Replicas do not replicate
// their own expirations: their primary sends the DEL.
func (n *Node) AppendExpired(db int, key []byte) {
	if n.replica.Load() {
		return
	}
	n.Append(db, [][]byte{[]byte("DEL"), append([]byte(nil), key...)})
}

// feedLocked writes b to the backlog and to every attached replica.
func (n *Node) feedLocked(b []byte) {
	n.backlog.write(b)
	n.offset += int64(len(b))
	for r := range n.replicas {
		r.push(b)
	}
}

// ensureBacklogLocked creates the backlog (first replica).
func (n *Node) ensureBacklogLocked() {
	if n.backlog == nil {
		n.backlog = newBacklog(n.backlogSize, n.offset)
		n.active.Store(true)
	}
}

// CommitFromPrimary is called by the server, under the shard locks, when a
// command received from our primary commits a write: the command's exact
// bytes join our own stream at that point, so a snapshot cut on this node
// falls consistently between commands.
func (n *Node) CommitFromPrimary() {
	n.mu.Lock()
	if n.pending != nil && n.backlog != nil {
		n.feedLocked(n.pending)
	}
	n.pending = nil
	n.mu.Unlock()
}

// cron sends the periodic PING to replicas (primary role only) and enforces
// the soft output limit.
func (n *Node) cron() {
	defer n.wg.Done()
	t := time.NewTicker(time.Second)
	defer t.Stop()
	lastPing := time.Now()
	for {
		select {
		case <-n.closed:
			return
		case <-t.C:
		}
		n.mu.Lock()
		nrep := len(n.replicas)
		for r := range n.replicas {
			r.checkSoft()
		}
		n.mu.Unlock()
		if nrep > 0 && !n.replica.Load() && time.Since(lastPing) >= n.cfg.PingPeriod {
			lastPing = time.Now()
			n.Append(-1, [][]byte{[]byte("PING")})
		}
	}
}

// notifyAckLocked wakes WAIT callers.
func (n *Node) notifyAckLocked() {
	close(n.ackCh)
	n.ackCh = make(chan struct{})
}

// Wait blocks until numReplicas replicas acknowledged offset off, the
// timeout passes (0: no timeout) or ctx ends, and returns how many did.
func (n *Node) Wait(ctx context.Context, off int64, numReplicas int, timeout time.Duration) int {
	var deadline <-chan time.Time
	if timeout > 0 {
		t := time.NewTimer(timeout)
		defer t.Stop()
		deadline = t.C
	}
	asked := false
	for {
		n.mu.Lock()
		count := 0
		for r := range n.replicas {
			if r.online() && r.ackOff.Load() >= off {
				count++
			}
		}
		ch := n.ackCh
		n.mu.Unlock()
		if count >= numReplicas {
			return count
		}
		if !asked {
			asked = true
			n.Append(-1, [][]byte{[]byte("REPLCONF"), []byte("GETACK"), []byte("*")})
		}
		select {
		case <-ch:
		case <-deadline:
			return n.countAcked(off)
		case <-ctx.Done():
			return n.countAcked(off)
		case <-n.closed:
			return n.countAcked(off)
		}
	}
}

func (n *Node) countAcked(off int64) int {
	n.mu.Lock()
	defer n.mu.Unlock()
	count := 0
	for r := range n.replicas {
		if r.online() && r.ackOff.Load() >= off {
			count++
		}
	}
	return count
}
