package server

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/damselflydb/damselfly/internal/wbsync"
	"github.com/damselflydb/damselfly/snapshot"
)

// Persistence: SAVE, BGSAVE, LASTSAVE, the --save schedule, the dump at
// start-up, the save on shutdown and stop-writes-on-bgsave-error.
//
// Every save is a forkless snapshot (package snapshot) written to a
// temporary file in --dir, fsynced, renamed over the dump and followed by an
// fsync of the directory, so a crash at any moment leaves either the old or
// the new dump, never a partial one. Writes continue during every kind of
// save, SAVE included (it only makes its own client wait). At most one save
// runs at a time.
//
// Shutdown (SHUTDOWN, SIGTERM/SIGINT) first disconnects every other client
// and refuses new commands, then cuts the snapshot: a write whose reply was
// sent happened before its connection was closed, hence before the cut, so
// no acknowledged write is lost.

const misconfErr = "MISCONF Redis is configured to save RDB snapshots, but it's currently unable to persist to disk. " +
	"Commands that may modify the data set are disabled, because this instance is configured to report errors during writes " +
	"if RDB snapshotting fails (stop-writes-on-bgsave-error option). Please check the Redis logs for details about the RDB error."

// saveSyncWindow is how often (in bytes) a dump, a native shard file or
// an AOF base being written has its writeback started, with
// rdb-save-incremental-fsync / aof-rewrite-incremental-fsync yes
// (package wbsync).
const saveSyncWindow = wbsync.DefaultWindow

// bgsaveRetry is how long the schedule waits after a failed save before it
// tries again (Redis's CONFIG_BGSAVE_RETRY_DELAY).
const bgsaveRetry = 5 * time.Second

type persistence struct {
	mu        sync.Mutex
	running   bool // a save is in progress (any kind)
	bg        bool // ... and it is a background one
	scheduled bool // BGSAVE SCHEDULE waiting for the running save
	start     time.Time
	progress  *snapshot.Progress
	cancel    context.CancelFunc // cancels the running background save
	finished  chan struct{}      // closed when the running save ends
	lastTry   time.Time          // start of the last save attempt
	seq       int64              // temp file names

	lastSave       atomic.Int64 // unix time of the last successful save
	lastErr        atomic.Bool  // the last save failed (rdb_last_bgsave_status:err)
	lastBgTimeSec  atomic.Int64
	dirtyAtSave    atomic.Int64 // s.dirty at the cut of the last successful save
	saves          atomic.Int64
	lastStats      atomic.Pointer[snapshot.Stats] // of the last successful save (its log line; tests)
	loading        atomic.Bool
	loadStart      atomic.Int64 // unix time the running load started
	loadTotal      atomic.Int64 // size of the file being loaded
	loadRead       atomic.Int64 // bytes of it read so far
	loadedKeys     atomic.Int64
	stopWritesOnEr atomic.Bool // stop-writes-on-bgsave-error
	shutting       atomic.Bool // a shutdown is disconnecting clients and saving
	shutdownBy     atomic.Pointer[Client]
	format         dbFormat // --dbformat and its compression
}

func (p *persistence) init(now time.Time) {
	p.lastSave.Store(now.Unix())
	p.lastBgTimeSec.Store(-1)
	p.stopWritesOnEr.Store(true)
}

func registerPersistence(reg registrar) {
	reg("save", 1, "admin|noscript|no_async_loading|no_multi|x-detach", 0, 0, 0, "server", cmdSave)
	reg("bgsave", -1, "admin|noscript|no_async_loading|x-detach", 0, 0, 0, "server", cmdBgsave)
	reg("lastsave", 1, "fast|x-no-data", 0, 0, 0, "server", func(c *Client, a [][]byte) { c.int(c.srv.persist.lastSave.Load()) })
}

// lastSave is the unix time of the last successful save (start time until then).
func (s *Server) lastSave() int64 { return s.persist.lastSave.Load() }

