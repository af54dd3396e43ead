package snapshot

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/damselflydb/damselfly/internal/wbsync"
	"github.com/damselflydb/damselfly/shard"
	"github.com/damselflydb/damselfly/snapshot/block"
	"github.com/damselflydb/damselfly/snapshot/rdb"
)

// The native format (--dbformat native): one file per shard, written by
// that shard's own serializer and writer goroutines in parallel, plus a
// summary file that commits them.
//
// A shard file is a block stream (package block: compressed blocks, each
// with the CRC-32C of its bytes) whose decompressed content is a complete
// RDB stream of that shard's keys (header, SELECTDB/RESIZEDB, records, EOF,
// CRC64): the same records as the RDB dump, so every type and every rule
// of the RDB writer and reader applies unchanged, and decompressing a shard
// file gives a file redis-check-rdb accepts.
//
// The summary, at the dump's path, is NativeMagic followed by a JSON
// Summary: format version, snapshot id, shard count, codec, keys per
// database, aux fields and, per shard file, its name, length and CRC-32C.
// Shard files are named "<dump>.<id>.<shard>.dfs" next to it.
//
// Invariants:
//   - A save writes and fsyncs every shard file under a fresh id, then the
//     summary to a temporary file, fsyncs it, renames it over the dump and
//     fsyncs the directory; only then are the previous snapshot's shard
//     files removed. A crash at any moment leaves one complete snapshot.
//   - A load checks every file's length and CRC-32C against the summary,
//     every block's CRC-32C, and each RDB stream's CRC64; any mismatch is an
//     error naming the file and offset, and nothing is kept.
//   - Loading re-hashes every key to the current shard count: the number
//     of files need not match --shards.

// NativeMagic starts a native summary file ("REDIS" starts an RDB).
const NativeMagic = "DFLYNATIVE1\n"

// NativeFormatVersion is the version of the native layout written.
const NativeFormatVersion = 1

// maxSummary bounds the summary file a loader reads.
const maxSummary = 16 << 20

// NativeOptions tune SaveNative.
type NativeOptions struct {
	Options             // OnCut, Aux, Progress, Pace, Busy, Version (of the inner RDB streams)
	Codec   block.Codec // compression of the blocks
	Level   int         // codec level (see block.NewWriter)
	// Dirs, when set, stripes the shard files over these directories
	// (stripe.go); the summary stays at the dump's path.
	Dirs []string
	// SyncWindow, when > 0, has the writeback of each shard file started
	// every SyncWindow bytes (package wbsync: rdb-save-incremental-fsync).
	SyncWindow int64
}

// Summary describes a native snapshot.
type Summary struct {
	Format    string            `json:"format"` // "damselfly-native"
	Version   int               `json:"version"`
	ID        string            `json:"id"`
	CreatedMs int64             `json:"created_ms"`
	Shards    int               `json:"shards"`
	Codec     string            `json:"codec"`
	DBKeys    []uint64          `json:"db_keys"`
	DBExpires []uint64          `json:"db_expires"`
	Aux       map[string]string `json:"aux,omitempty"`
	Files     []NativeFile      `json:"files"`
	// Functions are the FUNCTION libraries' codes at the cut.
	Functions []string `json:"functions,omitempty"`
}

// NativeFile is one shard file of a native snapshot.
type NativeFile struct {
	Name     string `json:"name"`
	Bytes    int64  `json:"bytes"`
	CRC32C   uint32 `json:"crc32c"`
	RawBytes int64  `json:"raw_bytes"` // its RDB stream, uncompressed
	// Dir is the file's directory when striped (stripe.go), absolute;
	// empty: next to the summary.
	Dir string `json:"dir,omitempty"`
}

// IsNative reports whether the file at path is a native summary.
func IsNative(path string) (bool, error) {
	f, err := os.Open(path)
	if err != nil {
		return false, err
	}
	defer f.Close()
	var m [len(NativeMagic)]byte
	n, err := io.ReadFull(f, m[:])
	if err != nil && err != io.ErrUnexpectedEOF && err != io.EOF {
		return false, err
	}
	return string(m[:n]) == NativeMagic, nil
}

