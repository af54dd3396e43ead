// Package snapshot takes forkless point-in-time snapshots of a shard.Store
// as Redis RDB files (Write) and loads RDB files (Load).
//
// Write follows the algorithm of docs/architecture.md. At the cut every shard is locked (in
// ascending order), each shard bumps its version epoch and registers a
// pre-change hook on its tables (shard.StartSnapshot), OnCut runs, and the
// shards are unlocked: writes go on from there. One serializer goroutine per
// shard then walks the buckets of every database, taking the shard lock for
// at most maxHold at a time (batches of 8 buckets, never across I/O), and
// encodes every bucket not yet captured into RDB records. A write about to
// change a bucket not yet captured first encodes it inside the hook (also
// under the lock).
// So the file holds every key as it was at the cut, and nothing written
// after it.
//
// Encoding inside the hook (rather than copy-on-write clones) is the choice
// for every type: strings are copied into the record anyway, and a
// collection is encoded straight from its live object, which costs about
// what a deep clone would cost but allocates nothing that outlives the hook.
// A bucket is captured at most once, so a write pays this at most once per
// bucket (8 keys) per snapshot.
//
// Big values are the exception: strings in large slab chunks (over 16 KiB)
// and collections using over 16 KiB are captured by reference and encoded
// off the shard lock by an encoder goroutine per shard (bigvalues.go), so
// that a hook never copies or encodes megabytes with its shard locked. A
// writer that then changes or drops one the encoder has not reached copies
// that one value (a clone for a collection) before it goes on.
//
// Records travel in chunks (about 128 KiB, each tagged with its database)
// through one bounded queue to the caller's goroutine, the single RDB
// writer, which adds the header, a SELECTDB (+ RESIZEDB, sizes at the cut)
// whenever the database changes from the previous chunk, the EOF opcode and
// the CRC64. Serializers visit the databases in order, so keys come grouped
// by database; a chunk captured by a hook for another database only adds
// one more SELECTDB, which Redis's loader and redis-check-rdb accept (RDB
// allows any number of SELECTDB opcodes). Memory is bounded by bytes, not
// chunks (Options.MaxExtraMemory, budget.go): the traversal waits, shard
// unlocked, while over a quarter of the budget is in flight, the big value
// encoder waits off the lock, a connection whose write took the budget
// past half of it waits at the WriterGate before its next write, holding
// no lock (Options.Gate, gate.go), and only a writer that would exceed the
// whole budget waits for the output with its shard locked (the last
// resort; the writer itself never takes a shard lock, so this cannot
// deadlock), which slows writers to the speed of the output instead of
// letting captured data pile up.
//
// Keys already expired at the cut are left out (a loader drops them anyway).
//
// Memcached items keep their 32-bit client flags: a key whose entry carries
// nonzero flags is preceded by an AUX field rdb.AuxMCFlags ("df-mc-flags",
// decimal value), written in the same chunk as the key so nothing can come
// between them. Redis 7.0's loader and redis-check-rdb accept AUX fields
// between any two records and ignore unknown names, so the file stays a
// valid Redis RDB (Redis drops the flags); Load gives the flags to the next
// key it reads. CAS uniques are not saved: the memcached front end stamps a
// fresh one the first time a loaded item's CAS is needed, as it does for
// keys written through RESP.
package snapshot

import (
	"context"
	"errors"
	"fmt"
	"io"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/damselflydb/damselfly/shard"
	"github.com/damselflydb/damselfly/shard/types"
	"github.com/damselflydb/damselfly/snapshot/rdb"
)

