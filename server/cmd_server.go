package server

import (
	"crypto/rand"
	"encoding/binary"
	"fmt"
	"math"
	"os"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/damselflydb/damselfly/shard"
)

func registerServer(reg registrar) {
	reg("dbsize", 1, "readonly|fast", 0, 0, 0, "server", cmdDBSize)
	reg("flushdb", -1, "write", 0, 0, 0, "server", cmdFlushDB)
	reg("flushall", -1, "write", 0, 0, 0, "server", cmdFlushAll)
	reg("swapdb", 3, "write|fast", 0, 0, 0, "server", cmdSwapDB)
	reg("info", -1, "", 0, 0, 0, "server", cmdInfo)
	reg("config", -2, "admin|x-no-data", 0, 0, 0, "server", cmdConfig)
	reg("config|get", -3, "admin|noscript|loading|stale", 0, 0, 0, "server", cmdConfig)
	reg("config|set", -4, "admin|noscript|loading|stale", 0, 0, 0, "server", cmdConfig)
	reg("config|resetstat", 2, "admin|noscript|loading|stale", 0, 0, 0, "server", cmdConfig)
	reg("config|rewrite", 2, "admin|noscript|loading|stale", 0, 0, 0, "server", cmdConfig)
	reg("config|help", 2, "loading|stale", 0, 0, 0, "server", cmdConfig)
	reg("command", -1, "x-no-data", 0, 0, 0, "server", cmdCommand)
	reg("command|count", 2, "loading|stale", 0, 0, 0, "server", cmdCommand)
	reg("command|info", -2, "loading|stale", 0, 0, 0, "server", cmdCommand)
	reg("command|docs", -2, "loading|stale", 0, 0, 0, "server", cmdCommand)
	reg("command|list", -2, "loading|stale", 0, 0, 0, "server", cmdCommand)
	reg("command|getkeys", -4, "loading|stale", 0, 0, 0, "server", cmdCommand)
	reg("command|getkeysandflags", -4, "loading|stale", 0, 0, 0, "server", cmdCommand)
	reg("command|help", 2, "loading|stale", 0, 0, 0, "server", cmdCommand)
	reg("time", 1, "fast|x-no-data", 0, 0, 0, "server", cmdTime)
	reg("shutdown", -1, "admin", 0, 0, 0, "server", cmdShutdown)
	reg("debug", -2, "admin|x-detach|x-own-locks", 0, 0, 0, "server", cmdDebug)
	reg("memory", -2, "readonly", 0, 0, 0, "server", cmdMemory)
	reg("memory|usage", -3, "readonly", 2, 2, 1, "server", cmdMemory)
	reg("memory|help", 2, "loading|stale", 0, 0, 0, "server", cmdMemory)
	reg("object", -2, "readonly", 2, 2, 1, "generic", cmdObject)
	reg("object|encoding", 3, "readonly", 2, 2, 1, "generic", cmdObject)
	reg("object|refcount", 3, "readonly", 2, 2, 1, "generic", cmdObject)
	reg("object|idletime", 3, "readonly", 2, 2, 1, "generic", cmdObject)
	reg("object|freq", 3, "readonly", 2, 2, 1, "generic", cmdObject)
	reg("object|help", 2, "loading|stale", 0, 0, 0, "generic", cmdObject)
}

func randUint64() uint64 {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return binary.LittleEndian.Uint64(b[:])
}

func (s *Server) role() string {
	if s.repl.IsReplica() {
		return "slave"
	}
	return "master"
}

// dbSize counts the keys of database db over all shards.
func (s *Server) dbSize(c *Client, db int) int64 {
	var n int64
	for _, sh := range s.store.Shards() {
		c.lockShard(sh)
		if d := sh.PeekDB(db); d != nil {
			n += int64(d.Len())
		}
		c.unlockShard(sh)
	}
	return n
}

func cmdDBSize(c *Client, args [][]byte) { c.int(c.srv.dbSize(c, c.db)) }

// flushMode parses FLUSHDB/FLUSHALL's optional ASYNC|SYNC.
func flushMode(c *Client, args [][]byte) (async, ok bool) {
	if len(args) > 2 {
		c.errSyntax()
		return false, false
	}
	if len(args) == 2 {
		switch {
		case eq(args[1], "async"):
			return true, true
		case eq(args[1], "sync"):
			return false, true
		default:
			c.errSyntax()
			return false, false
		}
	}
	return false, true
}

