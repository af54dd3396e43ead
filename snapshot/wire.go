package snapshot

import (
	"bufio"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"sync"
	"time"

	"github.com/damselflydb/damselfly/shard"
	"github.com/damselflydb/damselfly/snapshot/block"
	"github.com/damselflydb/damselfly/snapshot/rdb"
)

// The parallel sync format: a full sync between Damselfly nodes carries
// the native snapshot (one block stream per shard, each written by that
// shard's own serializer and writer goroutines, exactly the content of a
// native shard file) multiplexed onto one connection in frames.
//
//	stream  = SyncMagic frame* (the header frame first, the trailer last)
//	frame   = tag uvarint, length uvarint, [crc32c 4 bytes LE], payload
//	tag     0: header (JSON SyncHeader, with crc32c)
//	        1: trailer (JSON Summary: per shard stream its length, CRC-32C
//	           and raw size; functions; aux; with crc32c)
//	        2+i: the next bytes of shard i's block stream (no frame
//	           checksum: every block inside carries its own CRC-32C)
//
// Invariants:
//   - The header is written at the cut (before any data frame), the trailer
//     after every shard stream is complete; nothing follows it.
//   - A reader checks every control frame's CRC-32C, every block's CRC-32C,
//     every shard's RDB CRC64 and end, and each stream's length and CRC-32C
//     against the trailer. Any mismatch fails the whole load, naming the
//     stream and offset; the caller keeps its previous dataset.
//   - The reader decodes the shard streams in parallel (one goroutine each)
//     and re-hashes every key to its own store's shard count.

// SyncMagic starts a parallel sync stream (block.Magic starts a compressed
// RDB, "REDIS" a plain one).
const SyncMagic = "DFSYNCP1"

const (
	tagHeader  = 0
	tagTrailer = 1
	tagData    = 2

	// syncFrameBytes is how much of a shard's stream a frame gathers
	// (about one compressed block).
	syncFrameBytes = 256 << 10
	// maxSyncFrame bounds a data frame a reader accepts, maxSyncControl a
	// header or trailer.
	maxSyncFrame   = 2*block.MaxStored + syncFrameBytes
	maxSyncControl = maxSummary
	// maxSyncReserve bounds the keys a reader pre-sizes for from the
	// header's counts.
	maxSyncReserve = 1 << 25
)

// SyncHeader opens a parallel sync stream.
type SyncHeader struct {
	Format    string   `json:"format"` // "damselfly-sync"
	Version   int      `json:"version"`
	Shards    int      `json:"shards"`
	Codec     string   `json:"codec"`
	DBKeys    []uint64 `json:"db_keys"`
	DBExpires []uint64 `json:"db_expires"`
}

// syncMux writes frames to one writer from the shards' writer goroutines.
type syncMux struct {
	mu     sync.Mutex
	w      io.Writer
	err    error
	header []byte // set at the cut, written before the first frame after it
	buf    []byte
	n      int64
}

func (m *syncMux) writeLocked(p []byte) {
	if m.err != nil {
		return
	}
	n, err := m.w.Write(p)
	m.n += int64(n)
	m.err = err
}

func (m *syncMux) frameLocked(tag uint64, p []byte) {
	b := binary.AppendUvarint(m.buf[:0], tag)
	b = binary.AppendUvarint(b, uint64(len(p)))
	if tag < tagData {
		b = binary.LittleEndian.AppendUint32(b, crc32.Checksum(p, castagnoli))
	}
	m.buf = b
	m.writeLocked(b)
	m.writeLocked(p)
}

// frame writes one frame (the pending header first).
func (m *syncMux) frame(tag uint64, p []byte) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.header != nil {
		h := m.header
		m.header = nil
		m.frameLocked(tagHeader, h)
	}
	m.frameLocked(tag, p)
	return m.err
}

// frameWriter gathers one shard's block stream into data frames.
type frameWriter struct {
	m   *syncMux
	tag uint64
	buf []byte
}

func (f *frameWriter) Write(p []byte) (int, error) {
	f.buf = append(f.buf, p...)
	if len(f.buf) >= syncFrameBytes {
		if err := f.flush(); err != nil {
			return 0, err
		}
	}
	return len(p), nil
}