func (s *Server) dumpPath() (dir, path string) {
	s.cfg.mu.RLock()
	defer s.cfg.mu.RUnlock()
	return s.cfg.dir, filepath.Join(s.cfg.dir, s.cfg.dbfilename)
}

func (s *Server) saveSchedule() []SavePoint {
	s.cfg.mu.RLock()
	v := s.cfg.save
	s.cfg.mu.RUnlock()
	sp, _ := ParseSaveSchedule(v)
	return sp
}

// writesDenied reports whether a write must get -MISCONF: the last save
// failed, stop-writes-on-bgsave-error is on and saving is configured.
func (s *Server) writesDenied() bool {
	return s.persist.lastErr.Load() && s.persist.stopWritesOnEr.Load() && len(s.saveSchedule()) > 0
}

var errSaveInProgress = errors.New("ERR Background save already in progress")

// beginSave reserves the single save slot.
func (s *Server) beginSave(bg bool) (*snapshot.Progress, context.Context, error) {
	p := &s.persist
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.running {
		return nil, nil, errSaveInProgress
	}
	ctx, cancel := context.WithCancel(context.Background())
	p.running, p.bg, p.start, p.lastTry = true, bg, time.Now(), time.Now()
	p.progress = new(snapshot.Progress)
	p.cancel = cancel
	p.finished = make(chan struct{})
	p.seq++
	return p.progress, ctx, nil
}

func (s *Server) endSave() {
	p := &s.persist
	p.mu.Lock()
	if p.bg {
		p.lastBgTimeSec.Store(int64(time.Since(p.start).Round(time.Second) / time.Second))
	}
	p.cancel()
	close(p.finished)
	p.running, p.bg, p.progress, p.cancel = false, false, nil, nil
	p.mu.Unlock()
}

// saveRDB writes the dump: temp file, fsync, rename, fsync of the directory.
func (s *Server) saveRDB(ctx context.Context, reason string, prog *snapshot.Progress, pace int, cut *cutInCommand) error {
	dir, path := s.dumpPath()
	s.persist.mu.Lock()
	tmp := filepath.Join(dir, fmt.Sprintf("temp-%d-%d.rdb", os.Getpid(), s.persist.seq))
	s.persist.mu.Unlock()
	s.log.Info("saving the dataset", "reason", reason, "file", path)
	var dirtyAtCut int64
	stats, err := func() (snapshot.Stats, error) {
		if s.persist.format.native {
			return s.saveNative(ctx, path, prog, pace, func() { dirtyAtCut = s.dirty.Load() }, cut)
		}
		f, err := os.OpenFile(tmp, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o644)
		if err != nil {
			return snapshot.Stats{}, err
		}
		var w io.Writer = f
		if s.cfg.rdbIncFsync.Load() {
			w = wbsync.New(f, saveSyncWindow) // the disk writes while the rest is produced
		}
		st, err := snapshot.Write(ctx, s.store, w, snapshot.Options{
			MaxExtraMemory: s.persist.format.maxExtra,
			Gate:           s.saveGate(), // writergate.go
			OnCut:          func() { dirtyAtCut = s.dirty.Load() },
			Progress:       prog,
			Compress:       s.cfg.rdbCompression.Load(),
			Pace:           pace,
			Busy:           s.snapshotBusy(),
			Wanted:         s.snapshotWanted(),
			KeyDelay:       s.keySaveDelay,
			RunCut:         cut.runner(),
			SlotHeld:       cut != nil,
			NoReserve:      cut.locked(),
			// FUNCTION libraries, as Redis stores them (function.go).
			Functions: s.functionCodes,
		})
		if err == nil {
			err = f.Sync()
		}
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err == nil {
			err = os.Rename(tmp, path)
		}
		if err == nil {
			err = syncDir(dir)
		}
		return st, err
	}()
	if err != nil {
		_ = os.Remove(tmp)
		s.persist.lastErr.Store(true)
		s.log.Error("save failed; the previous dump is unchanged", "reason", reason, "file", path, "err", err)
		return err
	}
	s.persist.dirtyAtSave.Store(dirtyAtCut)
	s.persist.lastSave.Store(time.Now().Unix())
	s.persist.lastErr.Store(false)
	s.persist.saves.Add(1)
	s.persist.lastStats.Store(&stats)
	s.log.Info("DB saved on disk", "reason", reason, "file", path, "keys", stats.Keys, "bytes", stats.Bytes,
		"seconds", round3(stats.Duration.Seconds()), "MB/s", mbps(stats.Bytes, stats.Duration),
		"in_flight_peak_MiB", round3(float64(stats.InFlightPeak)/(1<<20)),
		"spares_kept", stats.SparesKept, "spares_reused", stats.SparesReused,
		"reserve", stats.Reserve, "reserve_ms", round3(float64(stats.ReserveTime)/1e6), "writer_waits", saveWaits(stats))
	return nil
}

