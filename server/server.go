// Package server is Damselfly's Redis protocol front end: listeners,
// connections, authentication, the command table, dispatch and replies.
//
// TCP connections are served by event loops (eventloop_linux.go: one epoll
// instance per GOMAXPROCS, each on its own goroutine): on readiness a loop
// reads whatever the client sent, executes every complete request in order,
// and writes all replies with one write, so the common request/response path
// never parks a goroutine. A command that may block or take the connection
// over (Client.mayBlock) first detaches its connection to a goroutine of its
// own, which serves it as before from then on. Unix socket connections are
// served by the same loops (unixsocket.go); all connections with
// Config.GoroutinePerConn or off Linux have a goroutine each from the start. Commands reach data only through package shard: a single-key
// command locks the key's shard; a multi-key command locks its shards in
// ascending order.
package server

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/damselflydb/damselfly/internal/tsc"
	"github.com/damselflydb/damselfly/memcache"
	"github.com/damselflydb/damselfly/netpoll"
	"github.com/damselflydb/damselfly/replication"
	"github.com/damselflydb/damselfly/shard"
	"github.com/damselflydb/damselfly/shard/types"
	"github.com/damselflydb/damselfly/snapshot"
)

// Version is Damselfly's own version (--version, INFO damselfly_version).
const Version = "0.1.0"

// RedisVersion is the Redis protocol level Damselfly implements, reported
// where clients check it: INFO redis_version and HELLO's version.
const RedisVersion = "7.0.15"

// Config is the server's start-up configuration.
type Config struct {
	Port        int
	Bind        string
	RequirePass string
	MaxMemory   int64
	// MaxMemoryPolicy is what happens past MaxMemory (maxmemory-policy;
	// "" = noeviction).
	MaxMemoryPolicy string
	Dir             string
	DBFilename      string
	Shards          int
	DBNum           int
	UnixSocket      string
	ProtectedMode   bool
	Save            string
	Logger          *slog.Logger
	// MemcachedPort, when non-zero, also serves the Memcached text protocol
	// on Bind:MemcachedPort over database 0 (-1 picks a free port, for tests).
	MemcachedPort int
	// MaxItemSize bounds memcached items (0: memcache.DefaultMaxItemSize).
	MaxItemSize int
	// Replication: ReplicaOf is "host:port" to replicate at start;
	// MasterAuth the password for the primary; ReplBacklogSize
	// repl-backlog-size (default 1mb).
	ReplicaOf       string
	MasterAuth      string
	ReplBacklogSize int64
	// GoroutinePerConn serves every connection on its own goroutine instead
	// of the epoll event loops (the only mode off Linux).
	GoroutinePerConn bool
	// EnableProtectedConfigs and EnableDebugCommand are Redis 7's
	// enable-protected-configs / enable-debug-command: "no" (also ""),
	// "yes" or "local" (protected.go).
	EnableProtectedConfigs string
	EnableDebugCommand     string
	// MaxClients bounds connections over all ports (maxclients; 0: 10000).
	MaxClients int
	// AOF configures the append-only file (aof.go).
	AOF AOFConfig
	// DBFormat is how saves are written: "rdb" (default, Redis's format)
	// or "native" (one compressed file per shard, see snapshot.SaveNative);
	// loading detects either. DBCompression ("s2" default, "zstd",
	// "none") and DBCompressionLevel (0 = the codec's default) apply to
	// native saves.
	DBFormat           string
	DBCompression      string
	DBCompressionLevel int
	// UnixSocketPerm is the Unix socket file's mode (unixsocketperm; 0
	// keeps what the umask gives). See ParseUnixSocketPerm.
	UnixSocketPerm os.FileMode
	// TLS configures the TLS port, the memcached TLS port and TLS
	// replication (tls.go).
	TLS TLSConfig

	// Event loop kind (eventloop_kind.go): "auto" or "" (io_uring where the
	// kernel allows it, else epoll), "epoll" or "io_uring" (falls back to
	// epoll, with a warning, where io_uring cannot be had).
	EventLoop string
	// HugePages asks for transparent huge pages on the keyspace's slab
	// arenas and on big lists' node chunks: Redis's disable-thp no. The
	// default (false) is Redis's disable-thp yes; which is faster depends
	// on the host (shard/slab's mapArena says why).
	HugePages bool
	// Snapshots (issue 14): SnapshotMaxExtraMemory bounds the encoded bytes
	// a save or full sync holds in flight (0 = 64 MiB); past it, writes to
	// keys not yet saved wait for the save instead of it copying more.
	SnapshotMaxExtraMemory int64

	// ACL (acl.go): ACLFile is --aclfile (ACL LOAD/SAVE, loaded at start);
	// ACLUsers are configuration "user" directives, each the user name and
	// its rules (see ValidateACLUser), applied before the ACL file.
	ACLFile  string
	ACLUsers [][]string

	// Observability (admin.go): the HTTP admin port with /metrics,
	// /healthz and optionally pprof.
	Admin AdminConfig
	// Client-side caching, CLIENT PAUSE and the config file
	// (tracking.go, clientadmin.go, conffile.go).
	// TrackingTableMaxKeys is tracking-table-max-keys (0: Redis's default,
	// 1000000; negative: no limit). ConfigFile is the file the server was
	// started with ("": none; CONFIG REWRITE then fails as in Redis).
	TrackingTableMaxKeys int64
	ConfigFile           string
	// Cluster (cluster.go): ClusterMode is --cluster-mode, "no" (also ""),
	// "yes" (topology from a control plane) or "emulated".
	ClusterMode string
	// MasterUser is masteruser, the ACL user the replication handshake
	// authenticates as with MasterAuth (masterauth.go).
	MasterUser string

	// Snapshot striping (dbdirs.go): DBDirs spreads a native dump's shard
	// files round-robin over these directories (--dbdirs); empty: all
	// next to the dump.
	DBDirs []string
}