func (f *frameWriter) flush() error {
	if len(f.buf) == 0 {
		return nil
	}
	err := f.m.frame(f.tag, f.buf)
	f.buf = f.buf[:0]
	return err
}

// WriteSync streams a point-in-time snapshot of st to w in the parallel
// sync format (see above) while writes continue: each shard's serializer
// and writer run in their own goroutines, as for a native dump, and their
// frames interleave on w in the order they are produced. Stats.Bytes is
// what was written to w.
func WriteSync(ctx context.Context, st *shard.Store, w io.Writer, opt NativeOptions) (Stats, error) {
	if !opt.SlotHeld {
		if err := st.AcquireSnapshot(ctx); err != nil {
			return Stats{}, err
		}
		defer st.ReleaseSnapshot()
		opt.SlotHeld = true
	}
	start := time.Now()
	m := &syncMux{w: w}
	m.mu.Lock()
	m.writeLocked([]byte(SyncMagic))
	m.mu.Unlock()
	shards := st.Shards()
	fws := make([]*frameWriter, len(shards))
	ws := make([]io.Writer, len(shards))
	for i := range fws {
		fws[i] = &frameWriter{m: m, tag: tagData + uint64(i)}
		ws[i] = fws[i]
	}
	userCut := opt.OnCut
	opt.OnCut = func() {
		if userCut != nil {
			userCut()
		}
		// Every shard is locked: count the keys for the reader's
		// pre-sizing, and leave the header for the first frame (no I/O
		// under the locks).
		h := SyncHeader{Format: "damselfly-sync", Version: NativeFormatVersion, Shards: len(shards), Codec: opt.Codec.String(),
			DBKeys: make([]uint64, st.DBNum()), DBExpires: make([]uint64, st.DBNum())}
		for _, sh := range shards {
			for db := range h.DBKeys {
				if d := sh.PeekDB(db); d != nil {
					h.DBKeys[db] += uint64(d.Len())
					h.DBExpires[db] += uint64(d.ExpiresLen())
				}
			}
		}
		js, _ := json.Marshal(h)
		m.mu.Lock()
		m.header = js
		m.mu.Unlock()
	}
	sum, stats, err := writeNative(ctx, st, ws, opt)
	for _, f := range fws {
		if err == nil {
			err = f.flush()
		}
	}
	if err == nil {
		var js []byte
		if js, err = json.Marshal(sum); err == nil {
			err = m.frame(tagTrailer, js)
		}
	}
	if err != nil {
		return Stats{}, err
	}
	stats.Bytes = m.n
	stats.Duration = time.Since(start)
	return stats, nil
}

// syncStream is one shard stream being loaded: the demultiplexer hands it
// frame payloads through ch.
type syncStream struct {
	ch   chan []byte
	free chan []byte
	cur  []byte
	used []byte
	stop <-chan struct{}
	// Counted by the demultiplexer.
	n   int64
	crc uint32
}

func (s *syncStream) Read(p []byte) (int, error) {
	for len(s.cur) == 0 {
		if s.used != nil {
			select {
			case s.free <- s.used[:0]:
			default:
			}
			s.used = nil
		}
		select {
		case b, ok := <-s.ch:
			if !ok {
				return 0, io.EOF
			}
			s.cur, s.used = b, b
		case <-s.stop:
			return 0, errStopped
		}
	}
	n := copy(p, s.cur)
	s.cur = s.cur[n:]
	return n, nil
}