func cmdFlushDB(c *Client, args [][]byte) {
	async, ok := flushMode(c, args)
	if !ok {
		return
	}
	set := c.lockAll()
	defer c.unlock(set)
	c.srv.flush(c.db, async)
	c.trackFlushed() // tracking.go: null invalidation to every tracking client
	c.ok()
}

func cmdFlushAll(c *Client, args [][]byte) {
	async, ok := flushMode(c, args)
	if !ok {
		return
	}
	set := c.lockAll()
	defer c.unlock(set)
	c.srv.flush(-1, async)
	c.trackFlushed() // tracking.go: null invalidation to every tracking client
	c.ok()
}

// flush empties database db (-1: all); the caller holds every shard lock.
func (s *Server) flush(db int, async bool) {
	for _, sh := range s.store.Shards() {
		for i := 0; i < s.store.DBNum(); i++ {
			if db < 0 || i == db {
				sh.FlushDB(i, async)
			}
		}
	}
}

func cmdSwapDB(c *Client, args [][]byte) {
	a, ok1 := parseInt(args[1])
	b, ok2 := parseInt(args[2])
	if !ok1 {
		c.err("ERR invalid first DB index")
		return
	}
	if !ok2 {
		c.err("ERR invalid second DB index")
		return
	}
	n := int64(c.srv.store.DBNum())
	if a < 0 || a >= n || b < 0 || b >= n {
		c.err("ERR DB index is out of range")
		return
	}
	set := c.lockAll()
	defer c.unlock(set)
	for _, sh := range c.srv.store.Shards() {
		sh.SwapDB(int(a), int(b))
	}
	c.ok()
}

func cmdTime(c *Client, args [][]byte) {
	t := time.Now()
	c.array(2)
	c.bulkString(strconv.FormatInt(t.Unix(), 10))
	c.bulkString(strconv.FormatInt(int64(t.Nanosecond()/1000), 10))
}

// objectEncoding names a value's encoding as OBJECT ENCODING does.
func objectEncoding(e *shard.Entry) string {
	if e.Type() == shard.TypeString {
		s := e.Str()
		if len(s) <= 20 {
			if _, ok := parseInt(s); ok {
				return "int"
			}
		}
		if len(s) <= 44 {
			return "embstr"
		}
		return "raw"
	}
	if e.Type() == shard.TypeList {
		return "quicklist" // Redis 7.0 has no listpack lists
	}
	if enc, ok := e.Obj().(interface{ Encoding() string }); ok {
		return enc.Encoding()
	}
	return "unknown"
}

func cmdObject(c *Client, args [][]byte) {
	sub := lower(args[1])
	if sub == "help" {
		c.array(1)
		c.simple("OBJECT <subcommand> [<arg> ...]. Subcommands are: ENCODING, FREQ, IDLETIME, REFCOUNT, HELP.")
		return
	}
	switch sub {
	case "encoding", "refcount", "idletime", "freq":
	default: // Redis 7 looks subcommands up in its table before arity
		c.err("ERR unknown subcommand '" + sanitize(args[1], 128) + "'. Try OBJECT HELP.")
		return
	}
	if len(args) != 3 {
		c.err("ERR wrong number of arguments for 'object|" + sub + "' command")
		return
	}
	sh, h := c.lockKey(args[2])
	defer c.unlockKey(sh)
	t := now()
	sh.Tick(t)
	e, ok := sh.LookupNoTouch(c.db, h, args[2], t)
	if !ok {
		c.null()
		return
	}
	switch sub {
	case "encoding":
		c.bulkString(objectEncoding(&e))
	case "refcount":
		c.int(objectRefcount(c.srv, &e))
	case "idletime":
		if c.srv.lfuOn() {
			c.err("ERR An LFU maxmemory policy is selected, idle time not tracked. Please note that when switching between policies at runtime LRU and LFU data will take some time to adjust.")
			return
		}
		c.int(shard.IdleSeconds(e.Atime(), sh.Clock()))
	case "freq":
		if !c.srv.lfuOn() {
			c.err("ERR An LFU maxmemory policy is not selected, access frequency not tracked. Please note that when switching between policies at runtime LRU and LFU data will take some time to adjust.")
			return
		}
		c.int(int64(c.srv.store.LFUCounter(e.Atime(), t)))
	default:
		c.err("ERR unknown subcommand '" + sanitize(args[1], 128) + "'. Try OBJECT HELP.")
	}
}

