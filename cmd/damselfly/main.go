// Command damselfly runs the Damselfly server: a Redis- and Memcached-
// compatible in-memory data store.
package main

import (
	"bufio"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/alecthomas/kong"

	"github.com/damselflydb/damselfly/server"
)

// memory is a byte count given with Redis's units (512mb, 4gb).
type memory int64

func (m *memory) Decode(ctx *kong.DecodeContext) error {
	var s string
	if err := ctx.Scan.PopValueInto("memory", &s); err != nil {
		return err
	}
	n, err := server.ParseMemory(s)
	if err != nil {
		return fmt.Errorf("%q: %v (e.g. 512mb, 4gb)", s, err)
	}
	*m = memory(n)
	return nil
}

type cli struct {
	Port             int              `help:"TCP port for the Redis protocol." default:"6379" env:"DAMSELFLY_PORT"`
	Bind             string           `help:"Address to listen on." default:"0.0.0.0" env:"DAMSELFLY_BIND"`
	Requirepass      string           `help:"Password clients must AUTH with." env:"DAMSELFLY_REQUIREPASS"`
	ProtectedMode    bool             `name:"protected-mode" help:"Without a password, accept only loopback clients." default:"true" negatable:"" env:"DAMSELFLY_PROTECTED_MODE"`
	Maxmemory        memory           `help:"Memory limit (e.g. 512mb, 4gb); 0 = none." default:"0" env:"DAMSELFLY_MAXMEMORY"`
	MaxmemoryPolicy  string           `name:"maxmemory-policy" help:"Past --maxmemory: noeviction (writes fail), allkeys-lru, volatile-lru, allkeys-lfu, volatile-lfu, allkeys-random, volatile-random or volatile-ttl." default:"noeviction" env:"DAMSELFLY_MAXMEMORY_POLICY"`
	Dir              string           `help:"Directory for dump files." default:"." env:"DAMSELFLY_DIR"`
	Dbfilename       string           `help:"Dump file name." default:"dump.rdb" env:"DAMSELFLY_DBFILENAME"`
	Save             string           `help:"Save schedule: pairs of 'seconds changes'; empty disables." default:"3600 1 300 100 60 10000" env:"DAMSELFLY_SAVE"`
	Shards           int              `help:"Number of shards (default: GOMAXPROCS)." default:"0" env:"DAMSELFLY_SHARDS"`
	Dbnum            int              `help:"Number of databases." default:"16" env:"DAMSELFLY_DBNUM"`
	Unixsocket       string           `help:"Also listen on this Unix socket." env:"DAMSELFLY_UNIXSOCKET"`
	Unixsocketperm   string           `help:"Unix socket permissions, octal (e.g. 700); 0 keeps the umask's." default:"0" env:"DAMSELFLY_UNIXSOCKETPERM"`
	MemcachedPort    int              `name:"memcached-port" aliases:"memcached_port" help:"TCP port for the Memcached text protocol; 0 = off." default:"0" env:"DAMSELFLY_MEMCACHED_PORT"`
	MaxItemSize      memory           `name:"max-item-size" aliases:"max_item_size" help:"Largest memcached item (e.g. 1mb)." default:"1mb" env:"DAMSELFLY_MAX_ITEM_SIZE"`
	Replicaof        string           `help:"Replicate the primary at host:port from the start." env:"DAMSELFLY_REPLICAOF"`
	Masterauth       string           `help:"Password to AUTH with on the primary." env:"DAMSELFLY_MASTERAUTH"`
	Masteruser       string           `help:"ACL user to AUTH as on the primary (with --masterauth)." env:"DAMSELFLY_MASTERUSER"`
	ReplBacklog      memory           `name:"repl-backlog-size" aliases:"repl_backlog_size" help:"Replication backlog for partial resync (e.g. 1mb)." default:"1mb" env:"DAMSELFLY_REPL_BACKLOG_SIZE"`
	GoroutinePerConn bool             `name:"goroutine-per-conn" help:"Serve each connection on its own goroutine instead of the epoll event loops (always so off Linux)." env:"DAMSELFLY_GOROUTINE_PER_CONN"`
	Dbformat         string           `help:"Dump format of saves: rdb (Redis's, one file) or native (one compressed file per shard, written and loaded in parallel). Loading detects either." default:"rdb" enum:"rdb,native" env:"DAMSELFLY_DBFORMAT"`
	Dbcompression    string           `help:"Compression of native dumps: s2, zstd or none." default:"s2" enum:"s2,zstd,none" env:"DAMSELFLY_DBCOMPRESSION"`
	DbcompressionLvl int              `name:"dbcompression-level" help:"Level of --dbcompression (s2: 1-3, zstd: 1-4; 0 = default)." default:"0" env:"DAMSELFLY_DBCOMPRESSION_LEVEL"`
	Dbdirs           []string         `name:"dbdirs" sep:"," help:"Stripe native dumps' per-shard files round-robin over these directories (e.g. /disk1,/disk2); the summary stays in --dir." env:"DAMSELFLY_DBDIRS"`
	SnapMaxExtra     memory           `name:"snapshot-max-extra-memory" help:"Most encoded bytes a save or full sync holds in flight (e.g. 64mb); past it, writes to keys not yet saved wait for the save." default:"64mb" env:"DAMSELFLY_SNAPSHOT_MAX_EXTRA_MEMORY"`
	Loglevel         string           `help:"debug, verbose, notice or warning." default:"notice" enum:"debug,verbose,notice,warning" env:"DAMSELFLY_LOGLEVEL"`
	Version          kong.VersionFlag `help:"Print the version and exit."`
	Maxclients       int              `help:"Most connections open at once, over all ports; more get -ERR max number of clients reached." default:"10000" env:"DAMSELFLY_MAXCLIENTS"`
	EnableDebug      string           `name:"enable-debug-command" help:"Allow DEBUG: no, yes, or local (loopback and Unix socket clients only)." default:"no" enum:"no,yes,local" env:"DAMSELFLY_ENABLE_DEBUG_COMMAND"`
	EnableProtected  string           `name:"enable-protected-configs" help:"Allow CONFIG SET dir/dbfilename: no, yes, or local (loopback and Unix socket clients only)." default:"no" enum:"no,yes,local" env:"DAMSELFLY_ENABLE_PROTECTED_CONFIGS"`
	AOF              aofFlags         `embed:""`
	TLS              tlsFlags         `embed:""`
	ClusterMode      string           `name:"cluster-mode" help:"Redis Cluster protocol: no, yes (topology pushed by a control plane with CLUSTERX, as kvrocks-controller does) or emulated (one node owning every slot)." default:"no" enum:"no,yes,emulated" env:"DAMSELFLY_CLUSTER_MODE"`
	DisableTHP       yesno            `name:"disable-thp" help:"yes: use no transparent huge pages (Redis's default); no: ask for them on the keyspace's memory and big lists, which pays on some hosts and costs on others (BENCHMARKS.md, thp)." default:"yes" env:"DAMSELFLY_DISABLE_THP"`
	EventLoop        string           `name:"event-loop" help:"Event loops: auto (the default: io_uring where the kernel allows it, else epoll), epoll, or io_uring." default:"auto" enum:"auto,epoll,io_uring" env:"DAMSELFLY_EVENT_LOOP"`
	Healthcheck      bool             `help:"Send PING to the server on 127.0.0.1:--port and exit 0 on PONG (for container health checks)."`
	// ACL
	Aclfile string     `help:"ACL file of 'user' lines: loaded at start (errors stop start-up), ACL LOAD reloads it, ACL SAVE writes it." env:"DAMSELFLY_ACLFILE"`
	Admin   adminFlags `embed:""` // adminflags.go
}