// liveConfig holds the settings CONFIG SET may change while serving.
type liveConfig struct {
	mu              sync.RWMutex
	pass            string
	dir             string
	dbfilename      string
	save            string
	maxMemory       atomic.Int64
	protoMaxBulkLen atomic.Int64
	queryBufLimit   atomic.Int64 // client-query-buffer-limit (querybuf.go)
	protectedMode   atomic.Bool
	rdbCompression  atomic.Bool       // LZF in dumps (rdbcompression); see snapshot.Options.Compress
	rdbIncFsync     atomic.Bool       // rdb-save-incremental-fsync: dumps written back as they grow (package wbsync)
	params          map[string]string // other CONFIG parameters, kept as given
}

func (l *liveConfig) requirePass() string {
	l.mu.RLock()
	defer l.mu.RUnlock()
	return l.pass
}

type stats struct {
	commands    atomic.Int64
	connections atomic.Int64
	rejected    atomic.Int64
	keyHits     atomic.Int64
	keyMisses   atomic.Int64
	// outputLimitDisconnects counts clients closed for their output
	// buffer limit (outlimit.go).
	outputLimitDisconnects atomic.Int64
}

// Server is a running Damselfly instance.
type Server struct {
	cfg   liveConfig
	store *shard.Store
	clock *tsc.Clock // commands' durations (cmdclock.go)
	cmds  map[string]*command

	bigOut outPool // written big output buffers, reused warm (outbuf.go)

	configParams map[string]configParam
	log          *slog.Logger
	port         int

	nextClientID atomic.Int64
	clientsMu    sync.Mutex
	clients      map[int64]*Client
	listeners    []net.Listener
	loops        []*netpoll.Loop // nil: goroutine per connection
	nextLoop     int             // round-robin assignment (accept goroutines)
	loopMu       sync.Mutex
	mc           *memcache.Server
	mcAddr       string
	stats        stats
	started      time.Time
	runID        string

	// usedMem is used_memory as of the last cron tick, kept only while
	// maxmemory is set (reading it per command would stop the world).
	usedMem atomic.Int64
	evict   evictor // maxmemory-policy (evict.go)
	// words are journal entries made once (never modified).
	words struct{ multi, exec [][]byte }

	// dirty counts committed writes (rdb_changes_since_last_save).
	dirty atomic.Int64
	// repl is the replication journal and role: every committed write is
	// appended to it, in commit order, while the writer holds its shard
	// locks (commitWrite). master is the internal client that applies the
	// primary's stream when this server is a replica.
	repl   *replication.Node
	master *Client
	// journal appends a committed write to the replication stream and
	// returns the stream offset after it (s.repl.Append; tests may wrap it).
	journal func(db int, args [][]byte) int64

	persist   persistence
	aof       aofState // the append-only file (aof.go)
	pubsub    *pubsubRegistry
	outLimits atomic.Pointer[outLimits] // client-output-buffer-limit
	scripts   *scriptCache

	// limits are the collection encoding thresholds (CONFIG SET replaces
	// the whole value).
	limits   atomic.Pointer[types.Limits]
	limitsMu sync.Mutex // serializes CONFIG SET of the limits
	// blocking is the registry of clients waiting in BLPOP and friends.
	blocking blockRegistry

	// enableProtectedConfigs and enableDebug are fixed at New (protected.go).
	enableProtectedConfigs, enableDebug string
	limitsConn                          connLimits   // maxclients (maxclients.go)
	wd                                  watchdog     // slow shard holders (watchdog.go)
	keySaveDelayUs                      atomic.Int64 // rdb-key-save-delay (keysavedelay.go)
	reclaim                             reclaimer    // GC before refusing a write (memreclaim.go)
	// writerGate slows the connections that fill a save's memory budget
	// (writergate.go); noWriterGate turns it off (tests compare).
	writerGate   snapshot.WriterGate
	noWriterGate atomic.Bool
	// gateDetaches and gateReattaches count the loop clients detached to
	// wait at the gate and those handed back to a loop; gateKept, those
	// that then ran a command that keeps them on their goroutine (tests).
	gateDetaches, gateReattaches, gateKept atomic.Int64
	// unixPath and unixPerm are the Unix socket's configuration (CONFIG GET).
	unixPath string
	unixPerm os.FileMode

	kse     keyspaceEvents // notify-keyspace-events (notify.go)
	migrate migrateConns   // MIGRATE's cached connections (migrate.go)
	// obs is command statistics, SLOWLOG, LATENCY and MONITOR (cmdstats.go).
	obs   observe
	admin adminState // the HTTP admin port (admin.go)

	track    tracking   // client-side caching (tracking.go)
	pause    pauseState // CLIENT PAUSE (clientadmin.go)
	confFile string     // the config file (conffile.go)
	// confDefaults are the CONFIG parameters' values before the config
	// file was applied (CONFIG REWRITE appends what differs).
	confDefaults map[string]string
	cluster      *clusterState // nil unless --cluster-mode yes|emulated (cluster.go)

	shutdownOnce sync.Once
	done         chan struct{}
	wg           sync.WaitGroup

	acl aclState // users, the ACL log and file (acl.go)
	tls tlsState // TLS listeners and configuration (tls.go)

	// Snapshot striping (dbdirs.go): --dbdirs / CONFIG SET dbdirs.
	dbDirs atomic.Pointer[[]string]

	// Network counters of INFO stats (netstats.go).
	netAcct *netStats
	// Memcached commands in commandstats, SLOWLOG, LATENCY, MONITOR
	// (memcache_observe.go).
	mcObs *mcObserver
	// CLUSTER FAILOVER runs (cluster_failover_cmd.go).
	manualFO manualFailover
	// Bytes of grown input buffers clients keep between requests (inbuf.go).
	inRetained atomic.Int64
	// Bytes of input buffers allocated at a request's announced size,
	// while the request is in progress (inbuf.go).
	inAhead atomic.Int64
}