func newID() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// SaveNative writes a native snapshot of st whose summary is path (see the
// invariants above) while writes continue.
func SaveNative(ctx context.Context, st *shard.Store, path string, opt NativeOptions) (Stats, error) {
	if !opt.SlotHeld {
		if err := st.AcquireSnapshot(ctx); err != nil {
			return Stats{}, err
		}
		defer st.ReleaseSnapshot()
	}
	start := time.Now()
	dir, base := filepath.Dir(path), filepath.Base(path)
	id := newID()
	nshards := len(st.Shards())
	files := make([]*os.File, nshards)
	fdirs, names := stripeLayout(dir, base, id, nshards, opt.Dirs) // stripe.go
	cleanup := func() {
		for i, f := range files {
			if f != nil {
				f.Close()
				os.Remove(filepath.Join(fdirs[i], names[i]))
			}
		}
	}
	for i := range files {
		f, err := os.OpenFile(filepath.Join(fdirs[i], names[i]), os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o644)
		if err != nil {
			cleanup()
			return Stats{}, err
		}
		files[i] = f
	}
	ws := make([]io.Writer, nshards)
	for i, f := range files {
		ws[i] = f
		if opt.SyncWindow > 0 {
			ws[i] = wbsync.New(f, opt.SyncWindow)
		}
	}
	sum, stats, err := writeNative(ctx, st, ws, opt)
	for i := 0; err == nil && i < nshards; i++ {
		err = files[i].Sync()
	}
	if err != nil {
		cleanup()
		return Stats{}, err
	}
	for _, f := range files {
		if cerr := f.Close(); err == nil {
			err = cerr
		}
	}
	files = files[:0:0]
	sum.ID = id
	for i := range sum.Files {
		sum.Files[i].Name = names[i]
		if fdirs[i] != dir {
			sum.Files[i].Dir = fdirs[i]
		}
	}
	removeNew := func() {
		for i, n := range names {
			os.Remove(filepath.Join(fdirs[i], n))
		}
	}
	if err == nil {
		err = syncStripeDirs(dir, fdirs)
	}
	if err != nil {
		removeNew()
		return Stats{}, err
	}
	js, err := json.MarshalIndent(sum, "", " ")
	if err != nil {
		removeNew()
		return Stats{}, err
	}
	tmp := filepath.Join(dir, fmt.Sprintf("temp-%s-%s", base, id))
	err = writeFileSync(tmp, append([]byte(NativeMagic), append(js, '\n')...))
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err == nil {
		err = syncDir(dir)
	}
	if err != nil {
		os.Remove(tmp)
		removeNew()
		return Stats{}, err
	}
	// The new snapshot is committed: drop the shard files of older ones.
	if old, gerr := filepath.Glob(filepath.Join(dir, globEscape(base)+".*.dfs")); gerr == nil {
		for _, o := range old {
			if !strings.HasPrefix(filepath.Base(o), base+"."+id+".") {
				os.Remove(o)
			}
		}
	}
	removeOldStripes(dir, base, id, opt.Dirs)
	stats.Duration = time.Since(start)
	for _, f := range sum.Files {
		stats.Bytes += f.Bytes
	}
	stats.Bytes += int64(len(js) + len(NativeMagic) + 1)
	return stats, nil
}