func round3(f float64) float64 { return float64(int64(f*1000+0.5)) / 1000 }

func mbps(n int64, d time.Duration) float64 {
	if d <= 0 {
		return 0
	}
	return round3(float64(n) / 1e6 / d.Seconds())
}

// syncDir makes a rename in dir durable.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

// Save saves synchronously (SAVE, DEBUG RELOAD, shutdown).
func (s *Server) Save(reason string) error {
	prog, ctx, err := s.beginSave(false)
	if err != nil {
		return err
	}
	defer s.endSave()
	return s.saveRDB(ctx, reason, prog, 0, nil)
}

// backgroundPace limits a background save (and a full sync) to about a
// fifth of a core while clients wait for it, and nothing while none do;
// see snapshot.Options.Pace.
const backgroundPace = 4

// startBgsave starts a background save.
func (s *Server) startBgsave(reason string) error {
	prog, ctx, err := s.beginSave(true)
	if err != nil {
		return err
	}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		defer s.endSave()
		_ = s.saveRDB(ctx, reason, prog, backgroundPace, nil)
	}()
	return nil
}

// stopBgsave cancels a running save and waits for it to end.
func (s *Server) stopBgsave() {
	p := &s.persist
	p.mu.Lock()
	p.scheduled = false
	if !p.running {
		p.mu.Unlock()
		return
	}
	p.cancel()
	done := p.finished
	p.mu.Unlock()
	<-done
}

func cmdSave(c *Client, args [][]byte) {
	if err := c.srv.Save("SAVE command"); err != nil {
		if err == errSaveInProgress {
			c.err(err.Error())
			return
		}
		c.err("ERR")
		return
	}
	c.ok()
}

func cmdBgsave(c *Client, args [][]byte) {
	schedule := false
	if len(args) > 1 {
		if len(args) == 2 && eq(args[1], "schedule") {
			schedule = true
		} else {
			c.errSyntax()
			return
		}
	}
	if err := c.startBgsaveHere("BGSAVE command"); err != nil {
		if schedule {
			c.srv.persist.mu.Lock()
			c.srv.persist.scheduled = true
			c.srv.persist.mu.Unlock()
			c.simple("Background saving scheduled")
			return
		}
		c.err(err.Error())
		return
	}
	c.simple("Background saving started")
}

// saveCron starts the background saves the schedule and BGSAVE SCHEDULE
// ask for (called by cron every 100 ms).
func (s *Server) saveCron() {
	p := &s.persist
	if p.shutting.Load() || p.loading.Load() {
		return
	}
	p.mu.Lock()
	running, scheduled, lastTry := p.running, p.scheduled, p.lastTry
	p.mu.Unlock()
	if running {
		return
	}
	if scheduled {
		p.mu.Lock()
		p.scheduled = false
		p.mu.Unlock()
		_ = s.startBgsave("BGSAVE SCHEDULE")
		return
	}
	changes := s.dirty.Load() - p.dirtyAtSave.Load()
	now := time.Now()
	for _, sp := range s.saveSchedule() {
		// Like Redis: after a failure, retry only after bgsaveRetry.
		if changes >= sp.Changes && now.Unix()-p.lastSave.Load() > sp.Seconds &&
			(!p.lastErr.Load() || now.Sub(lastTry) > bgsaveRetry) {
			reason := fmt.Sprintf("%d changes in %d seconds", sp.Changes, sp.Seconds)
			if err := s.startBgsave(reason); err == nil {
				return
			}
		}
	}
}