// New prepares a server; Start opens its listeners.
func New(cfg Config) *Server {
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.DBNum <= 0 {
		cfg.DBNum = 16
	}
	s := &Server{
		store:   shard.NewStore(cfg.Shards, cfg.DBNum),
		log:     cfg.Logger,
		clients: map[int64]*Client{},
		started: time.Now(),
		clock:   tsc.New(),
		done:    make(chan struct{}),
		runID:   randomHex(40),
		port:    cfg.Port,
	}
	s.cfg.pass = cfg.RequirePass
	s.cfg.dir = cfg.Dir
	s.cfg.dbfilename = cfg.DBFilename
	s.cfg.save = cfg.Save
	s.cfg.maxMemory.Store(cfg.MaxMemory)
	if p, err := parsePolicy(cfg.MaxMemoryPolicy); err == nil {
		s.setPolicy(p) // lfu.go
	}
	s.evict.samples.Store(5)
	s.words.multi, s.words.exec = [][]byte{[]byte("MULTI")}, [][]byte{[]byte("EXEC")}
	s.evict.pools = make([]evictPool, len(s.store.Shards()))
	s.cfg.protoMaxBulkLen.Store(defaultMaxBulkBytes)
	s.cfg.queryBufLimit.Store(defaultQueryBufferLimit)
	s.cfg.protectedMode.Store(cfg.ProtectedMode)
	s.cfg.rdbIncFsync.Store(true)
	s.cfg.rdbCompression.Store(true) // Redis's default: LZF (snapshot/rdb/lzfc.go)
	s.cfg.params = map[string]string{"masterauth": cfg.MasterAuth, "masteruser": cfg.MasterUser}
	s.persist.init(s.started)
	s.initDBFormat(cfg)
	s.pubsub = newPubSubRegistry()
	s.store.OnNewKey(s.notifyNewKey) // notify.go
	s.scripts = newScriptCache()
	lim := defaultOutLimits
	s.outLimits.Store(&lim)
	limits := defaultLimits()
	limits.HugePages = cfg.HugePages
	s.limits.Store(&limits)
	s.store.AdviseHugePages(cfg.HugePages)
	s.blocking.init()
	s.cmds = commandTable()
	s.initACL(cfg)
	s.initObserve()         // cmdstats.go
	s.initNetStats()        // netstats.go
	s.initMemcacheObserve() // memcache_observe.go
	s.configParams = configParams()
	s.enableProtectedConfigs = normProtected(cfg.EnableProtectedConfigs)
	s.enableDebug = normProtected(cfg.EnableDebugCommand)
	s.limitsConn.init(cfg.MaxClients)
	s.wd.thresholdMs.Store(defaultWatchdogMs)
	s.initReplication(cfg)
	s.initAOF(cfg.AOF)
	s.journal = s.journalWrite
	s.initTLS(cfg.TLS)
	s.initClientFeatures(cfg) // tracking.go, clientadmin.go, conffile.go
	s.initCluster(cfg)
	return s
}

