package aof

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"
)

// Config locates the AOF and sets its policy.
type Config struct {
	Dir      string // the server's dir
	DirName  string // appenddirname (default "appendonlydir")
	FileName string // appendfilename (default "appendonly.aof")
	Fsync    Policy
	// Timestamps writes "#TS:<unix>" annotations (aof-timestamp-enabled).
	Timestamps bool
	Log        *slog.Logger
	// OnFsync, when set, is told how long each fsync took and under which
	// policy (the server's latency monitor).
	OnFsync func(d time.Duration, p Policy)
}

// Snapshotter writes a point-in-time RDB of the dataset to w, calling
// onCut once at the snapshot instant while every shard is locked.
type Snapshotter func(ctx context.Context, w io.Writer, onCut func()) error

// AOF is an append-only directory in use: its manifest, the writer
// appending to its last incr file, and rewrites.
type AOF struct {
	cfg  Config
	dir  string // Dir/DirName
	log  *slog.Logger
	w    atomic.Pointer[Writer]
	mu   sync.Mutex // manifest and rewrite state
	man  *Manifest
	busy bool // a rewrite runs
	// closed: Close was called; a rewrite still running starts no writer
	// and switches no manifest.
	closed atomic.Bool

	baseSize       atomic.Int64 // base file size at the last rewrite or load
	rewriteBase    atomic.Int64 // aof_rewrite_base_size: total size after the last rewrite
	rewrites       atomic.Int64
	lastRewriteErr atomic.Bool
	consecFailures atomic.Int64
	lastRewriteSec atomic.Int64
	rewriteStart   atomic.Int64 // unix nanos; 0 when none runs
}

// New prepares the AOF of cfg (nothing is opened yet).
func New(cfg Config) *AOF {
	if cfg.DirName == "" {
		cfg.DirName = "appendonlydir"
	}
	if cfg.FileName == "" {
		cfg.FileName = "appendonly.aof"
	}
	if cfg.Log == nil {
		cfg.Log = slog.Default()
	}
	a := &AOF{cfg: cfg, dir: filepath.Join(cfg.Dir, cfg.DirName), log: cfg.Log}
	a.lastRewriteSec.Store(-1)
	return a
}

// Dir is the AOF directory.
func (a *AOF) Dir() string { return a.dir }

// Writer is the running writer (nil before the first cut).
func (a *AOF) Writer() *Writer { return a.w.Load() }

// Manifest returns a copy of the manifest in use (nil before Start).
func (a *AOF) Manifest() *Manifest {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.man == nil {
		return nil
	}
	return a.man.Clone()
}

// Feed appends a committed write (see Writer.Feed); a no-op until the
// writer runs.
func (a *AOF) Feed(db int, args [][]byte) {
	if w := a.w.Load(); w != nil {
		w.Feed(db, args)
	}
}

