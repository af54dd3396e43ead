package server

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/damselflydb/damselfly/aof"
	"github.com/damselflydb/damselfly/internal/wbsync"
	"github.com/damselflydb/damselfly/snapshot"
	"github.com/damselflydb/damselfly/snapshot/rdb"
)

// The append-only file (package aof) as the server uses it: configuration
// (flags, CONFIG SET, INFO persistence), loading at start-up (the AOF is
// preferred over the dump when appendonly is yes), feeding it from the
// journal, the group commit before replies, BGREWRITEAOF, the automatic
// rewrite and -MISCONF while the disk fails.

// AOFConfig is the start-up configuration of the append-only file, with
// Redis's parameter names.
type AOFConfig struct {
	Enabled  bool   // appendonly
	Fsync    string // appendfsync: always, everysec (""), no
	FileName string // appendfilename ("": appendonly.aof)
	DirName  string // appenddirname ("": appendonlydir)
	// The zero value of every field is Redis's default.
	AutoPercent     int   // auto-aof-rewrite-percentage (0: 100; negative: no automatic rewrite)
	AutoMinSize     int64 // auto-aof-rewrite-min-size (0: 64mb)
	NoRDBPreamble   bool  // aof-use-rdb-preamble no
	NoLoadTruncated bool  // aof-load-truncated no
	Timestamps      bool  // aof-timestamp-enabled
}

// aofState is the server's AOF: a is nil while appendonly is no.
// filename and dirname never change after New.
type aofState struct {
	mu         sync.Mutex // serializes CONFIG SET appendonly
	a          atomic.Pointer[aof.AOF]
	on         atomic.Bool // appendonly yes (a may still wait for its first rewrite)
	policy     atomic.Int32
	filename   string
	dirname    string
	autoPct    atomic.Int64
	autoMin    atomic.Int64
	preamble   atomic.Bool
	incFsync   atomic.Bool // aof-rewrite-incremental-fsync: the base written back as it grows (package wbsync)
	loadTrunc  atomic.Bool
	timestamps atomic.Bool
	scheduled  atomic.Bool  // a rewrite is wanted (appendonly yes, or a failed one)
	starting   atomic.Int32 // background rewrites started and not finished
	lastTry    atomic.Int64
	// loaded is set once start-up looked for an AOF; loadedOK when one was
	// loaded (it is then resumed, not rewritten); baseSize its base size.
	loaded   bool
	loadedOK bool
	baseSize int64
	cronOnce sync.Once
}

func (s *Server) initAOF(cfg AOFConfig) {
	st := &s.aof
	p, err := aof.ParsePolicy(cfg.Fsync)
	if err != nil {
		p = aof.FsyncEverysec
	}
	st.policy.Store(int32(p))
	st.filename, st.dirname = cfg.FileName, cfg.DirName
	if st.filename == "" {
		st.filename = "appendonly.aof"
	}
	if st.dirname == "" {
		st.dirname = "appendonlydir"
	}
	pct, minSize := int64(cfg.AutoPercent), cfg.AutoMinSize
	switch {
	case pct == 0:
		pct = 100
	case pct < 0:
		pct = 0 // CONFIG's "no automatic rewrite"
	}
	if minSize == 0 {
		minSize = 64 << 20
	}
	st.autoPct.Store(pct)
	st.autoMin.Store(minSize)
	st.preamble.Store(!cfg.NoRDBPreamble)
	st.incFsync.Store(true)
	st.loadTrunc.Store(!cfg.NoLoadTruncated)
	st.timestamps.Store(cfg.Timestamps)
	st.on.Store(cfg.Enabled)
}

// CheckAOFConfig validates the AOF flags (for main).
func CheckAOFConfig(cfg AOFConfig) error {
	if _, err := aof.ParsePolicy(cfg.Fsync); err != nil {
		return fmt.Errorf("appendfsync %q: %v", cfg.Fsync, err)
	}
	for _, n := range []string{cfg.FileName, cfg.DirName} {
		if strings.ContainsRune(n, '/') {
			return fmt.Errorf("%q: must be a name, not a path", n)
		}
	}
	if cfg.AutoMinSize < 0 {
		return errors.New("auto-aof-rewrite-min-size must not be negative")
	}
	return nil
}