// Store exposes the keyspace (for tests and the other front ends).
func (s *Server) Store() *shard.Store { return s.store }

// Start listens on the configured TCP address (and Unix socket) and serves
// in the background. Port 0 picks a free port; Addr reports it.
func (s *Server) Start(cfg Config) error {
	if s.cfg.maxMemory.Load() > 0 {
		// Measure before serving (after LoadDump): until the cron's first
		// tick the eviction budget would otherwise read 0 and the first
		// write would evict its whole shard.
		heap, dataset := s.memoryParts(nil)
		s.usedMem.Store(heap + dataset)
		s.updateBudget(heap+dataset, dataset)
	}
	if err := s.startACL(cfg); err != nil {
		return err
	}
	if err := s.startAOF(); err != nil {
		return err
	}
	s.fitMaxClientsToFDs() // maxclients.go
	ln, err := net.Listen("tcp", net.JoinHostPort(cfg.Bind, strconv.Itoa(cfg.Port)))
	if err != nil {
		return err
	}
	s.port = ln.Addr().(*net.TCPAddr).Port
	s.listeners = append(s.listeners, ln)
	if cfg.UnixSocket != "" {
		uln, err := listenUnix(cfg.UnixSocket, cfg.UnixSocketPerm)
		if err != nil {
			ln.Close()
			return err
		}
		s.listeners = append(s.listeners, uln)
		s.unixPath, s.unixPerm = cfg.UnixSocket, cfg.UnixSocketPerm
	}
	if !cfg.GoroutinePerConn {
		s.loops = s.startLoops(cfg.EventLoop)
	}
	if cfg.MemcachedPort != 0 {
		if err := s.startMemcached(cfg); err != nil {
			for _, l := range s.listeners {
				l.Close()
			}
			for _, l := range s.loops {
				l.Stop()
			}
			return err
		}
	}
	if err := s.startTLS(cfg); err != nil {
		s.Close()
		return err
	}
	for _, l := range s.listeners {
		s.wg.Add(1)
		go s.acceptLoop(l)
	}
	if cfg.ReplicaOf != "" {
		if err := s.startReplicaOf(cfg.ReplicaOf); err != nil {
			return err
		}
	}
	if err := s.startAdmin(cfg.Admin); err != nil { // admin.go
		return err
	}
	s.clusterStarted()
	s.wg.Add(1)
	go s.cron()
	return nil
}