// Resume starts appending to an AOF that was just loaded: to its last
// incr file, or to a new one when it has none. It reports false when the
// directory holds no AOF (the caller then creates one with Rewrite).
func (a *AOF) Resume(baseSize int64) (bool, error) {
	m, err := ReadManifest(a.dir, a.cfg.FileName)
	if err != nil {
		return false, err
	}
	if m == nil || m.Empty() {
		return false, nil
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	var fi FileInfo
	var f *os.File
	if len(m.Incrs) > 0 {
		fi = m.Incrs[len(m.Incrs)-1]
		f, err = os.OpenFile(filepath.Join(a.dir, fi.Name), os.O_WRONLY|os.O_APPEND, 0o644)
		if err != nil {
			return false, err
		}
	} else {
		nm := m.Clone()
		fi = nm.NextIncr(a.cfg.FileName)
		if f, err = a.createIncr(fi.Name); err != nil {
			return false, err
		}
		if err := WriteManifest(a.dir, a.cfg.FileName, nm); err != nil {
			f.Close()
			os.Remove(filepath.Join(a.dir, fi.Name))
			return false, err
		}
		m = nm
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return false, err
	}
	a.man = m
	a.baseSize.Store(baseSize)
	a.rewriteBase.Store(a.sizeLocked())
	w := NewWriter(f, fi.Name, st.Size(), a.cfg.Fsync, a.log)
	w.OnFsync = a.cfg.OnFsync
	w.SetTimestamps(a.cfg.Timestamps)
	a.w.Store(w)
	a.deleteHistoryLocked()
	return true, nil
}

// createIncr creates (empty) a new incr file and makes its creation
// durable before any manifest names it.
func (a *AOF) createIncr(name string) (*os.File, error) {
	f, err := os.OpenFile(filepath.Join(a.dir, name), os.O_CREATE|os.O_WRONLY|os.O_TRUNC|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	if err := SyncDir(a.dir); err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// ErrRewriteRunning is returned by Rewrite while one runs.
var ErrRewriteRunning = errors.New("background append only file rewriting already in progress")

// Rewriting reports whether a rewrite runs.
func (a *AOF) Rewriting() bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.busy
}

// Rewrite replaces the AOF by a base holding the dataset as of a snapshot
// cut, plus a new incr file receiving every write after the cut; it also
// creates the AOF when there is none yet (CONFIG SET appendonly yes, or a
// start without one): then the writer starts at the cut. It returns when
// the new manifest is durable or the rewrite failed (the AOF in use stays
// valid either way).
func (a *AOF) Rewrite(ctx context.Context, snap Snapshotter) error {
	a.mu.Lock()
	if a.busy {
		a.mu.Unlock()
		return ErrRewriteRunning
	}
	a.busy = true
	a.rewriteStart.Store(time.Now().UnixNano())
	a.mu.Unlock()
	start := time.Now()
	err := a.rewrite(ctx, snap)
	a.mu.Lock()
	a.busy = false
	a.rewriteStart.Store(0)
	a.mu.Unlock()
	a.lastRewriteSec.Store(int64(time.Since(start) / time.Second))
	if err != nil {
		a.lastRewriteErr.Store(true)
		a.consecFailures.Add(1)
		a.log.Error("AOF rewrite failed", "err", err)
		return err
	}
	a.lastRewriteErr.Store(false)
	a.consecFailures.Store(0)
	a.rewrites.Add(1)
	a.log.Info("AOF rewrite done", "seconds", fmt.Sprintf("%.3f", time.Since(start).Seconds()),
		"base_size", a.baseSize.Load())
	return nil
}

func (a *AOF) rewrite(ctx context.Context, snap Snapshotter) error {
	r, err := a.startRewrite()
	if err != nil {
		return err
	}
	baseSize, err := r.writeBase(ctx, snap)
	if err != nil {
		return r.abort(err)
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	return r.install(baseSize)
}

// rewriteRun is one rewrite in progress: the manifest that names the new
// incr file, that file, and the temporary base being written.
type rewriteRun struct {
	a       *AOF
	next    *Manifest // the manifest with the new incr file
	inc     FileInfo  // the new incr file
	f       *os.File  // its handle, the writer's from the cut on
	tmp     string    // the temporary base file
	fresh   bool      // no AOF was being written: nothing names inc yet
	cutDone bool
}

// startRewrite creates the new incr file and, when an AOF is being
// written, lists it in the manifest.
func (a *AOF) startRewrite() (*rewriteRun, error) {
	if err := os.MkdirAll(a.dir, 0o755); err != nil {
		return nil, err
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	cur := a.man
	if cur == nil {
		m, err := ReadManifest(a.dir, a.cfg.FileName)
		if err != nil {
			return nil, err
		}
		if m == nil {
			m = &Manifest{}
		}
		cur = m
	}
	// The new incr file exists before anything names it. A running writer
	// means the manifest lists it now (empty until the cut, so harmless);
	// for a new AOF nothing is listed until the base is complete.
	r := &rewriteRun{a: a, next: cur.Clone()}
	r.inc = r.next.NextIncr(a.cfg.FileName)
	f, err := a.createIncr(r.inc.Name)
	if err != nil {
		return nil, err
	}
	r.f = f
	r.fresh = a.w.Load() == nil
	if !r.fresh {
		if err := WriteManifest(a.dir, a.cfg.FileName, r.next); err != nil {
			f.Close()
			os.Remove(filepath.Join(a.dir, r.inc.Name))
			return nil, err
		}
		a.man = r.next
	}
	r.tmp = filepath.Join(a.dir, fmt.Sprintf("temp-rewriteaof-bg-%d.aof", os.Getpid()))
	return r, nil
}

// onCut runs at the snapshot's cut: from here on commands are appended to
// the new incr file.
func (r *rewriteRun) onCut() {
	a := r.a
	if a.closed.Load() {
		return
	}
	r.cutDone = true
	if w := a.w.Load(); w != nil {
		w.Cut(r.f, r.inc.Name)
		return
	}
	w := NewWriter(r.f, r.inc.Name, 0, a.cfg.Fsync, a.log)
	w.OnFsync = a.cfg.OnFsync
	w.SetTimestamps(a.cfg.Timestamps)
	a.w.Store(w)
	if a.closed.Load() && a.w.CompareAndSwap(w, nil) { // Close ran meanwhile
		go w.Close()
	}
}

// abort undoes a failed rewrite's files and returns err.
func (r *rewriteRun) abort(err error) error {
	a := r.a
	_ = os.Remove(r.tmp)
	if !r.cutDone {
		r.f.Close()
	}
	if r.fresh {
		// Nothing names the new incr file: stop appending to it.
		if w := a.w.Load(); w != nil && r.cutDone {
			a.w.Store(nil)
			_ = w.Close()
		}
		_ = os.Remove(filepath.Join(a.dir, r.inc.Name))
	}
	return err
}

// writeBase writes the snapshot to the temporary base file, synced, and
// returns its size.
func (r *rewriteRun) writeBase(ctx context.Context, snap Snapshotter) (baseSize int64, err error) {
	bf, err := os.OpenFile(r.tmp, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o644)
	if err != nil {
		return 0, err
	}
	err = snap(ctx, bf, r.onCut)
	if err == nil && r.a.closed.Load() {
		err = errors.New("the AOF was closed during the rewrite")
	}
	if err == nil && !r.cutDone {
		err = errors.New("snapshot ended without a cut")
	}
	if err == nil {
		err = bf.Sync()
	}
	if err == nil {
		var st os.FileInfo
		if st, err = bf.Stat(); err == nil {
			baseSize = st.Size()
		}
	}
	if cerr := bf.Close(); err == nil {
		err = cerr
	}
	return baseSize, err
}

// install renames the base into place and writes the manifest naming it,
// with the older base and incr files as history. a.mu is held.
func (r *rewriteRun) install(baseSize int64) error {
	a := r.a
	final := a.man
	if r.fresh || final == nil {
		final = r.next
	}
	final = final.Clone()
	if final.Base != nil {
		h := *final.Base
		h.Type = TypeHistory
		final.History = append(final.History, h)
	}
	var keep []FileInfo
	for _, fi := range final.Incrs {
		if fi.Seq == r.inc.Seq {
			keep = append(keep, fi)
			continue
		}
		fi.Type = TypeHistory
		final.History = append(final.History, fi)
	}
	final.Incrs = keep
	final.BaseSeq++
	base := FileInfo{Name: BaseName(a.cfg.FileName, final.BaseSeq, true), Seq: final.BaseSeq, Type: TypeBase}
	final.Base = &base
	if err := os.Rename(r.tmp, filepath.Join(a.dir, base.Name)); err != nil {
		a.mu.Unlock()
		err = r.abort(err)
		a.mu.Lock()
		return err
	}
	if err := WriteManifest(a.dir, a.cfg.FileName, final); err != nil {
		_ = os.Remove(filepath.Join(a.dir, base.Name))
		a.mu.Unlock()
		err = r.abort(err)
		a.mu.Lock()
		return err
	}
	a.man = final
	a.baseSize.Store(baseSize)
	a.deleteHistoryLocked()
	a.rewriteBase.Store(a.sizeLocked())
	return nil
}

// deleteHistoryLocked deletes history files and drops them from the
// manifest (rewritten only when that succeeds; a leftover history line is
// harmless: loading ignores it).
func (a *AOF) deleteHistoryLocked() {
	if a.man == nil || len(a.man.History) == 0 {
		return
	}
	for _, fi := range a.man.History {
		if err := os.Remove(filepath.Join(a.dir, fi.Name)); err != nil && !errors.Is(err, os.ErrNotExist) {
			a.log.Warn("AOF: cannot delete a history file", "file", fi.Name, "err", err)
		}
	}
	m := a.man.Clone()
	m.History = nil
	if err := WriteManifest(a.dir, a.cfg.FileName, m); err != nil {
		a.log.Warn("AOF: cannot rewrite the manifest without its history files", "err", err)
		return
	}
	a.man = m
}

// sizeLocked is the size of the base and incr files on disk.
func (a *AOF) sizeLocked() int64 {
	if a.man == nil {
		return 0
	}
	var n int64
	files := append([]FileInfo(nil), a.man.Incrs...)
	if a.man.Base != nil {
		files = append(files, *a.man.Base)
	}
	for _, fi := range files {
		if st, err := os.Stat(filepath.Join(a.dir, fi.Name)); err == nil {
			n += st.Size()
		}
	}
	return n
}

// Stats is what INFO persistence shows of the AOF.
type Stats struct {
	CurrentSize, BaseSize, RewriteBaseSize int64
	Rewriting                              bool
	RewriteSeconds                         int64 // current rewrite; -1 when none
	LastRewriteSeconds                     int64
	LastRewriteErr                         bool
	Rewrites, ConsecutiveFailures          int64
	WriteErr                               bool
	Buffered, DelayedFsync                 int64
	PendingFsync                           bool
}

// Stats reports the AOF's state.
func (a *AOF) Stats() Stats {
	a.mu.Lock()
	size := a.sizeLocked()
	busy := a.busy
	a.mu.Unlock()
	st := Stats{CurrentSize: size, BaseSize: a.baseSize.Load(), RewriteBaseSize: a.rewriteBase.Load(),
		Rewriting: busy, RewriteSeconds: -1, LastRewriteSeconds: a.lastRewriteSec.Load(),
		LastRewriteErr: a.lastRewriteErr.Load(), Rewrites: a.rewrites.Load(), ConsecutiveFailures: a.consecFailures.Load()}
	if s := a.rewriteStart.Load(); s != 0 {
		st.RewriteSeconds = int64(time.Since(time.Unix(0, s)) / time.Second)
	}
	if w := a.w.Load(); w != nil {
		st.WriteErr = w.Failing()
		st.Buffered = w.Buffered()
		st.DelayedFsync = w.DelayedFsync()
		st.PendingFsync = w.PendingFsync()
	}
	return st
}

// NeedsRewrite applies auto-aof-rewrite-percentage and -min-size: the AOF
// is at least minSize and grew by percent since the last rewrite.
func (a *AOF) NeedsRewrite(percent int, minSize int64) bool {
	if percent <= 0 || a.w.Load() == nil || a.Rewriting() {
		return false
	}
	a.mu.Lock()
	size := a.sizeLocked()
	a.mu.Unlock()
	if size < minSize {
		return false
	}
	base := a.rewriteBase.Load()
	if base <= 0 {
		base = 1
	}
	return (size-base)*100/base >= int64(percent)
}

// Close writes and fsyncs what was fed and closes the files.
func (a *AOF) Close() error {
	a.closed.Store(true)
	w := a.w.Swap(nil)
	if w == nil {
		return nil
	}
	return w.Close()
}