func cmdMemory(c *Client, args [][]byte) {
	switch lower(args[1]) {
	case "usage":
		if len(args) != 3 && !(len(args) == 5 && eq(args[3], "samples")) {
			c.errSyntax()
			return
		}
		sh, h := c.lockKey(args[2])
		defer c.unlockKey(sh)
		e, ok := sh.Lookup(c.db, h, args[2], now())
		if !ok {
			c.null()
			return
		}
		size := int64(sh.DB(c.db).EntrySize(&e)) + 8 // chunk plus its index slot
		if e.Type() != shard.TypeString {
			if m, ok := e.Obj().(interface{ MemoryUsage() int }); ok {
				size += int64(m.MemoryUsage())
			}
		}
		c.int(size)
	case "help":
		c.array(1)
		c.simple("MEMORY <subcommand> [<arg> ...]. Subcommands are: USAGE <key> [SAMPLES <count>], HELP.")
	default:
		c.err("ERR unknown subcommand '" + sanitize(args[1], 128) + "'. Try MEMORY HELP.")
	}
}

func cmdDebug(c *Client, args [][]byte) {
	switch lower(args[1]) {
	case "populate":
		debugPopulate(c, args)
	case "reload":
		debugReload(c, args)
	case "digest":
		debugDigest(c)
	case "digest-value":
		debugDigestValue(c, args[2:])
	case "sleep":
		if len(args) != 3 {
			c.errSyntax()
			return
		}
		f, ok := parseFloat(args[2])
		if !ok {
			c.errNotFloat()
			return
		}
		time.Sleep(time.Duration(f * float64(time.Second)))
		c.ok()
	case "set-active-expire", "quicklist-packed-threshold", "change-repl-id":
		c.ok()
	case "help":
		c.array(1)
		c.simple("DEBUG <subcommand> [<arg> ...]. Subcommands are: POPULATE <count> [<prefix>] [<size>], RELOAD [NOSAVE], SLEEP <seconds>, HELP.")
	default:
		c.err("ERR unknown subcommand '" + sanitize(args[1], 128) + "'. Try DEBUG HELP.")
	}
}

// debugPopulate creates keys "<prefix>:<n>" with values "value:<n>", padded
// with zero bytes (or cut) to size when size is given, skipping existing
// keys: Redis's exact naming, so datasets compare across servers.
func debugPopulate(c *Client, args [][]byte) {
	if len(args) < 3 || len(args) > 5 {
		c.err("ERR wrong number of arguments for 'debug|populate' command")
		return
	}
	count, ok := parseInt(args[2])
	if !ok || count < 0 {
		c.err("ERR value is out of range, must be positive")
		return
	}
	prefix := []byte("key")
	if len(args) >= 4 {
		prefix = args[3]
	}
	size := int64(-1)
	if len(args) == 5 {
		n, ok := parseInt(args[4])
		if !ok || n < 0 {
			c.err("ERR value is out of range, must be positive")
			return
		}
		size = n
	}
	var key, val []byte
	shards := c.srv.store.Shards()
	// Group work by shard so each lock is taken once per batch.
	const batch = 1024
	for start := int64(0); start < count; start += batch {
		end := min(start+batch, count)
		for _, sh := range shards {
			c.lockShard(sh)
			for j := start; j < end; j++ {
				key = strconv.AppendInt(append(append(key[:0], prefix...), ':'), j, 10)
				h := shard.Hash(key)
				if c.srv.store.Route(key, h) != sh.ID() {
					continue
				}
				if _, exists := sh.DB(c.db).Find(h, key); exists {
					continue
				}
				val = strconv.AppendInt(append(val[:0], "value:"...), j, 10)
				if size >= 0 {
					if int64(len(val)) > size {
						val = val[:size]
					} else {
						for int64(len(val)) < size {
							val = append(val, 0)
						}
					}
				}
				sh.DB(c.db).Put(h, key, shard.Value{Type: shard.TypeString, Str: val})
			}
			c.unlockShard(sh)
		}
	}
	c.ok()
}

func cmdInfo(c *Client, args [][]byte) {
	sections := map[string]bool{}
	for _, a := range args[1:] {
		sections[lower(a)] = true
	}
	c.verbatim(c.srv.infoText(c, sections))
}