// Options tune Write.
type Options struct {
	Version int // RDB version, 0 = 10
	// OnCut is called once at the snapshot instant, while every shard is
	// locked (replication records its offset here). Aux is read after OnCut
	// returns, so OnCut may fill in values of its elements.
	OnCut func()
	Aux   []rdb.Aux // optional extra aux fields
	// Functions, when set, is called at the cut (every shard locked) for
	// the FUNCTION libraries' codes, written after the aux fields as Redis
	// does (RDB_OPCODE_FUNCTION2).
	Functions func() []string
	// Progress, when set, is updated while Write runs (INFO persistence).
	Progress *Progress
	// Compress LZF-compresses strings longer than 20 bytes, as Redis does
	// with rdbcompression yes (the server's default, as Redis's), except
	// big strings (bigvalues.go), which are written raw from the value so
	// that an overwrite never waits for their compression. The compressor
	// (rdb.LZF) costs ~70 ns per 100-byte value; the one it replaced
	// zeroed a 64 KiB table per string and cost ~950.
	Compress bool
	// Pace, when > 0, makes each serializer pause for Pace times the length
	// of a batch it encodes whenever clients wait for the CPU (see
	// serializer.run and Busy), so they keep most of their throughput;
	// when nobody waits it runs flat out. Background saves and full syncs
	// use it; SAVE and the shutdown save never pause.
	Pace int
	// Busy, when set, reports whether clients are waiting to be served
	// right now (the server asks its event loops whether input is ready);
	// a paced serializer pauses only then. Without Busy it pauses after
	// any batch during which writes reached its shard.
	Busy func() bool
	// Wanted, when set, reports whether a client of the server wants the
	// CPU now, even with no input ready (an event loop is serving, or
	// waiting for a CPU or a lock: netpoll.Loop.Awake). The big value
	// encoders and the writers of a paced save step aside
	// (runtime.Gosched) between slices while it holds; without it they
	// ask Busy. The traversal's pauses, which sleep, still ask Busy.
	Wanted func() bool
	// KeyDelay, when set, is Redis's rdb-key-save-delay, read as the save
	// goes: each serializer sleeps that long per key it encoded, outside
	// the shard lock, stretching a save so that tests can write while it
	// runs.
	KeyDelay func() time.Duration
	// RunCut, when set, runs the cut for Write: it must call cut exactly
	// once with every shard locked (the caller may already hold them, as
	// the BGSAVE command does, so that the dump is the dataset when the
	// command ran, as with Redis's fork). Without it Write locks the shards
	// itself. A RunCut that holds shard locks while Write waits for the
	// store's snapshot slot would deadlock: such callers take the slot
	// first and set SlotHeld.
	RunCut func(cut func())
	// SlotHeld: the caller holds the store's snapshot slot
	// (TryAcquireSnapshot) and releases it after Write returns.
	SlotHeld bool
	// NoReserve skips the warm reserve (reserve.go): for a RunCut whose
	// caller holds shard locks while it waits (BGSAVE inside EXEC), which
	// reading the shards' counts would wait for.
	NoReserve bool
	// MaxExtraMemory bounds the encoded bytes a save holds in flight
	// (budget.go; 0 = DefaultMaxExtraMemory): past it, serializers and the
	// writes that reach keys not yet saved wait for the output.
	MaxExtraMemory int64
	// Gate, when set, is closed while the budget is over half of
	// MaxExtraMemory, and writers that took it there are marked to wait
	// at it (gate.go); Write opens it before returning.
	Gate *WriterGate
}

// Progress is a running Write's progress.
type Progress struct {
	KeysTotal atomic.Int64 // keys at the cut (expired ones included)
	Keys      atomic.Int64 // keys encoded so far
	Bytes     atomic.Int64 // bytes written so far
}

// Stats describe a finished Write or Load.
type Stats struct {
	Keys, Bytes int64
	Duration    time.Duration
	// Paused is the time a paced Write's serializers spent pausing for
	// clients (summed over shards).
	Paused time.Duration
	// InFlightPeak is the most encoded bytes a Write held between its
	// serializers and writers at once (bounded by MaxExtraMemory, or one
	// record when a single record is larger).
	InFlightPeak int64
	// SparesKept and SparesReused count the chunks of overwritten big
	// strings the save kept once written, and those an overwrite then took
	// instead of a new chunk (budget.addSpare, shard.ChunkRecycler).
	SparesKept, SparesReused int64
	// Reserve is how many warm chunks the save prepared before its cut,
	// and ReserveTime what that took (reserve.go); overwrites that took
	// one count in SparesReused.
	Reserve     int64
	ReserveTime time.Duration
	// What a Write cost writers (waits.go): the longest pre-change hook
	// run that captured a bucket (the writer, and every client of its
	// shard, waited that long), the number and total time of such runs,
	// the longest traversal lock hold, their number and total, and the
	// time hooks waited for room in the memory budget.
	HookMax, HoldMax     time.Duration
	HookWorkMax          time.Duration // HookMax without its budget waits
	Hooks, Holds         int64
	HookTotal, HoldTotal time.Duration
	HookBudgetWait       time.Duration
	// Waits is the histogram of those waits per cause (waits.go).
	Waits WaitHist
	// The waits for room in the memory budget, by who waited and with
	// what held: hooks sending a chunk and writers dropping a big value
	// not yet saved, both with their shard locked (the last resort), and
	// connections at the WriterGate before a write, holding nothing.
	HookBudget, DropBudget, ConnBudget BudgetWaits
	// Functions are the FUNCTION libraries a Load read (their codes).
	Functions []string
	// Warnings are what a Load skipped or changed (module data, hash
	// field TTLs), one line each, for the log.
	Warnings []string
}

