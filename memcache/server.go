// Package memcache is Damselfly's Memcached text-protocol front end. It
// serves the classic commands (set add replace append prepend cas get gets
// gat gats touch incr decr delete flush_all stats version verbosity quit)
// and the meta commands (mg ms md ma mn) over the same keyspace as the
// Redis front end: a memcached key is the Redis string key of the same name
// in database 0.
//
// Design and invariants:
//   - Connections are served by the RESP server's event loops (package
//     netpoll; a goroutine per connection without them): each read of what
//     the client sent executes every complete request in order, and all
//     replies go out with one write.
//     The input state machine (conn.go) is resumable: a storage command whose
//     data block has not fully arrived waits for more input, and the input
//     buffer grows at most to twice what was received, so a client that
//     merely announces a large value never makes the server allocate it.
//     Values over MaxItemSize are refused and their bytes swallowed as they
//     arrive, never buffered.
//   - Data is touched only under the key's shard lock. A write is committed
//     while the lock is held: it is handed to Config.Journal in a RESP form
//     (SET key value [PXAT ms], DEL key, PEXPIREAT/PERSIST key, FLUSHDB), so
//     replication and the save schedule see memcached writes in commit order
//     exactly like RESP writes.
//   - Items written here carry shard meta (Value.Meta): the 32-bit client
//     flags (MCFlags) and the CAS unique (MCCAS). CAS uniques come from a
//     per-shard counter that only grows, so every memcached write gives the
//     item a new value. An entry written through RESP has no meta (RESP
//     writes drop it): the first time a CAS unique of such an entry is
//     needed (gets, gats, mg c, ...) it is stamped with a fresh one from the
//     counter. A RESP write therefore always yields a different CAS unique
//     than the one a client saw before, which is what cas needs.
//   - Items also carry their access state in the entry (shard.DB.NoteAccess,
//     NoteWin): fetched since written, stale (md I, ms I) and "a recache win
//     was handed out", besides the LRU clock every entry has (mg l). It is not part of the value:
//     it changes in place without a write, and is neither saved nor
//     replicated (a loaded or replicated item starts fresh).
//   - Collections (lists, hashes...) are not memcached items: reads treat
//     them as misses and set replaces them, as a Redis SET would.
//   - Persistence keeps client flags: a snapshot writes an item's nonzero
//     flags as a df-mc-flags AUX field right before the key (package
//     snapshot), which Redis ignores and Damselfly's loader applies to that
//     key (SAVE/BGSAVE + restart, DEBUG RELOAD, a replica's full sync).
//     CAS uniques are not saved; a loaded item gets a fresh one when first
//     needed, like a RESP-written key.
//   - Replication trade-off: the command stream carries memcached writes as
//     plain SET, so an item written after a replica's full sync reaches the
//     replica with flags 0 (the value and TTL are exact). The stream is one
//     byte sequence shared by every replica and the backlog (offsets must
//     agree for PSYNC, chained replicas and promotion), so it cannot vary
//     with what a replica announced in REPLCONF capa; and any command that
//     carries flags (a Damselfly-only DFMCSET, or SET followed by one) would
//     be rejected by a redis-server replica, logged as an error from its
//     master on every write. Plain SET keeps redis-server replicas exact and
//     loses only the flags of items written since the last full sync on
//     Damselfly replicas. (A Redis-accepted carrier, e.g. the SET wrapped in
//     a fixed EVAL script that a Damselfly replica recognises and applies
//     natively, would lift this at the cost of a Lua call per write on Redis
//     replicas; not done.)
//   - Cluster mode (Config.Route, cluster.go): only keys of the node's slots
//     are served; a request touching another is answered whole with
//     SERVER_ERROR and the Redis error (MOVED slot ip:port, TRYAGAIN,
//     CLUSTERDOWN), never with partial results that would read as misses.
//   - Observation (Config.Observe, observe.go): every command that ran is
//     reported once, after its reply is buffered (a storage command once its
//     data block was applied), with its line, data block, duration and
//     outcome; the server shows them as mc_<name> commands in its
//     statistics, SLOWLOG and MONITOR.
package memcache

import (
	"errors"
	"log/slog"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/damselflydb/damselfly/netpoll"
	"github.com/damselflydb/damselfly/shard"
)

// Version is what the version command and stats report.
const Version = "1.6.18"

// DefaultMaxItemSize is memcached's default item size limit (-I 1m).
const DefaultMaxItemSize = 1 << 20