func globEscape(s string) string {
	r := strings.NewReplacer(`*`, `\*`, `?`, `\?`, `[`, `\[`, `\`, `\\`)
	return r.Replace(s)
}

func writeFileSync(name string, data []byte) error {
	f, err := os.OpenFile(name, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	_, err = f.Write(data)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

// writeNative streams shard i of st, as of one instant, to ws[i] as a
// block stream of an RDB stream. Every shard has its own serializer and
// its own writer goroutine (encoding, compression and I/O in parallel).
func writeNative(ctx context.Context, st *shard.Store, ws []io.Writer, opt NativeOptions) (Summary, Stats, error) {
	prog := opt.Progress
	if prog == nil {
		prog = new(Progress)
	}
	prog.Keys.Store(0)
	prog.Bytes.Store(0)
	version := opt.Version
	if version == 0 {
		version = rdb.DefaultVersion
	}
	if version < 10 || version > rdb.MaxVersion {
		return Summary{}, Stats{}, fmt.Errorf("snapshot: cannot write RDB version %d", version)
	}
	r := &run{version: version, abort: make(chan struct{}), keys: &prog.Keys,
		limits: rdb.Limits{NoCompression: true}, pace: opt.Pace, busy: opt.Busy, keyDelay: opt.KeyDelay, perShard: true, mem: newBudget(opt.MaxExtraMemory, opt.Gate)}
	r.bufs.max = r.mem.limit / 2
	if opt.Gate != nil {
		opt.Gate.begin(&r.waits)
		defer opt.Gate.end() // a connection waiting at the gate never outlives the save
	}
	sers, keys, expires, mem, functions := r.cut(st, opt.Options, prog)
	aux := append(rdb.DefaultAux(mem), opt.Aux...)
	sum := Summary{Format: "damselfly-native", Version: NativeFormatVersion, CreatedMs: r.cutMs, Shards: len(sers),
		Codec: opt.Codec.String(), DBKeys: keys, DBExpires: expires, Aux: map[string]string{}, Files: make([]NativeFile, len(sers)), Functions: functions}
	for _, a := range aux {
		sum.Aux[a.Key] = a.Value
	}
	stop := make(chan struct{})
	defer close(stop)
	go func() {
		select {
		case <-ctx.Done():
			r.fail(ctx.Err())
		case <-stop:
		}
	}()
	var wg sync.WaitGroup
	for i, s := range sers {
		wg.Add(2)
		go func() {
			defer wg.Done()
			s.run()
			close(s.queue)
		}()
		go func() {
			defer wg.Done()
			f, err := writeShard(ws[i], s, r, opt, aux, &prog.Bytes)
			if err != nil {
				r.fail(err)
			}
			sum.Files[i] = f
		}()
	}
	wg.Wait()
	r.mem.dropSpares()
	if err := r.failed(); err != nil {
		return Summary{}, Stats{}, err
	}
	stats := Stats{Keys: r.keys.Load(), Paused: time.Duration(r.paused.Load()), InFlightPeak: r.mem.maxUsed()}
	stats.SparesKept, stats.SparesReused = r.mem.spareCounts()
	stats.Reserve, stats.ReserveTime = r.reserved, r.reserveTime
	if opt.Gate != nil {
		opt.Gate.open() // every serializer is done: count the last waits
	}
	r.waits.fill(&stats)
	return sum, stats, nil
}

// writeShard is the writer of one shard's file: it drains the shard's
// queue (to the end, even after a failure, so the serializer never
// blocks).
func writeShard(w io.Writer, s *serializer, r *run, opt NativeOptions, aux []rdb.Aux, written *atomic.Int64) (NativeFile, error) {
	cw := &countingWriter{w: w, n: new(atomic.Int64)}
	bw, err := block.NewWriter(cw, opt.Codec, opt.Level)
	var out *rdb.Writer
	if err == nil {
		out = rdb.NewWriter(bw, r.version)
		err = out.Header(aux)
	}
	cur := -1
	var last int64
	var scratch []byte // writeBig's slices
	for c := range s.queue {
		if err != nil || r.failed() != nil {
			r.written(c)
			continue
		}
		if c.db != cur {
			out.SelectDB(c.db, s.keysAt[c.db], s.expiresAt[c.db])
			cur = c.db
		}
		err = r.writeChunk(out, c, &scratch)
		r.written(c)
		if n := cw.n.Load(); n != last {
			written.Add(n - last)
			last = n
		}
	}
	if err == nil && r.failed() == nil {
		err = out.Close()
		if err == nil {
			err = bw.Close()
		}
	}
	if err != nil {
		return NativeFile{}, err
	}
	written.Add(cw.n.Load() - last)
	return NativeFile{Bytes: bw.Size(), CRC32C: bw.CRC(), RawBytes: bw.RawSize()}, nil
}

// ReadSummary reads and checks a native summary file.
func ReadSummary(path string) (Summary, error) {
	var sum Summary
	f, err := os.Open(path)
	if err != nil {
		return sum, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxSummary+1))
	if err != nil {
		return sum, fmt.Errorf("%s: %w", path, err)
	}
	if len(data) > maxSummary {
		return sum, fmt.Errorf("%s: native summary larger than %d bytes", path, maxSummary)
	}
	rest, ok := bytes.CutPrefix(data, []byte(NativeMagic))
	if !ok {
		return sum, fmt.Errorf("%s: not a native snapshot summary", path)
	}
	dec := json.NewDecoder(bytes.NewReader(rest))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&sum); err != nil {
		return sum, fmt.Errorf("%s: bad native summary: %w", path, err)
	}
	switch {
	case sum.Format != "damselfly-native":
		return sum, fmt.Errorf("%s: format %q, want damselfly-native", path, sum.Format)
	case sum.Version != NativeFormatVersion:
		return sum, fmt.Errorf("%s: native format version %d, this build reads %d", path, sum.Version, NativeFormatVersion)
	case sum.Shards != len(sum.Files) || sum.Shards < 1 || sum.Shards > 4096:
		return sum, fmt.Errorf("%s: %d shards but %d files", path, sum.Shards, len(sum.Files))
	}
	for _, nf := range sum.Files {
		if nf.Name == "" || strings.ContainsAny(nf.Name, `/\`) || nf.Name == "." || nf.Name == ".." {
			return sum, fmt.Errorf("%s: bad shard file name %q", path, nf.Name)
		}
		if err := checkStripeDir(nf.Dir); err != nil {
			return sum, fmt.Errorf("%s: %w", path, err)
		}
	}
	return sum, nil
}

// checkedFile counts and checksums what is read from a file.
type checkedFile struct {
	r   io.Reader
	n   int64
	crc uint32
	rd  *atomic.Int64
}

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

func (c *checkedFile) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	c.crc = crc32.Update(c.crc, castagnoli, p[:n])
	if c.rd != nil {
		c.rd.Add(int64(n))
	}
	return n, err
}

// LoadNative loads the native snapshot whose summary is path into st (all
// files decoded in parallel, every key re-hashed to st's shards). Like
// Load, on any error nothing is kept.
func LoadNative(st *shard.Store, path string, lo LoadOptions) (Stats, error) {
	start := time.Now()
	sum, err := ReadSummary(path)
	if err != nil {
		return Stats{}, err
	}
	dir := filepath.Dir(path)
	l := newLoader(st, lo.Limits)
	// Pre-size from the summary's counts, bounded by what the files on
	// disk could hold (a key takes at least 3 bytes of RDB, compressed at
	// most ~8x), so a bad summary cannot make us reserve without bound.
	var onDisk uint64
	for _, nf := range sum.Files {
		if fi, err := os.Stat(nf.filePath(dir)); err == nil {
			onDisk += uint64(fi.Size())
		}
	}
	for db := range min(len(sum.DBKeys), len(sum.DBExpires), st.DBNum()) {
		k := min(sum.DBKeys[db], onDisk*8/3)
		l.reserve(db, k, min(sum.DBExpires[db], k))
	}
	errs := make([]error, len(sum.Files))
	var total int64
	var wg sync.WaitGroup
	for i, nf := range sum.Files {
		total += nf.Bytes
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = loadShardFile(l, nf.filePath(dir), nf, lo)
			if errs[i] != nil {
				l.fail(errs[i])
			}
		}()
	}
	wg.Wait()
	err = errors.Join(errs...)
	if err != nil {
		// The first real error, not a "stopped" of the files that
		// stopped because of it.
		for _, e := range errs {
			if e != nil && !errors.Is(e, errStopped) {
				err = e
				break
			}
		}
	}
	keys, err := l.finish(err, path)
	if err != nil {
		return Stats{}, err
	}
	return Stats{Keys: keys, Bytes: total, Duration: time.Since(start), Functions: sum.Functions}, nil
}

func loadShardFile(l *loader, name string, nf NativeFile, lo LoadOptions) error {
	f, err := os.Open(name)
	if err != nil {
		return fmt.Errorf("native snapshot: %w", err)
	}
	defer f.Close()
	cf := &checkedFile{r: f}
	if lo.Read != nil {
		cf.rd = lo.Read
	}
	br := block.NewReader(cf, name)
	defer br.Close()
	p := l.producer()
	if _, err := rdb.LoadWith(br, name, rdb.Options{Reuse: true, Listpacks: true},
		func(e *rdb.Entry) error { return p.add(e, name) }); err != nil {
		return err
	}
	// Nothing may follow the RDB stream, and the file must be the one
	// the summary names.
	if n, err := io.Copy(io.Discard, br); err != nil || n != 0 {
		return fmt.Errorf("%s: %d bytes after the RDB stream (%v)", name, n, err)
	}
	if _, err := io.Copy(io.Discard, cf); err != nil {
		return err
	}
	if cf.n != nf.Bytes || cf.crc != nf.CRC32C {
		return fmt.Errorf("%s: %d bytes with CRC-32C %08x, the summary says %d bytes with %08x", name, cf.n, cf.crc, nf.Bytes, nf.CRC32C)
	}
	p.flush()
	return nil
}