const (
	chunkBytes = 128 << 10 // a serializer hands its buffer over past this size
	// maxHold ends a traversal lock hold: writers of the shard wait
	// behind it. The clock is read after every batch (8 buckets, about
	// 64 keys of 100 B: a few µs), so a hold overruns it by one batch at
	// most. Long holds buy nothing: taking and releasing the lock every
	// 100 µs costs well under 1% of the traversal.
	maxHold = 100 * time.Microsecond
	// maxPause bounds one pause of a paced serializer (see serializer.run).
	maxPause = time.Millisecond
	// sliceBytes is the longest step the big value encoder and the
	// writers take without asking whether clients wait (yieldToClients):
	// a big value is copied into its chunk, and a chunk written out
	// (checksum and write), this many bytes at a time. One slice is tens
	// of µs; a 10 MB value in one piece held a CPU for milliseconds, and
	// a memmove cannot even be preempted.
	sliceBytes = 128 << 10
	// traversalShare: the traversal starts a lock hold only while at most
	// 1/traversalShare of the budget is in use, leaving the rest to the
	// values writers drop before they are written (with 10 MB values and
	// half the budget, two writers' drops filled the rest: measured in
	// BENCHMARKS.md, issue 14 "snaplat2").
	traversalShare = 4
)

// chunk is a run of encoded records of one database.
type chunk struct {
	db   int
	data []byte
	// big, when set, is a big string whose bytes follow data, written by
	// the writer from the shard's bytes (writeBig); bigBytes of them.
	big      *bigItem
	bigBytes int64
}

// charge is what the chunk holds of the budget.
func (c chunk) charge() int64 { return int64(len(c.data)) + c.bigBytes }

// writeChunk writes a chunk's records, and its big string if any, to out;
// scratch is the writer's own slice buffer (writeBig).
func (r *run) writeChunk(out *rdb.Writer, c chunk, scratch *[]byte) error {
	err := r.writeOut(out, c.data)
	if err == nil && c.big != nil {
		err = r.writeBig(out, c.big, scratch)
	}
	return err
}

// run is one Write in progress.
type run struct {
	// reserved and reserveTime: the warm reserve (reserve.go).
	reserved    int64
	reserveTime time.Duration
	version     int
	cutMs       int64
	queue       chan chunk
	abort       chan struct{} // closed when the writer gives up
	bufs        bufPool       // written chunk buffers for reuse
	once        sync.Once
	errMu       sync.Mutex
	err         error
	keys        *atomic.Int64
	limits      rdb.Limits
	pace        int
	busy        func() bool
	wanted      func() bool // Options.Wanted, or Busy without it
	keyDelay    func() time.Duration
	paused      atomic.Int64 // ns the serializers paused for clients
	// perShard gives every serializer a queue of its own (native format:
	// one output per shard) instead of the shared queue.
	perShard bool
	// mem bounds the bytes of the chunks sent and not yet written.
	mem *budget
	// waits measures what the save costs writers (waits.go).
	waits waits
}

func (r *run) fail(err error) {
	r.errMu.Lock()
	if r.err == nil {
		r.err = err
	}
	r.errMu.Unlock()
	r.once.Do(func() { close(r.abort) })
}

func (r *run) failed() error {
	r.errMu.Lock()
	defer r.errMu.Unlock()
	return r.err
}