func (s *Server) newAOF() *aof.AOF {
	s.cfg.mu.RLock()
	dir := s.cfg.dir
	s.cfg.mu.RUnlock()
	return aof.New(aof.Config{Dir: dir, DirName: s.aof.dirname, FileName: s.aof.filename,
		Fsync: aof.Policy(s.aof.policy.Load()), Timestamps: s.aof.timestamps.Load(), Log: s.log,
		OnFsync: s.aofFsyncLatency}) // latency.go
}

// journalWrite is the journal: every committed write goes to the AOF (when
// on) and to the replication stream, under the writer's shard locks.
func (s *Server) journalWrite(db int, args [][]byte) int64 {
	s.migrationTap(db, args) // cluster_migrate.go
	if a := s.aof.a.Load(); a != nil {
		a.Feed(db, args)
	}
	return s.repl.Append(db, args)
}

// onExpire journals a key the shard deleted because it expired, as DEL.
func (s *Server) onExpire(db int, key []byte) {
	if s.repl.IsReplica() {
		return // the primary's DEL arrives in the stream
	}
	if a := s.aof.a.Load(); a != nil {
		a.Feed(db, [][]byte{[]byte("DEL"), key})
	}
	s.repl.AppendExpired(db, key)
	s.notifyDB(db, kseExpired, "expired", key)
}

// aofFeedFromPrimary logs a write applied from our primary (a replica with
// appendonly yes keeps its own AOF).
func (s *Server) aofFeedFromPrimary(c *Client) {
	if a := s.aof.a.Load(); a != nil && c.propagate != nil {
		a.Feed(c.db, c.propagate)
	}
}

// noteAOFWrite marks c's replies as waiting for the AOF (group commit).
func (s *Server) noteAOFWrite(c *Client) {
	if s.aof.on.Load() && !c.fromPrimary {
		c.aofWait = true
	}
}

// aofBarrier waits, before replies to writes are sent, for what the
// policy demands (appendfsync always: the writes are fsynced).
func (s *Server) aofBarrier() {
	if a := s.aof.a.Load(); a != nil {
		if w := a.Writer(); w != nil {
			w.Barrier()
		}
	}
}

// aofHold is the event loops' netpoll.Barrier: replies to writes wait
// for the AOF without blocking the loop.
type aofHold Server

func (h *aofHold) Hold() <-chan struct{} {
	if a := (*Server)(h).aof.a.Load(); a != nil {
		if w := a.Writer(); w != nil {
			return w.Hold()
		}
	}
	return nil
}

// Defer implements netpoll.Deferrer: replies to writes wait for the loop's
// barrier (the AOF group commit) once per batch.
func (lc *loopClient) Defer() bool {
	w := lc.aofWait
	lc.aofWait = false
	return w
}

// aofSyncReplies is the goroutine-per-connection form of the barrier.
func (c *Client) aofSyncReplies() {
	if c.aofWait {
		c.aofWait = false
		c.srv.aofBarrier()
	}
}

// aofMisconf returns the -MISCONF error while AOF writes fail ("" if fine).
func (s *Server) aofMisconf() string {
	a := s.aof.a.Load()
	if a == nil {
		return ""
	}
	w := a.Writer()
	if w == nil || !w.Failing() {
		return ""
	}
	return "MISCONF Errors writing to the AOF file: " + strerror(w.Status())
}

// strerror renders an error as C's strerror does for its errno.
func strerror(err error) string {
	if err == nil {
		return "Success"
	}
	var en syscall.Errno
	msg := err.Error()
	if errors.As(err, &en) {
		msg = en.Error()
	}
	if msg != "" {
		msg = strings.ToUpper(msg[:1]) + msg[1:]
	}
	return msg
}