// LoadDump loads the dump file at start-up. No file: start empty. A file
// that exists but cannot be read fully is an error: the caller must not
// start (it would later save an empty or partial dataset over it).
func (s *Server) LoadDump() error {
	if s.aof.on.Load() {
		// appendonly yes: the AOF, when there is one, wins (Redis's rule).
		if s.aof.a.Load() != nil {
			return nil // Start already loaded or created the AOF
		}
		if ok, err := s.loadAOF(); err != nil || ok {
			return err
		}
	}
	_, path := s.dumpPath()
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		s.log.Info("no dump file: starting with an empty dataset", "file", path)
		return nil
	}
	if err != nil {
		return fmt.Errorf("cannot open the dump file: %w", err)
	}
	defer f.Close()
	return s.loadFrom(f, path)
}

func (s *Server) loadFrom(f *os.File, path string) error {
	s.beginLoading(f)
	defer s.persist.loading.Store(false)
	s.log.Info("loading the dump", "file", path)
	stats, err := s.loadDumpFile(f, path)
	if err != nil {
		return err
	}
	if err := s.loadFunctions(stats.Functions); err != nil {
		return fmt.Errorf("%s: loading the FUNCTION libraries: %w", path, err)
	}
	s.persist.loadedKeys.Store(stats.Keys)
	s.logLoadWarnings(stats.Warnings)
	s.log.Info("DB loaded from disk", "file", path, "keys", stats.Keys, "bytes", stats.Bytes,
		"seconds", round3(stats.Duration.Seconds()), "MB/s", mbps(stats.Bytes, stats.Duration),
		"in_flight_peak_MiB", round3(float64(stats.InFlightPeak)/(1<<20)))
	return nil
}

// debugReload is DEBUG RELOAD [NOSAVE]: save, empty the dataset, load the
// dump again.
func debugReload(c *Client, args [][]byte) {
	save := true
	for _, a := range args[2:] {
		switch {
		case eq(a, "nosave"):
			save = false
		case eq(a, "noflush"), eq(a, "merge"):
			c.err("ERR DEBUG RELOAD " + string(a) + " is not supported by Damselfly")
			return
		default:
			c.err("ERR DEBUG RELOAD only supports the MERGE, NOFLUSH and NOSAVE options.")
			return
		}
	}
	s := c.srv
	if save {
		if err := s.Save("DEBUG RELOAD"); err != nil {
			c.err("ERR Error trying to save the DB, can't reload")
			return
		}
	}
	_, path := s.dumpPath()
	f, err := os.Open(path)
	if err != nil {
		c.err("ERR Error trying to load the RDB dump, check server logs.")
		s.log.Error("DEBUG RELOAD", "err", err)
		return
	}
	defer f.Close()
	set := c.lockAll()
	s.flush(-1, true)
	c.trackFlushed() // tracking.go
	c.unlock(set)
	if err := s.loadFrom(f, path); err != nil {
		s.log.Error("DEBUG RELOAD: the dump cannot be loaded; the dataset is now empty", "err", err)
		c.err("ERR Error trying to load the RDB dump, check server logs.")
		return
	}
	c.ok()
}

// shutdownMode is what SHUTDOWN's options ask for.
type shutdownMode int

const (
	shutdownDefault shutdownMode = iota // save when a schedule is configured
	shutdownNoSave
	shutdownSave
)

// Shutdown stops the server like SIGTERM does in Redis: disconnect the
// clients, save when a save schedule is configured, and ask Run to return.
// If the save fails the server keeps running and the error is returned.
func (s *Server) Shutdown() error { return s.shutdown(nil, shutdownDefault, false) }