// send queues c for the output unless the run was aborted; called with
// the shard locked (by a hook or the traversal), it counts a hook's wait
// for the budget (waits.go): only a send that found no room or a full
// queue waited.
func (s *serializer) send(c chunk) bool {
	if s.traversing {
		return s.queueChunk(c)
	}
	if s.r.mem.tryAcquire(c.charge()) {
		select {
		case s.queue <- c:
			s.markGate()
			return true
		default:
			s.r.mem.release(c.charge())
		}
	}
	t := time.Now()
	ok := s.queueChunk(c)
	s.hookBudget += time.Since(t)
	s.markGate()
	return ok
}

// queueChunk waits for budget and queues c; it touches no hook state, so
// the serializer goroutine calls it with the shard unlocked.
func (s *serializer) queueChunk(c chunk) bool {
	if !s.r.mem.acquire(c.charge(), s.r.abort) {
		return false
	}
	select {
	case s.queue <- c:
		return true
	case <-s.r.abort:
		s.r.mem.release(c.charge())
		return false
	}
}

// written is called by a writer for each chunk it took off a queue
// (written or not): it recycles the buffer and frees its budget.
func (r *run) written(c chunk) {
	if c.big != nil {
		r.bigDone(c.big)
	}
	r.mem.release(c.charge())
	r.putBuf(c.data)
}

// Write streams a consistent RDB of every database of st, as of one
// instant, to w, while writes continue. Only one snapshot runs at a time:
// Write waits for a running one (or ctx) first.
func Write(ctx context.Context, st *shard.Store, w io.Writer, opt Options) (Stats, error) {
	if !opt.SlotHeld {
		if err := st.AcquireSnapshot(ctx); err != nil {
			return Stats{}, err
		}
		defer st.ReleaseSnapshot()
	}
	start := time.Now()
	prog := opt.Progress
	if prog == nil {
		prog = new(Progress)
	}
	prog.Keys.Store(0)
	prog.Bytes.Store(0)
	cw := &countingWriter{w: w, n: &prog.Bytes}
	out := rdb.NewWriter(cw, opt.Version)
	if err := out.Err(); err != nil {
		return Stats{}, err
	}
	budget := newBudget(opt.MaxExtraMemory, opt.Gate)
	r := &run{version: out.Version(), queue: make(chan chunk, budget.chunks()), abort: make(chan struct{}), keys: &prog.Keys,
		limits: rdb.Limits{NoCompression: !opt.Compress}, pace: opt.Pace, busy: opt.Busy, wanted: opt.Wanted, keyDelay: opt.KeyDelay, mem: budget}
	r.bufs.max = budget.limit / 2
	if r.wanted == nil {
		r.wanted = opt.Busy
	}
	if opt.Gate != nil {
		opt.Gate.begin(&r.waits)
		defer opt.Gate.end() // a connection waiting at the gate never outlives the save
	}
	sers, keys, expires, mem, functions := r.cut(st, opt, prog)

	var wg sync.WaitGroup
	for _, s := range sers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s.run()
		}()
	}
	go func() {
		wg.Wait()
		close(r.queue)
	}()

	aux := mergeAux(rdb.DefaultAux(mem), opt.Aux)
	if err := out.Header(aux); err != nil {
		r.fail(err)
	}
	for _, code := range functions {
		if err := out.Function([]byte(code)); err != nil {
			r.fail(err)
		}
	}
	cur := -1
	var scratch []byte // writeBig's slices
	for {
		var c chunk
		var ok bool
		select {
		case c, ok = <-r.queue:
		case <-ctx.Done():
			r.fail(ctx.Err())
			c, ok = <-r.queue
		}
		if !ok {
			break
		}
		if r.failed() != nil {
			r.written(c)
			continue // drain until every serializer has stopped
		}
		if c.db != cur {
			out.SelectDB(c.db, keys[c.db], expires[c.db])
			cur = c.db
		}
		if err := r.writeChunk(out, c, &scratch); err != nil {
			r.fail(err)
		}
		r.written(c)
	}
	r.mem.dropSpares() // every shard's snapshot is finished: no overwrite takes them now
	if err := r.failed(); err != nil {
		return Stats{}, err
	}
	if err := out.Close(); err != nil {
		return Stats{}, err
	}
	stats := Stats{Keys: r.keys.Load(), Bytes: cw.n.Load(), Duration: time.Since(start), Paused: time.Duration(r.paused.Load()),
		InFlightPeak: r.mem.maxUsed()}
	stats.SparesKept, stats.SparesReused = r.mem.spareCounts()
	stats.Reserve, stats.ReserveTime = r.reserved, r.reserveTime
	if opt.Gate != nil {
		opt.Gate.open() // every serializer is done: count the last waits
	}
	r.waits.fill(&stats)
	return stats, nil
}