// aofSnapshotter writes the rewrite's base: a forkless RDB at a cut.
func (s *Server) aofSnapshotter(pace int) aof.Snapshotter {
	return func(ctx context.Context, w io.Writer, onCut func()) error {
		if f, ok := w.(*os.File); ok && s.aof.incFsync.Load() {
			w = wbsync.New(f, saveSyncWindow)
		}
		bw := bufio.NewWriterSize(w, 256<<10)
		_, err := snapshot.Write(ctx, s.store, bw, snapshot.Options{OnCut: onCut, MaxExtraMemory: s.persist.format.maxExtra, Gate: s.saveGate(), Compress: s.cfg.rdbCompression.Load(), KeyDelay: s.keySaveDelay,
			Pace: pace, Aux: []rdb.Aux{{Key: "aof-base", Value: "1"}}})
		if err == nil {
			err = bw.Flush()
		}
		return err
	}
}

// loadAOF loads the AOF at start-up when appendonly is yes. ok reports
// that there was one (the dump is then not read, as in Redis).
func (s *Server) loadAOF() (ok bool, err error) {
	st := &s.aof
	st.loaded = true
	s.cfg.mu.RLock()
	dir := s.cfg.dir
	s.cfg.mu.RUnlock()
	lc := &Client{srv: s, id: s.nextClientID.Add(1), p: newParser(), proto: 2, authed: true,
		aofLoading: true, created: time.Now(), addr: "aof", laddr: "aof"}
	lc.view.multi.Store(-1)
	lc.view.fd.Store(-1)
	s.persist.loading.Store(true)
	defer s.persist.loading.Store(false)
	start := time.Now()
	stats, ok, err := aof.Load(dir, st.dirname, st.filename, aof.Loader{
		LoadRDB: func(r io.Reader, name string) (int64, error) {
			ls, err := snapshot.LoadWith(s.store, r, name, snapshot.LoadOptions{Limits: s.limits.Load()})
			s.persist.loadedKeys.Add(ls.Keys)
			s.logLoadWarnings(ls.Warnings)
			return ls.Bytes, err
		},
		Exec: func(args [][]byte) error {
			if s.cmds[lc.lowerName(args[0])] == nil {
				return fmt.Errorf("unknown command '%s' reading the append only file", sanitize(args[0], 128))
			}
			lc.execute(args)
			lc.out = lc.out[:0]
			return nil
		},
		BeginFile: func() { lc.db = 0 },
		Truncated: st.loadTrunc.Load(),
		Log:       s.log,
	})
	if err != nil {
		return true, fmt.Errorf("cannot load the append only file: %w", err)
	}
	if ok {
		st.loadedOK, st.baseSize = true, stats.BaseSize
		s.log.Info("DB loaded from append only file", "files", stats.Files, "commands", stats.Commands,
			"bytes", stats.TotalSize, "truncated", stats.Truncated, "seconds", round3(time.Since(start).Seconds()))
	}
	return ok, nil
}

// startAOF opens the AOF for appending before the server serves: the one
// just loaded, or a new one whose base is the dataset now (loaded from the
// dump, or empty), written before any client connects.
func (s *Server) startAOF() error {
	if !s.aof.on.Load() {
		return nil
	}
	if !s.aof.loaded {
		// Start without LoadDump (tests): never create an AOF over one
		// that was not read.
		ok, err := s.loadAOF()
		if err != nil {
			return err
		}
		if ok {
			s.aof.loadedOK = true
		}
	}
	a := s.newAOF()
	if s.aof.loadedOK {
		ok, err := a.Resume(s.aof.baseSize)
		if err != nil {
			return fmt.Errorf("cannot open the append only file: %w", err)
		}
		if ok {
			s.aof.a.Store(a)
			s.startAOFCron()
			return nil
		}
	}
	s.aof.a.Store(a)
	if err := a.Rewrite(context.Background(), s.aofSnapshotter(0)); err != nil {
		s.aof.a.Store(nil)
		return fmt.Errorf("cannot create the append only file: %w", err)
	}
	s.startAOFCron()
	return nil
}

// startAOFCron starts the goroutine that runs scheduled and automatic
// rewrites (once).
func (s *Server) startAOFCron() {
	s.aof.cronOnce.Do(func() {
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			t := time.NewTicker(100 * time.Millisecond)
			defer t.Stop()
			for {
				select {
				case <-s.done:
					return
				case <-t.C:
				}
				s.aofCron()
			}
		}()
	})
}