// startMemcached serves the memcached protocol on cfg.MemcachedPort
// (negative: a free port).
func (s *Server) startMemcached(cfg Config) error {
	port := max(cfg.MemcachedPort, 0)
	s.mc = s.newMemcache(cfg)
	mln, err := s.mc.Listen(net.JoinHostPort(cfg.Bind, strconv.Itoa(port)))
	if err != nil {
		return fmt.Errorf("memcached port: %w", err)
	}
	s.mcAddr = mln.Addr().String()
	return nil
}

// newMemcache makes the memcached front end (its listeners come after).
func (s *Server) newMemcache(cfg Config) *memcache.Server {
	return memcache.New(s.store, memcache.Config{MaxItemSize: cfg.MaxItemSize, Logger: s.log,
		Journal: s.commitMemcached, Loops: s.loops, Admit: s.admitWrite,
		MaxBytes: s.cfg.maxMemory.Load, Evictions: s.evict.evicted.Load,
		Accept: s.admitMemcached, Busy: func() bool { return s.scripts.busy.Load() != nil },
		Route:   s.memcacheRoute(), // cluster_memcache.go
		Observe: s.mcObs})          // memcache_observe.go
}

// MemcachedAddr is the address of the memcached listener ("" when off).
func (s *Server) MemcachedAddr() string { return s.mcAddr }

// Addr is the TCP address the server listens on.
func (s *Server) Addr() string { return s.listeners[0].Addr().String() }

// Port is the TCP port the server listens on.
func (s *Server) Port() int { return s.port }

// Done is closed when the server has been asked to stop (SHUTDOWN).
func (s *Server) Done() <-chan struct{} { return s.done }

func (s *Server) acceptLoop(l net.Listener) {
	defer s.wg.Done()
	for {
		nc, err := l.Accept()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			s.log.Warn("accept", "err", err)
			time.Sleep(10 * time.Millisecond)
			continue
		}
		if s.persist.shutting.Load() {
			nc.Close()
			continue
		}
		if tc, ok := nc.(*net.TCPConn); ok {
			_ = tc.SetNoDelay(true)
			if s.deniedByProtectedMode(tc) {
				s.stats.rejected.Add(1)
				_, _ = nc.Write([]byte(deniedReply))
				nc.Close()
				continue
			}
		}
		if !s.admitConn() {
			_, _ = nc.Write([]byte(maxClientsReply))
			nc.Close()
			continue
		}
		s.stats.connections.Add(1)
		c := s.newClient(nc)
		s.clientsMu.Lock()
		s.clients[c.id] = c
		s.clientsMu.Unlock()
		if pc, ok := nc.(netpoll.Conn); ok && s.loops != nil { // TCP and Unix sockets
			if err := s.adopt(c, pc); err == nil {
				continue
			}
			s.log.Warn("event loop: serving the connection on a goroutine", "client", c.id, "err", err)
		}
		go c.serve()
	}
}

// deniedByProtectedMode applies Redis's protected mode: with no password
// set, only loopback clients may connect.
func (s *Server) deniedByProtectedMode(tc *net.TCPConn) bool {
	if !s.cfg.protectedMode.Load() || !s.aclDefaultNoPass() {
		return false
	}
	addr, ok := tc.RemoteAddr().(*net.TCPAddr)
	return ok && !addr.IP.IsLoopback()
}