// cut starts the snapshot of every shard at one instant (all shards
// locked, OnCut called) and returns the serializers, the keys and keys
// with an expiry of each database at the cut, and the memory in use.
func (r *run) cut(st *shard.Store, opt Options, prog *Progress) (sers []*serializer, keys, expires []uint64, mem int64, functions []string) {
	shards := st.Shards()
	sers = make([]*serializer, len(shards))
	keys = make([]uint64, st.DBNum())
	expires = make([]uint64, st.DBNum())
	if !opt.NoReserve {
		r.prepareReserve(st) // reserve.go
	}
	cut := func() {
		r.cutMs = time.Now().UnixMilli()
		for i, sh := range shards {
			s := newSerializer(r, sh, st.DBNum())
			s.snap = sh.StartSnapshot(s)
			s.keysAt, s.expiresAt = make([]uint64, st.DBNum()), make([]uint64, st.DBNum())
			sers[i] = s
			for db := range keys {
				k, e := s.snap.Size(db)
				s.keysAt[db], s.expiresAt[db] = uint64(k), uint64(e)
				keys[db] += uint64(k)
				expires[db] += uint64(e)
				if d := sh.PeekDB(db); d != nil {
					mem += d.MemoryUsed()
				}
			}
		}
		var total uint64
		for _, k := range keys {
			total += k
		}
		prog.KeysTotal.Store(int64(total))
		if opt.OnCut != nil {
			opt.OnCut()
		}
		if opt.Functions != nil {
			functions = opt.Functions() // the libraries at the cut, like the keys
		}
	}
	if opt.RunCut != nil {
		opt.RunCut(cut)
	} else {
		all := st.All()
		st.LockMany(&all)
		cut()
		st.UnlockMany(&all)
	}
	return sers, keys, expires, mem, functions
}

type countingWriter struct {
	w io.Writer
	n *atomic.Int64
}

func (c *countingWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n.Add(int64(n))
	return n, err
}

// getBuf returns an empty chunk buffer of capacity at least n (0: a
// chunk's), recycled from the writers when possible (bufPool).
func (r *run) getBuf(n int) []byte { return r.bufs.get(max(n, chunkBytes+chunkBytes/4)) }

// putBuf gives a written chunk's buffer back for reuse, if it fits in
// the budget beside the bytes in flight (bufPool).
func (r *run) putBuf(b []byte) { r.bufs.put(b, r.mem.limit-r.mem.inUse()) }

// serializer encodes one shard's buckets. Its sink methods run under the
// shard lock (from the traversal or from a writer's pre-change hook).
type serializer struct {
	r     *run
	queue chan chunk // to the output: the run's (RDB) or the shard's own (native)
	sh    *shard.Shard
	snap  *shard.Snapshot
	buf   appendBuffer
	rw    *rdb.Writer
	db    int     // database of the records in buf
	full  []chunk // sealed chunks waiting to be sent

	// Traversal position, shared by the serializer goroutine and the hooks
	// (always under the shard lock).
	dbnum  int
	tdb    int
	cursor uint64
	// keysAt and expiresAt are the shard's key counts per database at
	// the cut.
	keysAt, expiresAt []uint64
	// writes counts pre-change hook runs (shard locked): the pacing's
	// sign of writers when there is no Busy.
	writes uint64
	// traversing is set while the serializer goroutine holds the shard
	// lock (Entry calls are then the traversal's, not a hook's);
	// hookStart is when the running hook's first Entry came (waits.go).
	traversing bool
	hookStart  time.Time
	hookBudget time.Duration // the running hook's waits for the budget
	// big queues the big strings captured by reference to the encoder
	// goroutine (bigvalues.go); heldBig counts their bytes in the current
	// traversal lock hold.
	big     bigQueue
	heldBig int64
	// keys counts the keys encoded since the last flushKeys (shard
	// locked): Progress.Keys is updated once per lock hold, not per key
	// (an atomic add per key showed in the profile).
	keys int64
	// lzf compresses the small strings appended by rdb.AppendString
	// (shard locked, like every Entry); nil without rdbcompression.
	lzf *rdb.LZF
}