func (s *Server) aofCron() {
	a := s.aof.a.Load()
	if a == nil || s.persist.shutting.Load() || a.Rewriting() {
		return
	}
	now := time.Now().UnixNano()
	switch {
	case s.aof.scheduled.Load() || a.Writer() == nil:
		// A wanted rewrite, or appendonly yes whose first rewrite failed:
		// retry every 5 seconds at most after a failure.
		if a.Stats().LastRewriteErr && now-s.aof.lastTry.Load() < int64(bgsaveRetry) {
			return
		}
		s.startRewrite(a, "scheduled")
	case a.NeedsRewrite(int(s.aof.autoPct.Load()), s.aof.autoMin.Load()):
		if a.Stats().LastRewriteErr && now-s.aof.lastTry.Load() < int64(bgsaveRetry) {
			return
		}
		s.startRewrite(a, "automatic (auto-aof-rewrite-percentage)")
	}
}

// startRewrite runs a background rewrite of a.
func (s *Server) startRewrite(a *aof.AOF, reason string) bool {
	if a.Rewriting() || s.aof.starting.Load() > 0 {
		return false
	}
	s.aof.scheduled.Store(false)
	s.aof.lastTry.Store(time.Now().UnixNano())
	s.log.Info("background append only file rewriting started", "reason", reason)
	s.aof.starting.Add(1)
	s.wg.Add(1)
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		select {
		case <-s.done:
			cancel()
		case <-ctx.Done():
		}
	}()
	go func() {
		defer s.wg.Done()
		defer cancel()
		defer s.aof.starting.Add(-1)
		if err := a.Rewrite(ctx, s.aofSnapshotter(backgroundPace)); err != nil {
			if errors.Is(err, aof.ErrRewriteRunning) {
				return
			}
			if s.aof.a.Load() == a && a.Writer() == nil {
				s.aof.scheduled.Store(true)
			}
		}
	}()
	return true
}

// setAppendOnly is CONFIG SET appendonly.
func (s *Server) setAppendOnly(on bool) error {
	st := &s.aof
	st.mu.Lock()
	defer st.mu.Unlock()
	if on == st.on.Load() {
		return nil
	}
	if !on {
		st.on.Store(false)
		if a := st.a.Swap(nil); a != nil {
			// A running rewrite finishes on its own; nothing feeds it.
			if err := a.Close(); err != nil {
				s.log.Warn("AOF: closing", "err", err)
			}
		}
		return nil
	}
	a := s.newAOF()
	st.loaded = true
	st.a.Store(a)
	st.on.Store(true)
	s.startAOFCron()
	if !s.startRewrite(a, "appendonly enabled") {
		s.aof.scheduled.Store(true) // after the running one (aofCron)
	}
	return nil
}

// restartAOF makes the AOF start over from the dataset as it is now (a
// replica's full sync replaced it). Called with every shard locked: from
// here nothing is appended to the old files; a rewrite then writes a new
// base and manifest.
func (s *Server) restartAOF() {
	if !s.aof.on.Load() {
		return
	}
	old := s.aof.a.Load()
	if old == nil {
		return
	}
	a := s.newAOF()
	s.aof.a.Store(a)
	// Wanted from this instant (INFO shows aof_rewrite_scheduled:1), not
	// only once the old files are closed: whoever waits for the rewrite
	// must not see an idle AOF in between.
	s.aof.scheduled.Store(true)
	go func() {
		_ = old.Close()
		if s.aof.scheduled.Load() && !s.startRewrite(a, "replica full sync") {
			s.aof.scheduled.Store(true) // after the running one (aofCron)
		}
	}()
}

// closeAOF writes and fsyncs what was fed and closes the files.
func (s *Server) closeAOF() {
	if a := s.aof.a.Swap(nil); a != nil {
		if err := a.Close(); err != nil {
			s.log.Error("AOF: closing", "err", err)
		}
	}
}

func registerAOF(reg registrar) {
	reg("bgrewriteaof", 1, "admin|noscript|no_async_loading", 0, 0, 0, "server", cmdBgrewriteaof)
	reg("waitaof", 4, "noscript|blocking|x-detach|x-no-data", 0, 0, 0, "generic", cmdWaitaof)
}