// LoadSync loads a parallel sync stream (starting with SyncMagic) from r
// into st, which should be empty: the shard streams are decoded in
// parallel and every key is re-hashed to st's shards. On any error nothing
// is kept and the error names the stream and offset. Stats.Bytes is what
// was read from r, Stats.Functions the primary's FUNCTION libraries.
func LoadSync(st *shard.Store, r io.Reader, name string, lo LoadOptions) (Stats, error) {
	start := time.Now()
	sr := &syncReader{in: bufio.NewReaderSize(r, 1<<20), name: name}
	hdr, err := sr.readHeader()
	if err != nil {
		return Stats{}, err
	}
	l := newLoader(st, lo.Limits)
	for db := range min(len(hdr.DBKeys), len(hdr.DBExpires), st.DBNum()) {
		k := min(hdr.DBKeys[db], maxSyncReserve)
		l.reserve(db, k, min(hdr.DBExpires[db], k))
	}
	streams, errs, wg := startSyncStreams(l, hdr.Shards, name)
	sum, derr := sr.demux(l, streams)
	for _, s := range streams {
		close(s.ch)
	}
	if derr != nil && !errors.Is(derr, errStopped) {
		l.fail(derr)
	}
	wg.Wait()
	// The first real error of a stream (a corrupt block names its stream
	// and offset), unless the demultiplexer itself failed: then the streams
	// only saw their input end.
	if derr == nil || errors.Is(derr, errStopped) {
		derr = firstStreamError(errs)
	}
	if derr == nil {
		derr = sr.checkTrailer(sum, streams)
	}
	keys, err := l.finish(derr, name)
	if err != nil {
		return Stats{}, err
	}
	return Stats{Keys: keys, Bytes: sr.off, Duration: time.Since(start), Functions: sum.Functions, Warnings: l.warn.result()}, nil
}

// syncReader reads the frames of a parallel sync stream, counting the
// offset its errors name.
type syncReader struct {
	in   *bufio.Reader
	name string
	off  int64
}

func (r *syncReader) fail(format string, a ...any) error {
	return fmt.Errorf("%s: offset %d: %w: %s", r.name, r.off, block.ErrCorrupt, fmt.Sprintf(format, a...))
}

// readHeader reads the magic and the header frame and checks them.
func (r *syncReader) readHeader() (SyncHeader, error) {
	var magic [len(SyncMagic)]byte
	if _, err := io.ReadFull(r.in, magic[:]); err != nil || string(magic[:]) != SyncMagic {
		return SyncHeader{}, r.fail("not a parallel sync stream (bad magic)")
	}
	r.off += int64(len(magic))
	tag, js, err := r.readFrame(nil)
	if err != nil {
		return SyncHeader{}, err
	}
	var hdr SyncHeader
	if tag != tagHeader {
		return SyncHeader{}, r.fail("the stream does not start with its header")
	}
	if err := json.Unmarshal(js, &hdr); err != nil {
		return SyncHeader{}, r.fail("bad header: %v", err)
	}
	if hdr.Format != "damselfly-sync" || hdr.Version != NativeFormatVersion {
		return SyncHeader{}, r.fail("format %q version %d, this build reads damselfly-sync version %d", hdr.Format, hdr.Version, NativeFormatVersion)
	}
	if hdr.Shards < 1 || hdr.Shards > 4096 {
		return SyncHeader{}, r.fail("bad shard count %d", hdr.Shards)
	}
	return hdr, nil
}

// readFrame returns a frame's tag and payload (into buf), checking a
// control frame's length and CRC-32C.
func (r *syncReader) readFrame(buf []byte) (uint64, []byte, error) {
	fstart := r.off
	tag, err := binary.ReadUvarint(r.in)
	if err == io.EOF {
		return 0, nil, fmt.Errorf("%s: offset %d: truncated: the stream ended before its trailer", r.name, r.off)
	}
	if err != nil {
		return 0, nil, fmt.Errorf("%s: offset %d: %w", r.name, r.off, err)
	}
	n, err := binary.ReadUvarint(r.in)
	if err != nil {
		return 0, nil, fmt.Errorf("%s: frame at offset %d: truncated header: %w", r.name, fstart, noEOF(err))
	}
	r.off += int64(uvarintLen(tag) + uvarintLen(n))
	limit := uint64(maxSyncFrame)
	if tag < tagData {
		limit = maxSyncControl
	}
	if n > limit {
		return 0, nil, r.fail("frame at offset %d: length %d over %d", fstart, n, limit)
	}
	var crc [4]byte
	if tag < tagData {
		if _, err := io.ReadFull(r.in, crc[:]); err != nil {
			return 0, nil, fmt.Errorf("%s: frame at offset %d: truncated: %w", r.name, fstart, noEOF(err))
		}
		r.off += 4
	}
	if cap(buf) < int(n) {
		buf = make([]byte, n)
	}
	buf = buf[:n]
	if k, err := io.ReadFull(r.in, buf); err != nil {
		r.off += int64(k)
		return 0, nil, fmt.Errorf("%s: frame at offset %d: truncated after %d of %d bytes: %w", r.name, fstart, k, n, noEOF(err))
	}
	r.off += int64(n)
	if tag < tagData && crc32.Checksum(buf, castagnoli) != binary.LittleEndian.Uint32(crc[:]) {
		return 0, nil, r.fail("frame at offset %d: checksum mismatch", fstart)
	}
	return tag, buf, nil
}