func (s *Server) shutdown(by *Client, mode shutdownMode, force bool) error {
	p := &s.persist
	if !p.shutting.CompareAndSwap(false, true) {
		return errors.New("a shutdown is already in progress")
	}
	p.shutdownBy.Store(by)
	// From here no other client runs a new command; close them so that
	// replies to commands still running are never delivered.
	s.clientsMu.Lock()
	for _, c := range s.clients {
		if c != by {
			c.closed.Store(true)
			c.closeConn()
		}
	}
	s.clientsMu.Unlock()
	s.stopBgsave()
	save := mode == shutdownSave || (mode == shutdownDefault && len(s.saveSchedule()) > 0)
	if p.loading.Load() {
		save = false // never a partial dataset over the dump being loaded (Redis too)
	}
	if save {
		if err := s.Save("shutdown"); err != nil && !force {
			s.log.Error("errors trying to shut down the server; still running", "err", err)
			p.shutdownBy.Store(nil)
			p.shutting.Store(false)
			return err
		}
	}
	s.requestShutdown()
	return nil
}

// shutdownRefused reports whether c may not run commands because the
// server is shutting down (only the client that asked for it may).
func (s *Server) shutdownRefused(c *Client) bool {
	return s.persist.shutting.Load() && s.persist.shutdownBy.Load() != c
}

func cmdShutdown(c *Client, args [][]byte) {
	mode, force := shutdownDefault, false
	for _, a := range args[1:] {
		switch {
		case eq(a, "nosave"):
			mode = shutdownNoSave
		case eq(a, "save"):
			mode = shutdownSave
		case eq(a, "now"):
		case eq(a, "force"):
			force = true
		case eq(a, "abort"):
			if len(args) != 2 {
				c.errSyntax()
				return
			}
			c.err("ERR No shutdown in progress.")
			return
		default:
			c.errSyntax()
			return
		}
	}
	c.srv.log.Info("shutdown requested by client", "client", c.id)
	if err := c.srv.shutdown(c, mode, force); err != nil {
		c.err("ERR Errors trying to SHUTDOWN. Check logs.")
		return
	}
	c.quit = true // Redis closes the connection without a reply on success
}

// infoPersistence writes INFO's Persistence section.
func (s *Server) infoPersistence(field func(string, any)) {
	p := &s.persist
	p.mu.Lock()
	running, bg, start, prog := p.running, p.bg, p.start, p.progress
	p.mu.Unlock()
	field("loading", b2i(p.loading.Load()))
	field("async_loading", 0)
	field("current_cow_peak", 0)
	field("current_cow_size", 0)
	field("current_cow_size_age", 0)
	field("current_fork_perc", "0.00")
	var done, total, bytes int64
	if running && prog != nil {
		done, total, bytes = prog.Keys.Load(), prog.KeysTotal.Load(), prog.Bytes.Load()
	}
	field("current_save_keys_processed", done)
	field("current_save_keys_total", total)
	field("current_save_bytes_written", bytes)
	field("rdb_changes_since_last_save", s.dirty.Load()-p.dirtyAtSave.Load())
	field("rdb_bgsave_in_progress", b2i(running && bg))
	field("rdb_save_in_progress", b2i(running))
	field("rdb_last_save_time", p.lastSave.Load())
	status := "ok"
	if p.lastErr.Load() {
		status = "err"
	}
	field("rdb_last_bgsave_status", status)
	field("rdb_last_bgsave_time_sec", p.lastBgTimeSec.Load())
	cur := int64(-1)
	if running && bg {
		cur = int64(time.Since(start) / time.Second)
	}
	field("rdb_current_bgsave_time_sec", cur)
	field("rdb_saves", p.saves.Load())
	field("rdb_last_cow_size", 0)
	field("rdb_last_load_keys_expired", 0)
	field("rdb_last_load_keys_loaded", p.loadedKeys.Load())
	s.infoAOF(field)
	field("module_fork_in_progress", 0)
	field("module_fork_last_cow_size", 0)
	s.infoAOFOn(field)
	s.infoLoading(field)
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}