// cmdWaitaof is WAITAOF numlocal numreplicas timeout (Redis 7.2): wait
// until this connection's writes are fsynced in the local AOF. Replicas
// that confirm their own fsync (Redis 7.2's REPLCONF ACK ... FACK) are not
// tracked yet, so a request for replicas waits for the timeout and counts
// none: the reply never claims more than is known.
func cmdWaitaof(c *Client, args [][]byte) {
	numlocal, ok := parseInt(args[1])
	if !ok {
		c.errNotInteger()
		return
	}
	if numlocal < 0 || numlocal > 1 {
		c.err("ERR value is out of range, value must between 0 and 1")
		return
	}
	numrep, ok := parseInt(args[2])
	if !ok {
		c.errNotInteger()
		return
	}
	if numrep < 0 {
		c.err("ERR value is out of range, must be positive")
		return
	}
	ms, ok := parseInt(args[3])
	if !ok {
		c.err("ERR timeout is not an integer or out of range")
		return
	}
	if ms < 0 {
		c.err("ERR timeout is negative")
		return
	}
	s := c.srv
	if s.repl.IsReplica() {
		c.err("ERR WAITAOF cannot be used with replica instances. Please also note that writes to replicas are just local and are not propagated.")
		return
	}
	if numlocal > 0 && !s.aof.on.Load() {
		c.err("ERR WAITAOF cannot be used when numlocal is set but appendonly is disabled.")
		return
	}
	var w *aof.Writer
	if a := s.aof.a.Load(); a != nil {
		w = a.Writer()
	}
	timeout := time.Duration(ms) * time.Millisecond
	if ms == 0 || c.inTransaction() {
		timeout = 0
	}
	deadline := time.Now().Add(timeout)
	local := int64(0)
	if w != nil {
		// Everything fed so far includes this connection's writes.
		target := w.Fed()
		wait := time.Nanosecond // just look
		if numlocal > 0 && !c.inTransaction() {
			wait = timeout // 0: no limit
		}
		if w.WaitSynced(target, wait) {
			local = 1
		}
	}
	if numrep > 0 && !c.inTransaction() {
		var limit <-chan time.Time
		if ms > 0 {
			t := time.NewTimer(time.Until(deadline))
			defer t.Stop()
			limit = t.C
		}
		select {
		case <-limit:
		case <-s.done:
		}
	}
	c.array(2)
	c.int(local)
	c.int(0)
}

func cmdBgrewriteaof(c *Client, args [][]byte) {
	s := c.srv
	a := s.aof.a.Load()
	if a == nil {
		// appendonly no: write an AOF of the dataset now anyway (Redis
		// does too), without keeping it open afterwards.
		a = s.newAOF()
		if a.Rewriting() {
			c.err("ERR " + aof.ErrRewriteRunning.Error())
			return
		}
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			if err := a.Rewrite(context.Background(), s.aofSnapshotter(backgroundPace)); err == nil {
				_ = a.Close()
			}
		}()
		c.simple("Background append only file rewriting started")
		return
	}
	if !s.startRewrite(a, "BGREWRITEAOF") {
		c.err("ERR " + aof.ErrRewriteRunning.Error())
		return
	}
	c.simple("Background append only file rewriting started")
}