const deniedReply = "-DENIED Damselfly is running in protected mode because protected mode is enabled and no password is set for the default user. " +
	"In this mode connections are only accepted from the loopback interface. If you want to connect from external computers to Damselfly you " +
	"may adopt one of the following solutions: 1) Set up an authentication password with --requirepass (or CONFIG SET requirepass from the loopback interface). " +
	"2) Disable protected mode with --protected-mode=false, making sure the server is not publicly reachable. " +
	"3) Bind only to the loopback interface with --bind 127.0.0.1.\r\n"

func (s *Server) dropClient(c *Client) {
	s.clientsMu.Lock()
	delete(s.clients, c.id)
	s.clientsMu.Unlock()
}

// cron runs the periodic work: active expiry on every shard.
func (s *Server) cron() {
	defer s.wg.Done()
	t := time.NewTicker(100 * time.Millisecond)
	defer t.Stop()
	var rnd uint64 = uint64(time.Now().UnixNano())
	for {
		select {
		case <-s.done:
			return
		case <-t.C:
		}
		s.saveCron()
		s.netCron() // netstats.go
		if s.cfg.maxMemory.Load() > 0 {
			heap, dataset := s.memoryParts(nil)
			s.usedMem.Store(heap + dataset)
			s.updateBudget(heap+dataset, dataset)
			notePeak(&s.obs.memPeak, heap+dataset) // info_exporter.go
		}
		s.trackCron() // tracking.go: invalidations left by other writers, tracking-table-max-keys
		if s.repl.IsReplica() || s.pause.expiryPaused() {
			continue // a replica's keys expire when its primary says so (DEL); CLIENT PAUSE stops expiry
		}
		cycle := time.Now()
		deadline := cycle.Add(5 * time.Millisecond)
		for _, sh := range s.store.Shards() {
			for time.Now().Before(deadline) {
				rnd = rnd*6364136223846793005 + 1442695040888963407
				sh.Lock()
				deleted, sampled := sh.ExpireCycle(time.Now().UnixMilli(), rnd, 20)
				if s.track.users.Load() > 0 {
					s.trackFlush(sh, nil) // tracking.go: invalidate what expired
				}
				sh.Unlock()
				// Like Redis: keep going while more than a quarter of the
				// sample was expired.
				if sampled == 0 || deleted*4 < sampled {
					break
				}
			}
		}
		s.kseAfterCron()                                             // notify.go
		s.obs.latency.addIfNeeded("expire-cycle", time.Since(cycle)) // latency.go
	}
}

// Close stops listening, disconnects every client and waits for the
// background goroutines.
func (s *Server) Close() error {
	s.shutdownOnce.Do(func() { close(s.done) })
	s.migrate.closeAll() // migrate.go
	for _, l := range s.listeners {
		l.Close()
	}
	s.closeTLS()
	if s.mc != nil {
		s.mc.Close()
	}
	s.clientsMu.Lock()
	for _, c := range s.clients {
		c.closed.Store(true)
		c.closeConn()
	}
	s.clientsMu.Unlock()
	for _, l := range s.loops {
		l.Stop()
	}
	s.scripts.abort() // a script still running holds every shard
	s.closeAdmin()
	s.repl.Close()
	s.wg.Wait()
	s.closeAOF()
	return nil
}

// Shutdown asks the server to stop (SHUTDOWN, signals); main calls Close.
func (s *Server) requestShutdown() {
	s.shutdownOnce.Do(func() { close(s.done) })
}

// Run serves until SHUTDOWN is received or ctx is done; then it shuts down
// as on SIGTERM (saving when a schedule is configured) and closes.
func (s *Server) Run(ctx context.Context) error {
	select {
	case <-ctx.Done():
		if err := s.Shutdown(); err != nil {
			return err
		}
	case <-s.done:
	}
	return s.Close()
}

func randomHex(n int) string {
	b := make([]byte, n/2)
	_, _ = rand.Read(b)
	return fmt.Sprintf("%x", b)
}