// Config configures a memcached front end.
type Config struct {
	// MaxItemSize bounds key plus value plus item overhead, like
	// memcached's -I; 0 means DefaultMaxItemSize.
	MaxItemSize int
	// Journal, when set, receives every committed write in a RESP form, with
	// its database (always 0), while the shard lock(s) of the write are held.
	// args are valid only during the call.
	Journal func(db int, args [][]byte)
	Logger  *slog.Logger
	// Admit, when set, is asked with a shard locked before a store adds to
	// it; false refuses the store as out of memory (maxmemory; the server
	// evicts from the shard first when its policy allows).
	Admit func(sh *shard.Shard) bool
	// MaxBytes and Evictions, when set, report the memory limit and the
	// keys evicted so far (stats limit_maxbytes and evictions).
	MaxBytes, Evictions func() int64
	// Loops, when set, serve the connections (round robin); they are the
	// RESP server's, and their owner stops them after Close. Without
	// loops every connection has a goroutine of its own.
	Loops []*netpoll.Loop
	// Accept, when set, decides each new connection before it is served:
	// "" admits it; otherwise the returned line is written and the
	// connection closed (the server's maxclients and access rules).
	Accept func(remote net.Addr) string
	// Busy, when set, reports that a script holds every shard. A command
	// would wait for it, and an event loop must never wait: a connection
	// served by a loop then leaves it for a goroutine of its own first.
	Busy func() bool

	// Cluster mode (cluster.go). Route, when set, decides whether this
	// node serves key: "" to serve it, or the Redis error text to answer
	// after SERVER_ERROR (MOVED slot ip:port, TRYAGAIN, CLUSTERDOWN).
	Route func(key []byte, write bool) string

	// Observe, when set, hears of every command run (observe.go): the
	// server's commandstats, SLOWLOG, LATENCY and MONITOR.
	Observe Observer
}

type stats struct {
	currConns, totalConns                 atomic.Int64
	cmdGet, cmdSet, cmdFlush, cmdTouch    atomic.Int64
	getHits, getMisses, getExpired        atomic.Int64
	touchHits, touchMisses                atomic.Int64
	deleteHits, deleteMisses              atomic.Int64
	incrHits, incrMisses                  atomic.Int64
	decrHits, decrMisses                  atomic.Int64
	casHits, casMisses, casBadval         atomic.Int64
	totalItems                            atomic.Int64
	bytesRead, bytesWritten               atomic.Int64
	rejectedConns, connYields, metaCmds   atomic.Int64
	getFlushed, storeTooLarge, storeNoMem atomic.Int64
}

// casCounter is one shard's CAS unique source, padded to its own cache line.
// It is read and advanced only under the shard's lock.
type casCounter struct {
	n uint64
	_ [56]byte
}

// Server serves the memcached protocol over a store.
type Server struct {
	store   *shard.Store
	cfg     Config
	log     *slog.Logger
	cas     []casCounter
	started time.Time
	stats   stats

	mu        sync.Mutex
	listeners []net.Listener
	conns     map[*conn]struct{}
	admitting map[net.Conn]struct{} // connections inside ServeAdmit's admit
	closed    bool
	flushT    *time.Timer // pending delayed flush_all
	nextLoop  int
	wg        sync.WaitGroup
}

// New prepares a memcached front end over store.
func New(store *shard.Store, cfg Config) *Server {
	if cfg.MaxItemSize <= 0 {
		cfg.MaxItemSize = DefaultMaxItemSize
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	return &Server{
		store:   store,
		cfg:     cfg,
		log:     cfg.Logger,
		cas:     make([]casCounter, len(store.Shards())),
		started: time.Now(),
		conns:   map[*conn]struct{}{},
	}
}

// Listen opens a TCP listener on addr and serves it in the background.
func (s *Server) Listen(addr string) (net.Listener, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	s.Serve(ln)
	return ln, nil
}

// Serve accepts connections on ln in the background until Close.
func (s *Server) Serve(ln net.Listener) {
	s.mu.Lock()
	s.listeners = append(s.listeners, ln)
	s.mu.Unlock()
	s.wg.Add(1)
	go s.acceptLoop(ln, nil)
}

// Admitted is ServeAdmit's verdict on a connection.
type Admitted struct {
	// Conn is the connection to serve (a *tls.Conn over the accepted
	// socket, say); nil refuses it (admit has answered and closed it).
	Conn net.Conn
	// Stream, when set, lets an event loop serve Conn: the loop adopts Raw
	// and reads and writes through Stream (netpoll/tls.go).
	Stream *netpoll.TLSStream
	Raw    *net.TCPConn
}

// ServeAdmit is Serve for a listener whose connections need work before
// they can be judged (TLS: the handshake, then the client certificate).
// admit runs on the connection's own goroutine, instead of Config.Accept;
// an admitted connection goes to an event loop when it comes with a Stream
// and there are loops, else it is served on that goroutine.
func (s *Server) ServeAdmit(ln net.Listener, admit func(nc net.Conn) Admitted) {
	s.mu.Lock()
	s.listeners = append(s.listeners, ln)
	s.mu.Unlock()
	s.wg.Add(1)
	go s.acceptLoop(ln, admit)
}

// admitted runs admit on nc and serves it when admitted.
func (s *Server) admitted(nc net.Conn, admit func(nc net.Conn) Admitted) {
	defer s.wg.Done()
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		nc.Close()
		return
	}
	if s.admitting == nil {
		s.admitting = map[net.Conn]struct{}{}
	}
	s.admitting[nc] = struct{}{} // Close closes it mid-handshake
	s.mu.Unlock()
	a := admit(nc)
	s.mu.Lock()
	delete(s.admitting, nc)
	s.mu.Unlock()
	if a.Conn == nil {
		s.stats.rejectedConns.Add(1)
		return
	}
	c := newConn(s, a.Conn)
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		a.Conn.Close()
		return
	}
	s.conns[c] = struct{}{}
	var loop *netpoll.Loop
	if len(s.cfg.Loops) > 0 && a.Stream != nil {
		loop = s.cfg.Loops[s.nextLoop%len(s.cfg.Loops)]
		s.nextLoop++
	}
	s.mu.Unlock()
	s.stats.currConns.Add(1)
	s.stats.totalConns.Add(1)
	if loop != nil {
		a.Stream.Buffer()
		buf, n, end := a.Stream.Decrypt(c.in, c.w)
		c.in = buf
		if n == 0 && !end {
			c.tio = a.Stream
			err := loop.Adopt(a.Raw, c, func(fd int) {
				c.mu.Lock()
				c.nc, c.loop, c.fd = nil, loop, fd
				c.mu.Unlock()
			})
			if err == nil {
				return
			}
			c.tio = nil
		}
		c.w += n // input that came with the handshake: served first
		a.Stream.Pass(a.Raw)
	}
	c.serve()
}