// aofParams are the AOF's CONFIG parameters.
func aofParams(m map[string]configParam) {
	m["appendonly"] = configParam{
		get: func(s *Server) string { return yesNo(s.aof.on.Load()) },
		set: func(s *Server, v string) error {
			b, err := parseYesNo(v)
			if err != nil {
				return err
			}
			return s.setAppendOnly(b)
		},
	}
	m["appendfsync"] = configParam{
		get: func(s *Server) string { return aof.Policy(s.aof.policy.Load()).String() },
		set: func(s *Server, v string) error {
			p, err := aof.ParsePolicy(strings.ToLower(v))
			if err != nil {
				return err
			}
			s.aof.policy.Store(int32(p))
			if a := s.aof.a.Load(); a != nil {
				if w := a.Writer(); w != nil {
					w.SetPolicy(p)
				}
			}
			return nil
		},
	}
	// File names are fixed at start-up (as in Redis, where they are
	// immutable).
	name := func(field func(s *Server) *string) configParam {
		return configParam{get: func(s *Server) string { return *field(s) },
			set: immutable}
	}
	m["appendfilename"] = name(func(s *Server) *string { return &s.aof.filename })
	m["appenddirname"] = name(func(s *Server) *string { return &s.aof.dirname })
	m["auto-aof-rewrite-percentage"] = configParam{
		get: func(s *Server) string { return strconv.FormatInt(s.aof.autoPct.Load(), 10) },
		set: func(s *Server, v string) error {
			n, err := strconv.ParseInt(v, 10, 32)
			if err != nil || n < 0 {
				return errors.New("argument must be between 0 and 2147483647 inclusive")
			}
			s.aof.autoPct.Store(n)
			return nil
		},
	}
	m["auto-aof-rewrite-min-size"] = configParam{
		get: func(s *Server) string { return strconv.FormatInt(s.aof.autoMin.Load(), 10) },
		set: func(s *Server, v string) error {
			n, err := ParseMemory(v)
			if err != nil {
				return err
			}
			s.aof.autoMin.Store(n)
			return nil
		},
	}
	m["aof-use-rdb-preamble"] = boolParam(func(s *Server) *atomic.Bool { return &s.aof.preamble }, nil)
	m["aof-rewrite-incremental-fsync"] = boolParam(func(s *Server) *atomic.Bool { return &s.aof.incFsync }, nil)
	m["aof-load-truncated"] = boolParam(func(s *Server) *atomic.Bool { return &s.aof.loadTrunc }, nil)
	m["aof-timestamp-enabled"] = boolParam(func(s *Server) *atomic.Bool { return &s.aof.timestamps }, func(s *Server, v bool) {
		if a := s.aof.a.Load(); a != nil {
			if w := a.Writer(); w != nil {
				w.SetTimestamps(v)
			}
		}
	})
}

// infoAOF writes INFO persistence's aof_* fields up to aof_last_cow_size.
func (s *Server) infoAOF(field func(string, any)) {
	a := s.aof.a.Load()
	var st aof.Stats
	if a != nil {
		st = a.Stats()
	} else {
		st.RewriteSeconds, st.LastRewriteSeconds = -1, -1
	}
	field("aof_enabled", b2i(s.aof.on.Load()))
	field("aof_rewrite_in_progress", b2i(st.Rewriting || s.aof.starting.Load() > 0))
	field("aof_rewrite_scheduled", b2i(s.aof.scheduled.Load()))
	field("aof_last_rewrite_time_sec", st.LastRewriteSeconds)
	field("aof_current_rewrite_time_sec", st.RewriteSeconds)
	field("aof_last_bgrewrite_status", okErr(!st.LastRewriteErr))
	field("aof_rewrites", st.Rewrites)
	field("aof_rewrites_consecutive_failures", st.ConsecutiveFailures)
	field("aof_last_write_status", okErr(!st.WriteErr))
	field("aof_last_cow_size", 0)
}

// infoAOFOn writes the fields Redis adds when appendonly is yes.
func (s *Server) infoAOFOn(field func(string, any)) {
	a := s.aof.a.Load()
	if !s.aof.on.Load() || a == nil {
		return
	}
	st := a.Stats()
	field("aof_current_size", st.CurrentSize)
	field("aof_base_size", st.BaseSize)
	field("aof_pending_rewrite", b2i(s.aof.scheduled.Load()))
	field("aof_buffer_length", st.Buffered)
	field("aof_pending_bio_fsync", b2i(st.PendingFsync))
	field("aof_delayed_fsync", st.DelayedFsync)
}

func okErr(ok bool) string {
	if ok {
		return "ok"
	}
	return "err"
}

// aofDirPath is the AOF directory (for tests and logs).
func (s *Server) aofDirPath() string {
	s.cfg.mu.RLock()
	dir := s.cfg.dir
	s.cfg.mu.RUnlock()
	return filepath.Join(dir, s.aof.dirname)
}
