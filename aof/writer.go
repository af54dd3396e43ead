package aof

import (
	"errors"
	"log/slog"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// Policy is appendfsync.
type Policy int32

const (
	FsyncNo       Policy = iota // leave flushing to the kernel
	FsyncEverysec               // fsync in the background once a second
	FsyncAlways                 // a reply leaves after its write is fsynced
)

func (p Policy) String() string {
	switch p {
	case FsyncAlways:
		return "always"
	case FsyncEverysec:
		return "everysec"
	}
	return "no"
}

// ParsePolicy parses appendfsync's values.
func ParsePolicy(s string) (Policy, error) {
	switch s {
	case "always":
		return FsyncAlways, nil
	case "everysec":
		return FsyncEverysec, nil
	case "no":
		return FsyncNo, nil
	}
	return 0, errors.New("argument(s) must be one of the following: everysec, always, no")
}

// delayLimit is how far a background fsync may fall behind before writers
// wait for it (Redis: 2 seconds, counted in aof_delayed_fsync).
const delayLimit = 2 * time.Second

// retryEvery is how often a failed write or fsync is tried again.
const retryEvery = time.Second

// segment is the tail of one incremental file: the bytes fed for it and
// not yet written. Only the last segment receives new commands; earlier
// ones (incr files closed by a rewrite's cut) are written, fsynced and
// closed by the flusher, in order.
type segment struct {
	f     *os.File
	name  string
	size  int64  // bytes in the file (flusher-owned)
	data  []byte // fed, not yet written (mu)
	spare []byte // the flusher's other buffer (mu)
	end   int64  // logical offset of the segment's last byte once closed by a cut (mu)
}

// Writer appends the write stream to the current incremental file.
//
// Feed runs under the writer's shard locks and only copies into a buffer;
// one flusher goroutine writes the buffer out and fsyncs per the policy,
// so a single fdatasync covers every write fed before it (group commit,
// across clients and shards). Positions are logical byte offsets of the
// stream since the Writer started: Fed() is the end of what was fed,
// Synced() the end of what is known durable.
type Writer struct {
	// OnFsync, when set before the first write, is told each fsync's
	// duration and policy (Config.OnFsync).
	OnFsync func(d time.Duration, p Policy)

	log        *slog.Logger
	policy     atomic.Int32
	timestamps atomic.Bool

	mu       sync.Mutex
	cond     sync.Cond // synced, err or closed changed; an fsync ended
	segs     []*segment
	lastDB   int
	lastTS   int64
	fed      int64
	synced   int64
	closed   bool
	err      error // last write or fsync error; nil when healthy
	errno    string
	scratch  []byte
	fsyncing int64 // unix nanos when the running fsync started; 0 when none
	// holds are event-loop batches waiting (Hold): closed once synced
	// reaches target (target < 0: once the running fsync ends).
	holds []hold

	flushMu sync.Mutex
	wake    chan struct{}
	quit    chan struct{} // closed by Close: stop waiting to retry
	stopped chan struct{}

	delayedFsync atomic.Int64
	lastFsync    atomic.Int64 // unix nanos of the last successful fsync
	writeErr     atomic.Bool  // aof_last_write_status:err
}

// NewWriter starts a writer appending to f (named name, already size
// bytes long).
func NewWriter(f *os.File, name string, size int64, policy Policy, log *slog.Logger) *Writer {
	if log == nil {
		log = slog.Default()
	}
	w := &Writer{log: log, lastDB: -1, wake: make(chan struct{}, 1), quit: make(chan struct{}), stopped: make(chan struct{})}
	w.cond.L = &w.mu
	w.policy.Store(int32(policy))
	w.segs = []*segment{{f: f, name: name, size: size}}
	w.lastFsync.Store(time.Now().UnixNano())
	go w.run()
	return w
}

// SetPolicy changes appendfsync.
func (w *Writer) SetPolicy(p Policy) {
	w.policy.Store(int32(p))
	w.mu.Lock()
	w.releaseLocked()
	w.mu.Unlock()
	w.kick()
}

// Policy is the current appendfsync.
func (w *Writer) Policy() Policy { return Policy(w.policy.Load()) }

// SetTimestamps turns aof-timestamp-enabled annotations on or off.
func (w *Writer) SetTimestamps(on bool) { w.timestamps.Store(on) }

// Feed appends one command of database db (db < 0: no SELECT needed) in
// RESP form. Called under the shard locks of the write it records, so the
// stream follows commit order. It never waits for the disk.
func (w *Writer) Feed(db int, args [][]byte) {
	var ts int64
	if w.timestamps.Load() {
		ts = time.Now().Unix()
	}
	w.mu.Lock()
	if w.closed {
		w.mu.Unlock()
		return
	}
	s := w.segs[len(w.segs)-1]
	was := len(s.data)
	b := s.data
	if ts > w.lastTS {
		w.lastTS = ts
		b = append(b, "#TS:"...)
		b = strconv.AppendInt(b, ts, 10)
		b = append(b, "\r\n"...)
	}
	if db >= 0 && db != w.lastDB {
		w.lastDB = db
		d := strconv.Itoa(db)
		b = append(b, "*2\r\n$6\r\nSELECT\r\n$"...)
		b = strconv.AppendInt(b, int64(len(d)), 10)
		b = append(b, "\r\n"...)
		b = append(b, d...)
		b = append(b, "\r\n"...)
	}
	b = AppendCommand(b, args)
	w.fed += int64(len(b) - was)
	s.data = b
	w.mu.Unlock()
	if was == 0 {
		w.kick()
	}
}

// AppendCommand appends args as a RESP array of bulk strings.
func AppendCommand(b []byte, args [][]byte) []byte {
	b = append(b, '*')
	b = strconv.AppendInt(b, int64(len(args)), 10)
	b = append(b, "\r\n"...)
	for _, a := range args {
		b = append(b, '$')
		b = strconv.AppendInt(b, int64(len(a)), 10)
		b = append(b, "\r\n"...)
		b = append(b, a...)
		b = append(b, "\r\n"...)
	}
	return b
}

func (w *Writer) kick() {
	select {
	case w.wake <- struct{}{}:
	default:
	}
}

// Cut makes f (named name, empty) the file that receives every command
// fed from now on; what was fed before is still written to the previous
// file, which is then fsynced and closed. Called at a rewrite's snapshot
// instant (every shard locked, so no Feed runs).
func (w *Writer) Cut(f *os.File, name string) {
	w.mu.Lock()
	w.segs[len(w.segs)-1].end = w.fed
	w.segs = append(w.segs, &segment{f: f, name: name})
	w.lastDB, w.lastTS = -1, 0
	w.mu.Unlock()
	w.kick()
}

// Fed is the logical offset of the end of what was fed.
func (w *Writer) Fed() int64 {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.fed
}

// Barrier is what an event loop calls before sending the replies of a
// batch that wrote: with appendfsync always it waits until everything fed
// so far is fsynced (one fsync serves the whole batch, and every other
// batch waiting at the same time). With everysec it waits only when the
// background fsync has been running for more than two seconds, as Redis
// does. It returns early when the writer is closed.
func (w *Writer) Barrier() {
	switch w.Policy() {
	case FsyncAlways:
		w.mu.Lock()
		target := w.fed
		if w.synced < target && !w.closed {
			w.kick()
			for w.synced < target && !w.closed {
				w.cond.Wait()
			}
		}
		w.mu.Unlock()
	case FsyncEverysec:
		w.mu.Lock()
		if start := w.fsyncing; start != 0 && time.Since(time.Unix(0, start)) > delayLimit {
			w.delayedFsync.Add(1)
			for w.fsyncing == start && !w.closed {
				w.cond.Wait()
			}
		}
		w.mu.Unlock()
	}
}

type hold struct {
	target int64
	ch     chan struct{}
}

// Hold is Barrier for event loops, without blocking them: nil when the
// replies to everything fed so far may be sent now, or a channel closed
// once they may (appendfsync always: when it is fsynced; everysec: when an
// fsync stalled for more than two seconds ends).
func (w *Writer) Hold() <-chan struct{} {
	switch w.Policy() {
	case FsyncAlways:
		w.mu.Lock()
		defer w.mu.Unlock()
		if w.synced >= w.fed || w.closed {
			return nil
		}
		ch := make(chan struct{})
		w.holds = append(w.holds, hold{target: w.fed, ch: ch})
		w.kick()
		return ch
	case FsyncEverysec:
		w.mu.Lock()
		defer w.mu.Unlock()
		if start := w.fsyncing; start != 0 && !w.closed && time.Since(time.Unix(0, start)) > delayLimit {
			w.delayedFsync.Add(1)
			ch := make(chan struct{})
			w.holds = append(w.holds, hold{target: -1, ch: ch})
			return ch
		}
	}
	return nil
}

// releaseLocked closes the holds that passed.
func (w *Writer) releaseLocked() {
	if len(w.holds) == 0 {
		return
	}
	keep := w.holds[:0]
	for _, h := range w.holds {
		if w.closed || (h.target >= 0 && w.synced >= h.target) || (h.target < 0 && w.fsyncing == 0) ||
			(h.target >= 0 && w.Policy() != FsyncAlways) {
			close(h.ch)
			continue
		}
		keep = append(keep, h)
	}
	clear(w.holds[len(keep):])
	w.holds = keep
}

// WaitSynced waits until offset off of the stream is fsynced or timeout
// passes (0: no limit); it reports whether it is.
func (w *Writer) WaitSynced(off int64, timeout time.Duration) bool {
	var t *time.Timer
	if timeout > 0 {
		t = time.AfterFunc(timeout, func() {
			w.mu.Lock()
			w.cond.Broadcast()
			w.releaseLocked()
			w.mu.Unlock()
		})
		defer t.Stop()
	}
	deadline := time.Now().Add(timeout)
	w.mu.Lock()
	defer w.mu.Unlock()
	w.kick()
	for w.synced < off && !w.closed {
		if timeout > 0 && !time.Now().Before(deadline) {
			return false
		}
		w.cond.Wait()
	}
	return w.synced >= off
}

// Status reports the last write or fsync error (nil when writes are
// healthy), for -MISCONF.
func (w *Writer) Status() error {
	if !w.writeErr.Load() {
		return nil
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.err
}

// Failing reports whether the last write or fsync failed.
func (w *Writer) Failing() bool { return w.writeErr.Load() }

// DelayedFsync is aof_delayed_fsync.
func (w *Writer) DelayedFsync() int64 { return w.delayedFsync.Load() }

// Buffered is how many fed bytes are not written yet (aof_buffer_length).
func (w *Writer) Buffered() int64 {
	w.mu.Lock()
	defer w.mu.Unlock()
	n := 0
	for _, s := range w.segs {
		n += len(s.data)
	}
	return int64(n)
}

// PendingFsync reports whether written bytes wait for an fsync
// (aof_pending_bio_fsync).
func (w *Writer) PendingFsync() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.fsyncing != 0
}

// Close writes and fsyncs everything fed, stops the flusher and closes the
// files. It returns the last error if the data could not be made durable.
func (w *Writer) Close() error {
	w.mu.Lock()
	if w.closed {
		w.mu.Unlock()
		<-w.stopped
		return nil
	}
	w.mu.Unlock()
	close(w.quit)
	err := w.flush(true)
	w.mu.Lock()
	w.closed = true
	w.cond.Broadcast()
	w.releaseLocked()
	w.mu.Unlock()
	<-w.stopped
	for _, s := range w.segs {
		if cerr := s.f.Close(); err == nil {
			err = cerr
		}
	}
	return err
}

func (w *Writer) run() {
	defer close(w.stopped)
	t := time.NewTicker(100 * time.Millisecond)
	defer t.Stop()
	for {
		select {
		case <-w.wake:
		case <-t.C:
		case <-w.quit:
			return
		}
		w.mu.Lock()
		closed := w.closed
		w.mu.Unlock()
		if closed {
			continue
		}
		_ = w.flush(false)
	}
}

// flush writes what was fed and fsyncs per the policy (force: always
// fsync). flushMu makes the flusher and Close take turns.
func (w *Writer) flush(force bool) error {
	w.flushMu.Lock()
	defer w.flushMu.Unlock()
	for {
		w.mu.Lock()
		s := w.segs[0]
		last := len(w.segs) == 1
		buf := s.data
		s.data = s.spare[:0]
		s.spare = nil
		end := w.fed
		if !last {
			end = s.end
		}
		failing := w.err != nil
		w.mu.Unlock()

		if len(buf) > 0 {
			if err := w.writeAll(s, buf); err != nil {
				w.fail("write", err, s, buf)
				return err
			}
		}
		w.mu.Lock()
		if cap(buf) <= 4<<20 {
			s.spare = buf[:0]
		}
		w.mu.Unlock()
		if !last {
			// A cut closed this file: make it durable, then move on.
			if err := w.sync(s.f); err != nil {
				w.fail("fsync", err, s, nil)
				return err
			}
			if err := s.f.Close(); err != nil {
				w.log.Warn("AOF: closing a finished incr file", "file", s.name, "err", err)
			}
			w.mu.Lock()
			w.segs = w.segs[1:]
			w.mu.Unlock()
			continue
		}
		p := w.Policy()
		due := force || p == FsyncAlways || failing ||
			(p == FsyncEverysec && time.Since(time.Unix(0, w.lastFsync.Load())) >= time.Second)
		if due && w.lastSyncedBelow(end) {
			if err := w.sync(s.f); err != nil {
				w.fail("fsync", err, s, nil)
				return err
			}
			w.mu.Lock()
			if end > w.synced {
				w.synced = end
			}
			w.cond.Broadcast()
			w.releaseLocked()
			w.mu.Unlock()
		}
		w.recovered()
		return nil
	}
}

func (w *Writer) lastSyncedBelow(end int64) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.synced < end || w.err != nil
}