// infoText renders INFO with Redis's field names.
func (s *Server) infoText(c *Client, sections map[string]bool) string {
	every := sections["all"] || sections["everything"]
	all := len(sections) == 0 || every || sections["default"]
	want := func(name string) bool { return all || sections[name] }
	// wantExtra: sections only "all" and "everything" include (cmdstats.go).
	wantExtra := func(name string) bool { return every || sections[name] }
	var b strings.Builder
	section := func(name string) {
		if b.Len() > 0 {
			b.WriteString("\r\n")
		}
		b.WriteString("# " + name + "\r\n")
	}
	field := func(k string, v any) { fmt.Fprintf(&b, "%s:%v\r\n", k, v) }
	if want("server") {
		section("Server")
		s.infoServer(c, field)
	}
	if want("clients") {
		section("Clients")
		s.infoClients(c, field)
	}
	if want("memory") {
		section("Memory")
		s.infoMemory(c, field)
	}
	if want("persistence") {
		section("Persistence")
		s.infoPersistence(field)
	}
	if want("stats") {
		section("Stats")
		s.infoStats(c, field)
	}
	if want("replication") {
		section("Replication")
		b.WriteString(s.repl.InfoText())
	}
	if want("cpu") {
		section("CPU")
		s.infoCPU(c, field)
	}
	if wantExtra("commandstats") {
		section("Commandstats")
		s.infoCommandStats(&b)
	}
	if want("errorstats") {
		section("Errorstats")
		s.infoErrorStats(&b)
	}
	if wantExtra("latencystats") {
		section("Latencystats")
		s.infoLatencyStats(&b)
	}
	if want("cluster") {
		section("Cluster")
		s.infoCluster(field) // cluster.go
	}
	if want("keyspace") {
		section("Keyspace")
		s.infoKeyspace(c, &b)
	}
	return b.String()
}

func (s *Server) infoServer(c *Client, field func(string, any)) {
	uptime := int64(time.Since(s.started).Seconds())
	field("redis_version", RedisVersion)
	field("damselfly_version", Version)
	field("redis_mode", s.redisMode())
	field("os", runtime.GOOS+" "+runtime.GOARCH)
	field("arch_bits", 64)
	field("multiplexing_api", s.multiplexingAPI())
	field("go_version", runtime.Version())
	field("process_id", os.Getpid())
	field("run_id", s.runID)
	field("tcp_port", s.port)
	field("server_time_usec", time.Now().UnixMicro())
	field("uptime_in_seconds", uptime)
	field("uptime_in_days", uptime/86400)
	field("hz", 10)
	field("executable", executable())
	field("config_file", s.confFile) // conffile.go
	field("shards", len(s.store.Shards()))
	s.infoExporterFields("server", c, field) // info_exporter.go
}

func (s *Server) infoClients(c *Client, field func(string, any)) {
	s.clientsMu.Lock()
	n := len(s.clients)
	s.clientsMu.Unlock()
	field("connected_clients", n)
	field("maxclients", s.limitsConn.max.Load())
	field("blocked_clients", s.blockedClients())
	s.infoExporterFields("clients", c, field)
	field("tracking_clients", s.track.users.Load()) // tracking.go
}

func (s *Server) infoMemory(c *Client, field func(string, any)) {
	used := s.usedMemory(c)
	field("used_memory", used)
	field("used_memory_human", humanBytes(used))
	field("used_memory_rss", rss())
	field("used_memory_rss_human", humanBytes(rss()))
	field("used_memory_dataset", s.datasetMemory(c))
	max := s.cfg.maxMemory.Load()
	field("maxmemory", max)
	field("maxmemory_human", humanBytes(max))
	field("maxmemory_policy", evictionPolicy(s.evict.policy.Load()).String())
	s.infoScripting(field) // script.go
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	field("go_heap_alloc", ms.HeapAlloc)
	field("go_gc_cycles", ms.NumGC)
	field("go_gc_pause_total_ns", ms.PauseTotalNs)
	s.infoExporterFields("memory", c, field)
}