func newSerializer(r *run, sh *shard.Shard, dbnum int) *serializer {
	s := &serializer{r: r, queue: r.queue, sh: sh, db: -1, dbnum: dbnum}
	s.big.wake, s.big.exited = make(chan struct{}, 1), make(chan struct{})
	if r.perShard {
		s.queue = make(chan chunk, r.mem.chunks())
	}
	s.buf.b = r.getBuf(0)
	s.rw = rdb.NewRecordWriter(&s.buf, r.version)
	s.rw.SetLimits(r.limits)
	if !r.limits.NoCompression {
		s.lzf = new(rdb.LZF)
	}
	return s
}

// appendBuffer is an io.Writer appending to a byte slice.
type appendBuffer struct{ b []byte }

func (a *appendBuffer) Write(p []byte) (int, error) {
	a.b = append(a.b, p...)
	return len(p), nil
}

// Entry implements shard.SnapshotSink: it encodes one key as it is at the
// cut.
func (s *serializer) Entry(db int, e *shard.Entry) {
	select {
	case <-s.r.abort:
		return
	default:
	}
	if !s.traversing && s.hookStart.IsZero() {
		s.hookStart = time.Now()
	}
	exp := e.ExpireAt()
	if exp != 0 && exp <= s.r.cutMs {
		return
	}
	// Small strings without memcached flags, the bulk of most datasets,
	// take one append (rdb.AppendString); the rest go through the record
	// writer, or to the big value encoder (bigvalues.go).
	small := e.Type() == shard.TypeString && (!e.HasMeta() || e.MCFlags() == 0)
	if small {
		_, big := e.ShareStr()
		small = !big
	}
	if !small && s.shareBig(db, e, exp) {
		return // encoded off the lock (bigvalues.go)
	}
	if db != s.db {
		s.seal()
		s.db = db
	}
	if small {
		if s.rw.Buffered() > 0 {
			s.flushRecords() // keep the records in order
		}
		s.buf.b = rdb.AppendString(s.buf.b, e.Key(), e.Str(), exp, s.lzf)
	} else if err := encode(s.rw, e, exp); err != nil {
		s.r.fail(fmt.Errorf("snapshot: key %q: %w", e.Key(), err))
		return
	}
	s.keys++
	if s.pending() >= chunkBytes {
		// Hand the records over now, not at the end of the bucket or
		// batch: with large values a batch would hold many of them. A
		// hook's send may wait for the output's budget, shard locked, as
		// the last resort (budget.go); the traversal's chunks go out
		// after its lock hold (run).
		s.seal()
		if !s.traversing {
			s.sendFull()
		}
	}
}

// AfterHook implements shard.SnapshotSink. It adds the hook's keys to the
// progress and hands a full buffer over, waiting for room in the budget
// only when the whole of it is in use (the last resort, budget.go): that
// bounds memory and slows writers to the output's speed.
func (s *serializer) AfterHook(captured bool) {
	s.writes++
	s.flushKeys()
	if s.pending() >= chunkBytes {
		s.seal()
		s.sendFull()
	}
	if !s.hookStart.IsZero() {
		s.r.waits.hook(time.Since(s.hookStart), s.hookBudget)
		s.r.waits.budgetNs.Add(int64(s.hookBudget))
		s.hookStart, s.hookBudget = time.Time{}, 0
	}
}

// advance captures the next traversal batch (shard locked) and reports
// whether the traversal is complete.
func (s *serializer) advance() bool {
	if s.tdb >= s.dbnum {
		return true
	}
	if s.cursor = s.snap.Traverse(s.tdb, s.cursor); s.cursor == 0 {
		s.tdb++
	}
	return s.tdb >= s.dbnum
}

func (s *serializer) pending() int { return len(s.buf.b) + s.rw.Buffered() }

// flushKeys adds the keys encoded since the last call to the progress
// (shard locked).
func (s *serializer) flushKeys() {
	if s.keys != 0 {
		s.r.keys.Add(s.keys)
		s.keys = 0
	}
}

// flushRecords moves what the record writer buffers into the chunk.
func (s *serializer) flushRecords() {
	if err := s.rw.Flush(); err != nil {
		s.r.fail(err)
	}
}