// writeAll writes buf at the end of s's file. A short write is undone
// (the file truncated back) so that a retry never leaves half a command.
func (w *Writer) writeAll(s *segment, buf []byte) error {
	n, err := s.f.Write(buf)
	if err == nil {
		s.size += int64(n)
		return nil
	}
	if n > 0 {
		if terr := s.f.Truncate(s.size); terr != nil {
			// Could not undo: keep what was written, retry the rest.
			s.size += int64(n)
			w.mu.Lock()
			s.data = append(append([]byte(nil), buf[n:]...), s.data...)
			w.mu.Unlock()
			return &keptError{err}
		}
		if _, serr := s.f.Seek(s.size, 0); serr != nil {
			w.log.Warn("AOF: seek after truncate", "err", serr)
		}
	}
	return err
}

// keptError marks a write error whose unwritten rest was already put back.
type keptError struct{ error }

func (w *Writer) sync(f *os.File) error {
	w.mu.Lock()
	start := time.Now()
	w.fsyncing = start.UnixNano()
	w.mu.Unlock()
	err := fdatasync(f)
	if w.OnFsync != nil {
		w.OnFsync(time.Since(start), w.Policy())
	}
	w.mu.Lock()
	w.fsyncing = 0
	w.cond.Broadcast()
	w.releaseLocked()
	w.mu.Unlock()
	if err == nil {
		w.lastFsync.Store(time.Now().UnixNano())
	}
	return err
}

// fail records a write or fsync error; buf (not written) goes back in
// front of the segment's data so that nothing fed is lost.
func (w *Writer) fail(op string, err error, s *segment, buf []byte) {
	var kept *keptError
	w.mu.Lock()
	if buf != nil && !errors.As(err, &kept) {
		s.data = append(append([]byte(nil), buf...), s.data...)
	}
	first := w.err == nil
	w.err = err
	w.writeErr.Store(true)
	w.mu.Unlock()
	if first {
		w.log.Error("AOF: cannot "+op+" the append only file; writes are refused until it works again",
			"file", s.name, "err", err)
	}
	select {
	case <-time.After(retryEvery):
		w.kick()
	case <-w.quit:
	}
}

func (w *Writer) recovered() {
	if !w.writeErr.Load() {
		return
	}
	w.mu.Lock()
	w.err = nil
	w.writeErr.Store(false)
	w.cond.Broadcast()
	w.releaseLocked()
	w.mu.Unlock()
	w.log.Warn("AOF: write error looks solved; accepting writes again")
}