func (s *Server) infoStats(c *Client, field func(string, any)) {
	field("total_connections_received", s.stats.connections.Load())
	field("total_commands_processed", s.totalCommands())
	s.infoNetStats(field) // netstats.go
	field("rejected_connections", s.stats.rejected.Load())
	field("client_output_buffer_limit_disconnections", s.stats.outputLimitDisconnects.Load()) // Redis 7.2's name
	s.watchdogInfo(field)
	var expired int64
	for _, sh := range s.store.Shards() {
		c.lockShard(sh)
		expired += sh.ExpiredKeys()
		c.unlockShard(sh)
	}
	field("expired_keys", expired)
	s.infoExpiredSubkeys(c, field) // cmd_hash_ttl.go
	field("evicted_keys", s.evict.evicted.Load())
	full, pok, perr := s.repl.SyncStats()
	field("sync_full", full)
	field("sync_partial_ok", pok)
	field("sync_partial_err", perr)
	field("keyspace_hits", s.stats.keyHits.Load())
	field("keyspace_misses", s.stats.keyMisses.Load())
	chans, pats := s.pubsubCounts()
	field("pubsub_channels", chans)
	field("pubsub_patterns", pats)
	field("total_error_replies", s.obs.errTotal.Load())
	s.infoExporterFields("stats", c, field)
	s.infoTrackingStats(field) // tracking.go
}

func (s *Server) infoCPU(c *Client, field func(string, any)) {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	field("used_cpu_sys", fmt.Sprintf("%.6f", float64(ru.Stime.Sec)+float64(ru.Stime.Usec)/1e6))
	field("used_cpu_user", fmt.Sprintf("%.6f", float64(ru.Utime.Sec)+float64(ru.Utime.Usec)/1e6))
	s.infoExporterFields("cpu", c, field)
}

// infoKeyspace writes a line per non-empty database, counting its keys
// shard by shard.
func (s *Server) infoKeyspace(c *Client, b *strings.Builder) {
	for db := 0; db < s.store.DBNum(); db++ {
		var keys, expires int64
		for _, sh := range s.store.Shards() {
			c.lockShard(sh)
			if d := sh.PeekDB(db); d != nil {
				keys += int64(d.Len())
				expires += int64(d.ExpiresLen())
			}
			c.unlockShard(sh)
		}
		if keys > 0 {
			fmt.Fprintf(b, "db%d:keys=%d,expires=%d,avg_ttl=0\r\n", db, keys, expires)
		}
	}
}

// usedMemory is what INFO reports as used_memory: Go heap in use plus the
// slab memory of every shard.
func (s *Server) usedMemory(c *Client) int64 {
	heap, dataset := s.memoryParts(c)
	return heap + dataset
}

// memoryParts is used_memory in two parts: the Go heap and the datasets.
func (s *Server) memoryParts(c *Client) (heap, dataset int64) {
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return int64(ms.HeapAlloc), s.datasetMemory(c)
}

func (s *Server) datasetMemory(c *Client) int64 {
	var n int64
	for _, sh := range s.store.Shards() {
		c.lockShard(sh)
		for db := 0; db < s.store.DBNum(); db++ {
			if d := sh.PeekDB(db); d != nil {
				n += d.MemoryUsed()
			}
		}
		c.unlockShard(sh)
	}
	return n
}

// rss reads the resident set size from /proc.
func rss() int64 {
	b, err := os.ReadFile("/proc/self/statm")
	if err != nil {
		return 0
	}
	f := strings.Fields(string(b))
	if len(f) < 2 {
		return 0
	}
	pages, _ := strconv.ParseInt(f[1], 10, 64)
	return pages * int64(os.Getpagesize())
}

func executable() string {
	p, _ := os.Executable()
	return p
}

func humanBytes(n int64) string {
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%.2fG", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.2fM", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.2fK", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%dB", n)
}

// objectRefcount is OBJECT REFCOUNT: 1, except for the integers 0..9999
// Redis shares (OBJ_SHARED_REFCOUNT, INT_MAX), as it does unless an LRU
// policy with maxmemory needs per-key access times. (Redis also keeps a
// number APPEND or SETRANGE made as an unshared raw string; Damselfly
// keeps no such flag.)
func objectRefcount(s *Server, e *shard.Entry) int64 {
	if e.Type() == shard.TypeString && objectEncoding(e) == "int" {
		p := evictionPolicy(s.evict.policy.Load())
		lru := p == allKeysLRU || p == volatileLRU
		if n, _ := parseInt(e.Str()); n >= 0 && n < 10000 && (s.cfg.maxMemory.Load() == 0 || !lru) {
			return math.MaxInt32
		}
	}
	return 1
}