func newParser(c *cli) (*kong.Kong, error) {
	return kong.New(c,
		kong.Name("damselfly"),
		kong.Description("An in-memory data store that speaks the Redis and Memcached protocols. "+
			"Usage: damselfly [/path/to/damselfly.conf] [flags]; the config file uses redis.conf syntax and the flags override it."),
		kong.Vars{"version": "damselfly " + server.Version + " (Redis " + server.RedisVersion + " protocol)"},
		kong.Exit(func(code int) {
			if code != 0 {
				code = 2
			}
			os.Exit(code)
		}),
	)
}

func main() {
	var c cli
	parser, err := newParser(&c)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	confPath, args := splitConfigPath(os.Args[1:]) // conffile.go
	cf, err := readConfigFile(confPath, parser)
	if err != nil {
		fmt.Fprintln(os.Stderr, "damselfly:", err)
		os.Exit(2)
	}
	if cf != nil {
		args = append(cf.flagArgs, args...) // the command line overrides the file
	}
	if _, err := parser.Parse(args); err != nil {
		parser.Errorf("%s", err)
		fmt.Fprintln(os.Stderr, "run 'damselfly --help' for usage")
		os.Exit(2)
	}
	if err := validate(&c); err != nil {
		fmt.Fprintln(os.Stderr, "damselfly:", err)
		os.Exit(2)
	}
	if c.Healthcheck {
		os.Exit(healthcheck(c.Port, c.Requirepass))
	}
	if c.Save != "" {
		if err := checkWritableDir(c.Dir); err != nil {
			fmt.Fprintln(os.Stderr, "damselfly:", err)
			os.Exit(1)
		}
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: logLevel(c.Loglevel)}))
	tuneGC()
	if c.DisableTHP {
		disableTHP(log) // thp_linux.go
	}
	if c.Shards <= 0 {
		c.Shards = runtime.GOMAXPROCS(0)
	}
	cfg := server.Config{
		Port: c.Port, Bind: c.Bind, RequirePass: c.Requirepass, MaxMemory: int64(c.Maxmemory), MaxMemoryPolicy: c.MaxmemoryPolicy,
		Dir: c.Dir, DBFilename: c.Dbfilename, Shards: c.Shards, DBNum: c.Dbnum,
		UnixSocket: c.Unixsocket, ProtectedMode: c.ProtectedMode, Save: c.Save, Logger: log,
		MemcachedPort: c.MemcachedPort, MaxItemSize: int(c.MaxItemSize),
		ReplicaOf: c.Replicaof, MasterAuth: c.Masterauth, MasterUser: c.Masteruser, ReplBacklogSize: int64(c.ReplBacklog),
		GoroutinePerConn: c.GoroutinePerConn,
		MaxClients:       c.Maxclients, EnableDebugCommand: c.EnableDebug, EnableProtectedConfigs: c.EnableProtected,
		AOF:      c.AOF.config(),
		DBFormat: c.Dbformat, DBCompression: c.Dbcompression, DBCompressionLevel: c.DbcompressionLvl,
		TLS:                    c.TLS.config(),
		EventLoop:              c.EventLoop,
		HugePages:              !bool(c.DisableTHP),
		SnapshotMaxExtraMemory: int64(c.SnapMaxExtra),
	}
	cfg.UnixSocketPerm, _ = server.ParseUnixSocketPerm(c.Unixsocketperm) // checked by validate
	cfg.ACLFile = c.Aclfile
	cfg.Admin = c.Admin.config()
	cfg.ConfigFile = cf.absPath()
	cfg.ClusterMode = c.ClusterMode
	cfg.DBDirs = c.Dbdirs // dbdirs.go
	srv := server.New(cfg)
	if err := cf.applyRuntime(srv); err != nil { // conffile.go
		fmt.Fprintln(os.Stderr, "damselfly:", err)
		os.Exit(2)
	}
	// Listen at once (clients get -LOADING until the dump is loaded). A
	// dump that exists but cannot be read stops us here: starting empty
	// would later save an empty dataset over it.
	if err := srv.StartAndLoad(cfg); err != nil {
		if errors.Is(err, server.ErrLoad) {
			log.Error("cannot load the dump; refusing to start (fix or move the file)", "err", err)
			fmt.Fprintln(os.Stderr, "damselfly:", err)
		} else {
			log.Error("cannot start", "err", err)
		}
		os.Exit(1)
	}
	log.Info("damselfly ready", "version", server.Version, "addr", srv.Addr(), "shards", c.Shards, "pid", os.Getpid())
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM)
	for {
		select {
		case sig := <-sigs:
			// Like Redis: disconnect clients, save when a schedule is
			// configured, exit; if the save fails, keep running.
			log.Info("received signal, shutting down", "signal", sig.String())
			if err := srv.Shutdown(); err != nil {
				log.Error("cannot save the dataset; not exiting (send SIGKILL or SHUTDOWN NOSAVE to stop anyway)", "err", err)
				continue
			}
		case <-srv.Done():
		}
		break
	}
	srv.Close()
	log.Info("damselfly stopped")
}