// seal closes the records in the buffer into a chunk.
func (s *serializer) seal() {
	if err := s.rw.Flush(); err != nil {
		s.r.fail(err)
		return
	}
	if len(s.buf.b) == 0 {
		return
	}
	s.full = append(s.full, chunk{db: s.db, data: s.buf.b})
	s.buf.b = s.r.getBuf(0)
}

// sendFull sends the sealed chunks.
func (s *serializer) sendFull() {
	for _, c := range s.full {
		if !s.send(c) {
			break
		}
	}
	clear(s.full)
	s.full = s.full[:0]
}

// run traverses every database of the shard, then finishes its snapshot.
//
// Pacing (Options.Pace > 0) is adaptive. A goroutine that never blocks
// keeps its core for 10 ms slices, and while it runs the scheduler does
// not poll the network (runtime.Gosched does not help: the poll happens
// only when the run queues are empty), so connections wait. After each
// lock hold the serializer therefore asks whether clients wait (Busy, or
// writes reached the shard since the last check): if so it sleeps Pace
// times the length of that hold, which leaves the clients at least
// Pace/(1+Pace) of a contended core; if not it goes straight on. A pause
// is at most maxPause: a hold stretched by preemption on a busy machine
// (measured: single pauses of 20+ ms) must not stall the snapshot. An idle
// server saves as fast as SAVE (measured 1M keys x 100 B pinned to one
// core: the fixed pause took a BGSAVE from ~1 s to 8-11 s); a loaded one
// keeps the old share.
func (s *serializer) run() {
	go s.encodeBig()
	var out []chunk
	var seen uint64
	for done := false; !done; {
		// Leave most of the budget to the values writers drop (budget.go).
		if !s.r.mem.waitBelow(s.r.mem.limit/traversalShare, s.r.abort) {
			s.finish()
			return
		}
		start := time.Now()
		keysBefore := s.r.keys.Load() // big values (bigvalues.go) add to it themselves
		s.sh.Lock()
		locked := time.Now()
		s.traversing = true
		s.heldBig = 0
		// Traversal batches (8 buckets each) until maxHold, a full chunk
		// or bigPerHold bytes of big values, whichever comes first.
		for !done && s.pending() < chunkBytes && s.heldBig < bigPerHold && time.Since(locked) < maxHold {
			done = s.advance()
		}
		if s.pending() >= chunkBytes || done {
			s.seal()
		}
		out = append(out[:0], s.full...)
		clear(s.full)
		s.full = s.full[:0]
		writes := s.writes
		s.flushKeys()
		s.traversing = false
		s.r.waits.hold(time.Since(locked))
		s.sh.Unlock()
		held := time.Since(start)
		if s.r.keyDelay != nil {
			if d := s.r.keyDelay(); d > 0 {
				time.Sleep(time.Duration(s.r.keys.Load()-keysBefore) * d)
			}
		}
		for _, c := range out {
			if !s.queueChunk(c) { // shard unlocked: not send
				s.finish() // aborted: stop the hooks all the same
				return
			}
		}
		if done {
			s.finish()
			return
		}
		if len(s.queue) >= 2 {
			// Let the writer take the chunks while they are in cache:
			// on one core (GOMAXPROCS 1) it would otherwise run only
			// once the traversal blocks on the budget, megabytes later.
			runtime.Gosched()
		}
		if s.r.pace > 0 && !done {
			if s.r.contended(writes != seen) {
				d := min(time.Duration(s.r.pace)*held, maxPause)
				time.Sleep(d)
				s.r.paused.Add(int64(d))
			}
			seen = writes
		}
	}
}

// finish ends the shard's snapshot once the encoder has encoded every big
// string it shared (bigvalues.go): from then on the shard may write into
// those chunks again. Every capture is done (or the run aborted), so
// nothing is captured between the encoder's end and Finish.
func (s *serializer) finish() {
	s.stopBig()
	s.sh.Lock()
	s.snap.Finish()
	s.flushKeys()
	s.seal() // nothing left, unless the run aborted
	s.sh.Unlock()
	for _, c := range s.full { // shard unlocked: not send (no hook, no gate mark)
		if !s.queueChunk(c) {
			break
		}
	}
	clear(s.full)
	s.full = s.full[:0]
}