func (s *Server) acceptLoop(ln net.Listener, admit func(nc net.Conn) Admitted) {
	defer s.wg.Done()
	for {
		nc, err := ln.Accept()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			s.log.Warn("memcached accept", "err", err)
			time.Sleep(10 * time.Millisecond)
			continue
		}
		if tc, ok := nc.(*net.TCPConn); ok {
			_ = tc.SetNoDelay(true)
		}
		if admit != nil {
			s.wg.Add(1)
			go s.admitted(nc, admit)
			continue
		}
		if s.cfg.Accept != nil {
			if refuse := s.cfg.Accept(nc.RemoteAddr()); refuse != "" {
				s.stats.rejectedConns.Add(1)
				_ = nc.SetWriteDeadline(time.Now().Add(time.Second))
				_, _ = nc.Write([]byte(refuse))
				nc.Close()
				continue
			}
		}
		c := newConn(s, nc)
		s.mu.Lock()
		if s.closed {
			s.mu.Unlock()
			nc.Close()
			return
		}
		s.conns[c] = struct{}{}
		var loop *netpoll.Loop
		if len(s.cfg.Loops) > 0 {
			loop = s.cfg.Loops[s.nextLoop%len(s.cfg.Loops)]
			s.nextLoop++
		}
		s.mu.Unlock()
		s.stats.currConns.Add(1)
		s.stats.totalConns.Add(1)
		if tc, ok := nc.(*net.TCPConn); ok && loop != nil {
			err := loop.Adopt(tc, c, func(fd int) {
				c.mu.Lock()
				c.nc, c.loop, c.fd = nil, loop, fd
				c.mu.Unlock()
			})
			if err == nil {
				continue
			}
			s.log.Warn("memcached: serving the connection on a goroutine", "err", err)
		}
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			c.serve()
		}()
	}
}

// Conns is the number of open connections.
func (s *Server) Conns() int64 { return s.stats.currConns.Load() }

func (s *Server) dropConn(c *conn) {
	s.mu.Lock()
	delete(s.conns, c)
	s.mu.Unlock()
	s.stats.currConns.Add(-1)
}

// Close stops listening, disconnects every client and waits for the
// goroutines that serve clients (loops close theirs asynchronously).
func (s *Server) Close() error {
	s.mu.Lock()
	s.closed = true
	for _, ln := range s.listeners {
		ln.Close()
	}
	conns := make([]*conn, 0, len(s.conns))
	for c := range s.conns {
		conns = append(conns, c)
	}
	for nc := range s.admitting {
		nc.Close()
	}
	if s.flushT != nil {
		s.flushT.Stop()
	}
	s.mu.Unlock()
	for _, c := range conns {
		c.mu.Lock()
		nc, loop, fd := c.nc, c.loop, c.fd
		c.mu.Unlock()
		if nc != nil {
			nc.Close()
		} else if loop != nil {
			loop.RequestClose(fd, c)
		}
	}
	s.wg.Wait()
	return nil
}

func nowMs() int64 { return time.Now().UnixMilli() }