// startSyncStreams starts one decoding goroutine per shard stream; each
// records its error in errs and stops the others.
func startSyncStreams(l *loader, shards int, name string) ([]*syncStream, []error, *sync.WaitGroup) {
	streams := make([]*syncStream, shards)
	errs := make([]error, shards)
	wg := &sync.WaitGroup{}
	for i := range streams {
		s := &syncStream{ch: make(chan []byte, 4), free: make(chan []byte, 6), stop: l.stop}
		streams[i] = s
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = loadSyncStream(l, s, fmt.Sprintf("%s, shard %d stream", name, i))
			if errs[i] != nil {
				l.fail(errs[i])
			}
		}()
	}
	return streams, errs, wg
}

// demux hands each data frame to its shard stream, counting its bytes and
// CRC-32C, up to the trailer, which it returns; nothing may follow it.
func (r *syncReader) demux(l *loader, streams []*syncStream) (Summary, error) {
	var sum Summary
	var buf []byte
	for {
		tag, p, err := r.readFrame(buf)
		if err != nil {
			return sum, err
		}
		if tag == tagTrailer {
			if err := json.Unmarshal(p, &sum); err != nil {
				return sum, r.fail("bad trailer: %v", err)
			}
			break
		}
		if tag == tagHeader || tag-tagData >= uint64(len(streams)) {
			return sum, r.fail("frame with tag %d in a stream of %d shards", tag, len(streams))
		}
		s := streams[tag-tagData]
		s.n += int64(len(p))
		s.crc = crc32.Update(s.crc, castagnoli, p)
		var b []byte
		select {
		case b = <-s.free:
		default:
		}
		b = append(b[:0], p...)
		select {
		case s.ch <- b:
		case <-l.stop:
			return sum, errStopped
		}
		buf = p
	}
	if _, err := r.in.ReadByte(); err != io.EOF {
		return sum, r.fail("bytes after the trailer")
	}
	return sum, nil
}

// firstStreamError is the first error a shard stream met other than being
// stopped because another failed.
func firstStreamError(errs []error) error {
	for _, e := range errs {
		if e != nil && !errors.Is(e, errStopped) {
			return e
		}
	}
	return nil
}

// checkTrailer compares each shard stream's length and CRC-32C with what
// the trailer says.
func (r *syncReader) checkTrailer(sum Summary, streams []*syncStream) error {
	if len(sum.Files) != len(streams) {
		return r.fail("the trailer lists %d shard streams, the header %d", len(sum.Files), len(streams))
	}
	for i, s := range streams {
		if f := sum.Files[i]; s.n != f.Bytes || s.crc != f.CRC32C {
			return r.fail("shard %d stream: %d bytes with CRC-32C %08x, the trailer says %d bytes with %08x", i, s.n, s.crc, f.Bytes, f.CRC32C)
		}
	}
	return nil
}

// loadSyncStream decodes one shard stream (a block stream of an RDB
// stream) and routes its keys; it reads its channel to the end.
func loadSyncStream(l *loader, s *syncStream, name string) error {
	br := block.NewReader(s, name)
	defer br.Close()
	defer func() { _, _ = io.Copy(io.Discard, s) }()
	p := l.producer()
	if _, err := rdb.LoadWith(br, name, rdb.Options{Reuse: true, Listpacks: true}, func(e *rdb.Entry) error { return p.add(e, name) }); err != nil {
		return err
	}
	if n, err := io.Copy(io.Discard, br); err != nil || n != 0 {
		return fmt.Errorf("%s: %d bytes after the RDB stream (%v)", name, n, err)
	}
	p.flush()
	return nil
}

func noEOF(err error) error {
	if err == io.EOF {
		return io.ErrUnexpectedEOF
	}
	return err
}

func uvarintLen(v uint64) int {
	var b [binary.MaxVarintLen64]byte
	return binary.PutUvarint(b[:], v)
}