// writeOut writes a chunk's records to out in slices of sliceBytes,
// letting waiting clients have the CPU between them (yieldToClients).
func (r *run) writeOut(out *rdb.Writer, p []byte) error {
	for len(p) > 0 {
		n := min(len(p), sliceBytes)
		if err := out.Raw(p[:n]); err != nil {
			return err
		}
		p = p[n:]
		r.yieldToClients()
	}
	return nil
}

// yieldToClients is the pacing of the big value encoders and the writers,
// called between slices: while clients wait (Busy), the goroutine goes
// behind every runnable one (an event loop back from the kernel with
// input but no P is one), without sleeping. Both must keep going: the
// writers free the budget, and a big value the encoder has not copied yet
// is charged to the budget when a writer drops it; sleeping there (Pace
// times each slice) made writers dropping 10 MB values wait for room with
// their shard locked (measured: 60-690 ms of drop budget waits per save).
//
// They ask Wanted, not Busy: an event loop that yielded with its replies
// not yet submitted, or waits for a lock, has no new input (Busy says no)
// yet wants the CPU, and a Gosched when nobody else is runnable costs
// nothing. The traversal's pauses sleep, so they ask Busy: a sleeper's
// timer can wait on the P of a loop blocked in the kernel, and asking
// Wanted there made an idle BGSAVE polled by INFO every 10 ms 1.5-3.6x
// slower (BENCHMARKS.md, savelat).
func (r *run) yieldToClients() {
	if r.pace > 0 && r.wanted != nil && r.wanted() {
		runtime.Gosched()
	}
}

// contended reports whether a paced serializer should pause: clients wait
// (Busy), or, without Busy, writes reached its shard during its last batch.
func (r *run) contended(wrote bool) bool {
	if r.busy != nil {
		return r.busy()
	}
	return wrote
}

var errUnknownObject = errors.New("unknown collection object")

// encode writes one key as an RDB record.
func encode(w *rdb.Writer, e *shard.Entry, exp int64) error {
	key := e.Key()
	if e.HasMeta() {
		if err := w.MCFlags(e.MCFlags()); err != nil {
			return err
		}
	}
	if e.Type() == shard.TypeString {
		return w.String(key, e.Str(), exp)
	}
	return encodeObj(w, key, e.Type(), e.Obj(), exp)
}

// encodeObj writes one collection key as an RDB record.
func encodeObj(w *rdb.Writer, key []byte, t shard.Type, obj any, exp int64) error {
	switch t {
	case shard.TypeList:
		l, ok := obj.(*types.List)
		if !ok {
			return errUnknownObject
		}
		return w.List(key, exp, l.Len(), func(yield func([]byte) bool) { l.Iterate(yield) })
	case shard.TypeSet:
		m, ok := obj.(*types.Set)
		if !ok {
			return errUnknownObject
		}
		return w.Set(key, exp, m.Len(), func(yield func([]byte) bool) { m.Iterate(yield) })
	case shard.TypeHash:
		h, ok := obj.(*types.Hash)
		if !ok {
			return errUnknownObject
		}
		if h.FieldTTLs() > 0 {
			return writeHashTTL(w, key, exp, h) // fieldttl.go
		}
		return w.Hash(key, exp, h.Len(), func(yield func([]byte, []byte) bool) { h.Iterate(yield) })
	case shard.TypeZSet:
		z, ok := obj.(*types.ZSet)
		if !ok {
			return errUnknownObject
		}
		return w.ZSet(key, exp, z.Len(), func(yield func([]byte, float64) bool) { z.Iterate(yield) })
	case shard.TypeStream:
		s, ok := obj.(*types.Stream)
		if !ok {
			return errUnknownObject
		}
		return w.Stream(key, exp, streamToRDB(s))
	}
	return fmt.Errorf("unknown type %d", t)
}

// mergeAux adds extra aux fields to the defaults; one with a default's
// name replaces it (the AOF base sets aof-base 1).
func mergeAux(def, extra []rdb.Aux) []rdb.Aux {
	for _, a := range extra {
		i := 0
		for i < len(def) && def[i].Key != a.Key {
			i++
		}
		if i < len(def) {
			def[i] = a
		} else {
			def = append(def, a)
		}
	}
	return def
}