// healthcheck sends PING to the local server and reports 0 on PONG.
func healthcheck(port int, pass string) int {
	nc, err := net.DialTimeout("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), 2*time.Second)
	if err != nil {
		fmt.Fprintln(os.Stderr, "damselfly healthcheck:", err)
		return 1
	}
	defer nc.Close()
	_ = nc.SetDeadline(time.Now().Add(3 * time.Second))
	r := bufio.NewReader(nc)
	if pass != "" {
		fmt.Fprintf(nc, "*2\r\n$4\r\nAUTH\r\n$%d\r\n%s\r\n", len(pass), pass)
		if line, err := r.ReadString('\n'); err != nil || !strings.HasPrefix(line, "+OK") {
			fmt.Fprintln(os.Stderr, "damselfly healthcheck: AUTH:", strings.TrimSpace(line), err)
			return 1
		}
	}
	if _, err := nc.Write([]byte("*1\r\n$4\r\nPING\r\n")); err != nil {
		fmt.Fprintln(os.Stderr, "damselfly healthcheck:", err)
		return 1
	}
	line, err := r.ReadString('\n')
	// NOAUTH (a password this probe was not given) and LOADING (the dump
	// is still being read) come from a live server: healthy, so that a long
	// load never turns a container unhealthy.
	if err == nil && (strings.HasPrefix(line, "-NOAUTH") || strings.HasPrefix(line, "-LOADING")) {
		return 0
	}
	if err != nil || strings.TrimSpace(line) != "+PONG" {
		fmt.Fprintln(os.Stderr, "damselfly healthcheck: unexpected reply:", strings.TrimSpace(line), err)
		return 1
	}
	return 0
}

func validate(c *cli) error {
	if c.Port < 0 || c.Port > 65535 {
		return fmt.Errorf("--port %d: must be 0..65535", c.Port)
	}
	if c.MemcachedPort < 0 || c.MemcachedPort > 65535 {
		return fmt.Errorf("--memcached-port %d: must be 0..65535", c.MemcachedPort)
	}
	if c.MaxItemSize < 1024 || c.MaxItemSize > 1<<30 {
		return fmt.Errorf("--max-item-size %d: must be 1kb..1gb", c.MaxItemSize)
	}
	if c.Maxclients < 1 {
		return fmt.Errorf("--maxclients %d: must be at least 1", c.Maxclients)
	}
	if c.Dbnum < 1 {
		return fmt.Errorf("--dbnum %d: must be at least 1", c.Dbnum)
	}
	if c.Shards < 0 || c.Shards > 256 {
		return fmt.Errorf("--shards %d: must be 1..256", c.Shards)
	}
	if err := server.CheckPolicy(c.MaxmemoryPolicy); err != nil {
		return fmt.Errorf("--maxmemory-policy %q: %v", c.MaxmemoryPolicy, err)
	}
	if _, err := server.ParseSaveSchedule(c.Save); err != nil {
		return fmt.Errorf("--save %q: %v", c.Save, err)
	}
	if err := server.CheckAOFConfig(c.AOF.config()); err != nil {
		return fmt.Errorf("append-only file flags: %v", err)
	}
	if _, err := server.ParseUnixSocketPerm(c.Unixsocketperm); err != nil {
		return fmt.Errorf("--unixsocketperm %q: %v", c.Unixsocketperm, err)
	}
	if err := c.TLS.validate(); err != nil {
		return err
	}
	if err := server.CheckDBDirs(c.Dbdirs); err != nil {
		return fmt.Errorf("--dbdirs: %v", err)
	}
	if strings.ContainsRune(c.Dbfilename, '/') {
		return fmt.Errorf("--dbfilename %q: must be a file name, not a path", c.Dbfilename)
	}
	return nil
}

func logLevel(s string) slog.Level {
	switch s {
	case "debug":
		return slog.LevelDebug
	case "warning":
		return slog.LevelWarn
	}
	return slog.LevelInfo
}

// tuneGC lowers the collector's headroom unless GOGC is set. Entries live in
// mmap'd slabs outside the Go heap, so the live heap is small (the index and
// collection objects) and GOGC=100 would let garbage grow to that size again
// before collecting: measured during a BGSAVE of 1M keys, the heap swung
// 10 -> 21 MB, most of the save's 11% memory peak. Cycles over a small,
// mostly pointer-free heap cost well under a millisecond of CPU each.
func tuneGC() {
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(25)
	}
}
