package rdb

import (
	"bufio"
	"bytes"
	"cmp"
	"encoding/binary"
	"errors"
	"fmt"
	"hash"
	"io"
	"iter"
	"math"
	"slices"
	"strconv"
	"time"

	"github.com/damselflydb/damselfly/listpack"
)

// Limits are the thresholds that choose the compact encodings, named after
// the Redis settings they mirror. A zero field means the Redis 7.0 default;
// a negative field means 0 (never use the compact encoding).
type Limits struct {
	SetMaxIntsetEntries    int // set-max-intset-entries (512)
	SetMaxListpackEntries  int // set-max-listpack-entries (128; RDB 11+ only)
	SetMaxListpackValue    int // set-max-listpack-value (64)
	HashMaxListpackEntries int // hash-max-listpack-entries (512)
	HashMaxListpackValue   int // hash-max-listpack-value (64)
	ZSetMaxListpackEntries int // zset-max-listpack-entries (128)
	ZSetMaxListpackValue   int // zset-max-listpack-value (64)
	ListNodeBytes          int // list-max-listpack-size -2: bytes per quicklist node (8192)
	ListPackedThreshold    int // elements this large get a PLAIN quicklist node (1 GiB)
	// ListBufferBytes bounds the encoded list nodes the writer holds before
	// it knows the node count (1 MiB). Lists that encode within it get exact
	// ListNodeBytes nodes; past it, the rest of the list is written in nodes of
	// a fixed element count derived from the average element size seen so far.
	ListBufferBytes int
	// NoCompression disables LZF compression of strings (rdbcompression no).
	NoCompression bool
}

// DefaultLimits are Redis 7.0's defaults.
var DefaultLimits = Limits{
	SetMaxIntsetEntries:    512,
	SetMaxListpackEntries:  128,
	SetMaxListpackValue:    64,
	HashMaxListpackEntries: 512,
	HashMaxListpackValue:   64,
	ZSetMaxListpackEntries: 128,
	ZSetMaxListpackValue:   64,
	ListNodeBytes:          8192,
	ListPackedThreshold:    1 << 30,
	ListBufferBytes:        1 << 20,
}

func (l Limits) norm() Limits {
	d := DefaultLimits
	f := func(v *int, def int) {
		switch {
		case *v == 0:
			*v = def
		case *v < 0:
			*v = 0
		}
	}
	f(&l.SetMaxIntsetEntries, d.SetMaxIntsetEntries)
	f(&l.SetMaxListpackEntries, d.SetMaxListpackEntries)
	f(&l.SetMaxListpackValue, d.SetMaxListpackValue)
	f(&l.HashMaxListpackEntries, d.HashMaxListpackEntries)
	f(&l.HashMaxListpackValue, d.HashMaxListpackValue)
	f(&l.ZSetMaxListpackEntries, d.ZSetMaxListpackEntries)
	f(&l.ZSetMaxListpackValue, d.ZSetMaxListpackValue)
	f(&l.ListNodeBytes, d.ListNodeBytes)
	f(&l.ListPackedThreshold, d.ListPackedThreshold)
	f(&l.ListBufferBytes, d.ListBufferBytes)
	if l.ListNodeBytes < 64 {
		l.ListNodeBytes = 64
	}
	return l
}

// Aux is an auxiliary header field (RDB_OPCODE_AUX).
type Aux struct {
	Key, Value string
}

// RedisVersion is the redis-ver DefaultAux announces.
const RedisVersion = "7.0.15"

// DefaultAux returns the aux fields Redis 7.0 writes.
func DefaultAux(usedMem int64) []Aux {
	return []Aux{
		{"redis-ver", RedisVersion},
		{"redis-bits", "64"},
		{"ctime", strconv.FormatInt(time.Now().Unix(), 10)},
		{"used-mem", strconv.FormatInt(usedMem, 10)},
		{"aof-base", "0"},
	}
}

// Writer writes an RDB file as a stream. Methods return the first error
// forever after (the stream is then unusable). Not safe for concurrent use.
type Writer struct {
	bw      *bufio.Writer
	crc     hash.Hash64
	version int
	lim     Limits
	err     error
	dump    bool // value-only mode (DUMP payloads): no key, no expire

	scratch   []byte
	mcScratch []byte
	lp        listpack.Builder
	lzf       LZF // rdbcompression (unless lim.NoCompression)
}

// NewWriter returns a Writer of RDB version (0 = DefaultVersion; 10, 11 and
// 12 are accepted) with DefaultLimits.
func NewWriter(w io.Writer, version int) *Writer { return newWriterSize(w, version, 64<<10) }

// newWriterSize is NewWriter with a buffer of size bytes (DUMP payloads
// are usually small: a 64 KiB buffer per DUMP cost more than the encoding).
func newWriterSize(w io.Writer, version, size int) *Writer {
	if version == 0 {
		version = DefaultVersion
	}
	wr := &Writer{bw: bufio.NewWriterSize(w, size), crc: newCRC(), version: version, lim: DefaultLimits.norm()}
	if version < 10 || version > MaxVersion {
		wr.err = fmt.Errorf("rdb: cannot write RDB version %d (10..%d)", version, MaxVersion)
	}
	return wr
}

// SetLimits replaces the encoding thresholds (zero fields take defaults).
func (w *Writer) SetLimits(l Limits) { w.lim = l.norm() }

// Version is the RDB version being written.
func (w *Writer) Version() int { return w.version }

// Err returns the sticky error, if any.
func (w *Writer) Err() error { return w.err }

// NewRecordWriter returns a Writer that encodes key records only (String,
// List, Set, Hash, ZSet, SelectDB) into w, with no header, checksum or
// footer: the output of several record writers, encoded in parallel, is
// then spliced into one file with Raw. Call Flush before reading w.
func NewRecordWriter(w io.Writer, version int) *Writer {
	wr := NewWriter(w, version)
	wr.crc = nil
	return wr
}

// Flush writes out what the Writer buffers.
func (w *Writer) Flush() error {
	if w.err != nil {
		return w.err
	}
	if err := w.bw.Flush(); err != nil {
		return w.fail(err)
	}
	return nil
}

// Buffered is the number of bytes written but not yet flushed.
func (w *Writer) Buffered() int { return w.bw.Buffered() }

// Raw appends records encoded by a record writer of the same version
// (NewRecordWriter), covering them with the checksum.
func (w *Writer) Raw(p []byte) error {
	w.write(p)
	return w.err
}

// RawDirect is Raw for the slices of a big value: when p does not fit in
// what is left of the buffer, the buffer is flushed first, so that p (at
// least a buffer long) goes to the underlying writer without a copy.
func (w *Writer) RawDirect(p []byte) error {
	if w.err == nil && w.bw.Buffered() > 0 && len(p) > w.bw.Available() {
		if err := w.bw.Flush(); err != nil {
			w.err = err
		}
	}
	w.write(p)
	return w.err
}

func (w *Writer) write(p []byte) {
	if w.err != nil {
		return
	}
	if w.crc != nil {
		w.crc.Write(p)
	}
	if _, err := w.bw.Write(p); err != nil {
		w.err = err
	}
}

func (w *Writer) writeByte(b byte) {
	w.scratch = append(w.scratch[:0], b)
	w.write(w.scratch)
}

func (w *Writer) writeLength(n uint64) {
	w.scratch = appendLength(w.scratch[:0], n)
	w.write(w.scratch)
}

// writeString writes s like rdbSaveRawString: integer encoded when short
// and canonical, LZF compressed when > 20 bytes and that saves >= 4 bytes.
func (w *Writer) writeString(s []byte) {
	if b, ok := appendIntString(w.scratch[:0], s); ok {
		w.scratch = b
		w.write(b)
		return
	}
	w.writeBlob(s)
}

// writeBlob writes s without trying the integer encoding.
func (w *Writer) writeBlob(s []byte) {
	if !w.lim.NoCompression && len(s) > 20 {
		if out, ok := w.lzf.compress(s); ok {
			b := append(w.scratch[:0], 0xc0|encLZF)
			b = appendLength(b, uint64(len(out)))
			b = appendLength(b, uint64(len(s)))
			w.scratch = b
			w.write(b)
			w.write(out)
			return
		}
	}
	w.writeLength(uint64(len(s)))
	w.write(s)
}

func (w *Writer) writeDouble(f float64) {
	w.scratch = binary.LittleEndian.AppendUint64(w.scratch[:0], math.Float64bits(f))
	w.write(w.scratch)
}

// Header writes the magic, the version and the aux fields.
func (w *Writer) Header(aux []Aux) error {
	w.write(fmt.Appendf(nil, "REDIS%04d", w.version))
	for _, a := range aux {
		w.writeByte(opAux)
		w.writeString([]byte(a.Key))
		w.writeString([]byte(a.Value))
	}
	return w.err
}

// AuxMCFlags names the AUX field that carries a memcached item's 32-bit
// client flags (Damselfly's extension; see MCFlags).
const AuxMCFlags = "df-mc-flags"

// MCFlags writes an AUX field (RDB_OPCODE_AUX) AuxMCFlags = flags, in
// decimal: the loader gives those flags to the next key record, and only to
// it. Call it right before that key's record (String, ...). Redis's loader
// and redis-check-rdb accept AUX fields between any two records and ignore
// the names they do not know (rdbLoadRio logs them at debug level), so the
// file stays loadable by Redis, which simply drops the flags. Nothing is
// written for flags 0 (the absence of the field means 0).
func (w *Writer) MCFlags(flags uint32) error {
	if flags == 0 || w.dump {
		return w.err
	}
	w.writeByte(opAux)
	w.writeString([]byte(AuxMCFlags))
	w.writeString(strconv.AppendUint(w.mcScratch[:0], uint64(flags), 10))
	return w.err
}

// SelectDB starts database db; size and expires are the RESIZEDB hints
// (number of keys, number of keys with a TTL).
func (w *Writer) SelectDB(db int, size, expires uint64) error {
	if db < 0 && w.err == nil {
		w.err = fmt.Errorf("rdb: negative db %d", db)
	}
	w.writeByte(opSelectDB)
	w.writeLength(uint64(db))
	w.writeByte(opResizeDB)
	w.writeLength(size)
	w.writeLength(expires)
	return w.err
}

// begin writes the expire opcode (expireAtMs > 0), the type and the key.
func (w *Writer) begin(typ byte, key []byte, expireAtMs int64) {
	if !w.dump {
		if expireAtMs > 0 {
			w.scratch = append(w.scratch[:0], opExpireTimeMs)
			w.scratch = binary.LittleEndian.AppendUint64(w.scratch, uint64(expireAtMs))
			w.write(w.scratch)
		}
	}
	w.writeByte(typ)
	if !w.dump {
		w.writeString(key)
	}
}

func (w *Writer) fail(err error) error {
	if w.err == nil {
		w.err = err
	}
	return w.err
}

// String writes a string key. expireAtMs <= 0 means no expiry.
func (w *Writer) String(key, val []byte, expireAtMs int64) error {
	w.begin(typeString, key, expireAtMs)
	w.writeString(val)
	return w.err
}

// errCount reports an iterator that yielded a different count than declared.
func errCount(what string, key []byte, n, got int) error {
	return fmt.Errorf("rdb: %s %q: declared %d elements, iterator yielded %d", what, key, n, got)
}

// List writes a list of n elements as RDB_TYPE_LIST_QUICKLIST_2 with
// listpack (PACKED) nodes of about ListNodeBytes, elements larger than
// ListPackedThreshold in PLAIN nodes. elems is consumed once; at most
// ListBufferBytes of encoded nodes (plus one node) are held in memory.
func (w *Writer) List(key []byte, expireAtMs int64, n int, elems iter.Seq[[]byte]) error {
	if w.err != nil {
		return w.err
	}
	if n <= 0 {
		return w.fail(fmt.Errorf("rdb: list %q: empty", key))
	}
	lw := listWriter{w: w, key: key, expireAtMs: expireAtMs, n: n}
	w.lp.Reset()
	var iterErr error
	for e := range elems {
		if lw.count == n {
			iterErr = errCount("list", key, n, lw.count+1)
			break
		}
		if !lw.streaming {
			lw.buffer(e)
			continue
		}
		if iterErr = lw.stream(e); iterErr != nil {
			break
		}
		if w.err != nil {
			return w.err
		}
	}
	if iterErr != nil {
		return w.fail(iterErr)
	}
	if lw.count != n {
		return w.fail(errCount("list", key, n, lw.count))
	}
	return lw.finish()
}

// listWriter is one List call's state: nodes are buffered while the list
// may still fit ListBufferBytes (then written with their exact count);
// past it, the rest streams out in nodes of a fixed element count.
type listWriter struct {
	w          *Writer
	key        []byte
	expireAtMs int64
	n          int

	nodes     []listNode
	buffered  int // bytes in nodes
	count     int // elements taken
	streaming bool
	perNode   int // elements per node when streaming
	remaining int // nodes left to write when streaming
	inNode    int // elements in w.lp when streaming
	entBytes  int // sum of entry sizes seen while buffering
}

type listNode struct {
	plain bool
	data  []byte
}

// closeNode moves the node being built (w.lp) to the buffered nodes.
func (lw *listWriter) closeNode() {
	lp := &lw.w.lp
	if lp.Len() == 0 {
		return
	}
	data := bytes.Clone(lp.Finish())
	lw.nodes = append(lw.nodes, listNode{data: data})
	lw.buffered += len(data)
	lp.Reset()
}

func (lw *listWriter) writeNode(plain bool, data []byte) {
	if plain {
		lw.w.writeLength(quicklistNodePlain)
		lw.w.writeString(data)
	} else {
		lw.w.writeLength(quicklistNodePacked)
		lw.w.writeBlob(data)
	}
}

// buffer adds e to the buffered nodes: in a PLAIN node of its own when it
// is large, else in the node being built (closed when e would overflow
// it); past ListBufferBytes, streaming starts.
func (lw *listWriter) buffer(e []byte) {
	lim, lp := &lw.w.lim, &lw.w.lp
	if len(e) >= lim.ListPackedThreshold {
		lw.closeNode()
		lw.nodes = append(lw.nodes, listNode{plain: true, data: bytes.Clone(e)})
		lw.buffered += len(e)
		lw.entBytes += len(e)
		lw.count++
	} else {
		sz := listpack.EntrySize(e)
		if lp.Len() > 0 && (lp.Size()+sz > lim.ListNodeBytes || lp.Len() >= 65534) {
			lw.closeNode()
		}
		lp.AppendString(e)
		lw.entBytes += sz
		lw.count++
	}
	if lw.buffered+lp.Size()-1 > lim.ListBufferBytes && lw.count < lw.n {
		lw.startStreaming()
	}
}

// startStreaming writes the record's head with the node count (the
// buffered nodes plus the rest in nodes of the average size seen so far)
// and the buffered nodes.
func (lw *listWriter) startStreaming() {
	lw.closeNode()
	avg := max(1, lw.entBytes/max(1, lw.count))
	lw.perNode = max(1, min(65535-1, lw.w.lim.ListNodeBytes/avg))
	rest := lw.n - lw.count
	lw.remaining = (rest + lw.perNode - 1) / lw.perNode
	lw.w.begin(typeListQuicklist2, lw.key, lw.expireAtMs)
	lw.w.writeLength(uint64(len(lw.nodes) + lw.remaining))
	for _, nd := range lw.nodes {
		lw.writeNode(nd.plain, nd.data)
	}
	lw.nodes = nil
	lw.streaming = true
}

// stream adds e to the node being streamed, writing it when full.
func (lw *listWriter) stream(e []byte) error {
	lp := &lw.w.lp
	lp.AppendString(e)
	lw.inNode++
	lw.count++
	if lp.Size()-1 > math.MaxUint32-16 {
		return fmt.Errorf("rdb: list %q: node exceeds 4 GiB", lw.key)
	}
	if lw.inNode == lw.perNode || lw.count == lw.n {
		lw.writeNode(false, lp.Finish())
		lp.Reset()
		lw.inNode = 0
		lw.remaining--
	}
	return nil
}

// finish writes a buffered list whole, or checks a streamed one wrote the
// nodes it announced.
func (lw *listWriter) finish() error {
	w := lw.w
	if !lw.streaming {
		lw.closeNode()
		w.begin(typeListQuicklist2, lw.key, lw.expireAtMs)
		w.writeLength(uint64(len(lw.nodes)))
		for _, nd := range lw.nodes {
			lw.writeNode(nd.plain, nd.data)
		}
	} else if lw.remaining != 0 && w.err == nil {
		return w.fail(fmt.Errorf("rdb: list %q: internal node count mismatch", lw.key))
	}
	return w.err
}

// Set writes a set of n distinct members: INTSET when all are integers and
// n <= SetMaxIntsetEntries, LISTPACK (RDB 11+) when n <= SetMaxListpackEntries
// and every member is at most SetMaxListpackValue bytes, else SET.
func (w *Writer) Set(key []byte, expireAtMs int64, n int, members iter.Seq[[]byte]) error {
	if w.err != nil {
		return w.err
	}
	if n <= 0 {
		return w.fail(fmt.Errorf("rdb: set %q: empty", key))
	}
	lim := w.lim
	small := max(lim.SetMaxIntsetEntries, lim.SetMaxListpackEntries)
	if w.version < 11 {
		small = lim.SetMaxIntsetEntries
	}
	if n > small {
		w.begin(typeSet, key, expireAtMs)
		w.writeLength(uint64(n))
		count := 0
		for m := range members {
			if count == n {
				return w.fail(errCount("set", key, n, count+1))
			}
			w.writeString(m)
			count++
			if w.err != nil {
				return w.err
			}
		}
		if count != n {
			return w.fail(errCount("set", key, n, count))
		}
		return w.err
	}
	// Small: buffer to choose the encoding.
	var all [][]byte
	ints := make([]int64, 0, n)
	allInt, fits := true, true
	for m := range members {
		all = append(all, m)
		if allInt {
			if v, ok := parseCanonicalInt(m); ok {
				ints = append(ints, v)
			} else {
				allInt = false
			}
		}
		if len(m) > lim.SetMaxListpackValue {
			fits = false
		}
		if len(all) > n {
			return w.fail(errCount("set", key, n, len(all)))
		}
	}
	if len(all) != n {
		return w.fail(errCount("set", key, n, len(all)))
	}
	switch {
	case allInt && n <= lim.SetMaxIntsetEntries:
		slices.Sort(ints)
		ints = slices.Compact(ints)
		width := 2
		for _, v := range ints {
			if v < math.MinInt32 || v > math.MaxInt32 {
				width = 8
				break
			}
			if v < math.MinInt16 || v > math.MaxInt16 {
				width = 4
			}
		}
		b := make([]byte, 0, 8+width*len(ints))
		b = binary.LittleEndian.AppendUint32(b, uint32(width))
		b = binary.LittleEndian.AppendUint32(b, uint32(len(ints)))
		for _, v := range ints {
			switch width {
			case 2:
				b = binary.LittleEndian.AppendUint16(b, uint16(v))
			case 4:
				b = binary.LittleEndian.AppendUint32(b, uint32(v))
			default:
				b = binary.LittleEndian.AppendUint64(b, uint64(v))
			}
		}
		w.begin(typeSetIntset, key, expireAtMs)
		w.writeBlob(b)
	case w.version >= 11 && fits && n <= lim.SetMaxListpackEntries:
		lp := &w.lp
		lp.Reset()
		for _, m := range all {
			lp.AppendString(m)
		}
		w.begin(typeSetListpack, key, expireAtMs)
		w.writeBlob(lp.Finish())
	default:
		w.begin(typeSet, key, expireAtMs)
		w.writeLength(uint64(n))
		for _, m := range all {
			w.writeString(m)
		}
	}
	return w.err
}

// Hash writes a hash of n fields: LISTPACK when n <= HashMaxListpackEntries
// and every field and value is at most HashMaxListpackValue bytes, else HASH.
func (w *Writer) Hash(key []byte, expireAtMs int64, n int, fields iter.Seq2[[]byte, []byte]) error {
	if w.err != nil {
		return w.err
	}
	if n <= 0 {
		return w.fail(fmt.Errorf("rdb: hash %q: empty", key))
	}
	lim := w.lim
	if n > lim.HashMaxListpackEntries {
		w.begin(typeHash, key, expireAtMs)
		w.writeLength(uint64(n))
		count := 0
		for f, v := range fields {
			if count == n {
				return w.fail(errCount("hash", key, n, count+1))
			}
			w.writeString(f)
			w.writeString(v)
			count++
			if w.err != nil {
				return w.err
			}
		}
		if count != n {
			return w.fail(errCount("hash", key, n, count))
		}
		return w.err
	}
	all := make([][2][]byte, 0, n)
	fits := true
	for f, v := range fields {
		all = append(all, [2][]byte{f, v})
		if len(f) > lim.HashMaxListpackValue || len(v) > lim.HashMaxListpackValue {
			fits = false
		}
		if len(all) > n {
			return w.fail(errCount("hash", key, n, len(all)))
		}
	}
	if len(all) != n {
		return w.fail(errCount("hash", key, n, len(all)))
	}
	if fits {
		lp := &w.lp
		lp.Reset()
		for _, fv := range all {
			lp.AppendString(fv[0])
			lp.AppendString(fv[1])
		}
		w.begin(typeHashListpack, key, expireAtMs)
		w.writeBlob(lp.Finish())
		return w.err
	}
	w.begin(typeHash, key, expireAtMs)
	w.writeLength(uint64(n))
	for _, fv := range all {
		w.writeString(fv[0])
		w.writeString(fv[1])
	}
	return w.err
}

// scoreString formats a score the way the listpack zset stores it.
func scoreString(b []byte, f float64) []byte {
	switch {
	case math.IsInf(f, 1):
		return append(b, "inf"...)
	case math.IsInf(f, -1):
		return append(b, "-inf"...)
	case f == 0 && math.Signbit(f):
		return append(b, "-0"...)
	case f > -4503599627370495 && f < 4503599627370496 && f == math.Trunc(f):
		return strconv.AppendInt(b, int64(f), 10)
	}
	return strconv.AppendFloat(b, f, 'g', 17, 64)
}

// ZSet writes a sorted set of n members: LISTPACK (sorted by score, then
// member) when n <= ZSetMaxListpackEntries and every member is at most
// ZSetMaxListpackValue bytes, else ZSET_2. NaN scores are refused.
func (w *Writer) ZSet(key []byte, expireAtMs int64, n int, members iter.Seq2[[]byte, float64]) error {
	if w.err != nil {
		return w.err
	}
	if n <= 0 {
		return w.fail(fmt.Errorf("rdb: zset %q: empty", key))
	}
	lim := w.lim
	if n > lim.ZSetMaxListpackEntries {
		w.begin(typeZSet2, key, expireAtMs)
		w.writeLength(uint64(n))
		count := 0
		for m, s := range members {
			if count == n {
				return w.fail(errCount("zset", key, n, count+1))
			}
			if math.IsNaN(s) {
				return w.fail(fmt.Errorf("rdb: zset %q: NaN score", key))
			}
			w.writeString(m)
			w.writeDouble(s)
			count++
			if w.err != nil {
				return w.err
			}
		}
		if count != n {
			return w.fail(errCount("zset", key, n, count))
		}
		return w.err
	}
	type zm struct {
		m []byte
		s float64
	}
	all := make([]zm, 0, n)
	fits := true
	for m, s := range members {
		if math.IsNaN(s) {
			return w.fail(fmt.Errorf("rdb: zset %q: NaN score", key))
		}
		all = append(all, zm{m, s})
		if len(m) > lim.ZSetMaxListpackValue {
			fits = false
		}
		if len(all) > n {
			return w.fail(errCount("zset", key, n, len(all)))
		}
	}
	if len(all) != n {
		return w.fail(errCount("zset", key, n, len(all)))
	}
	if fits {
		slices.SortFunc(all, func(a, b zm) int {
			if c := cmp.Compare(a.s, b.s); c != 0 {
				return c
			}
			return bytes.Compare(a.m, b.m)
		})
		lp := &w.lp
		lp.Reset()
		var sb []byte
		for _, e := range all {
			lp.AppendString(e.m)
			sb = scoreString(sb[:0], e.s)
			lp.AppendString(sb)
		}
		w.begin(typeZSetListpack, key, expireAtMs)
		w.writeBlob(lp.Finish())
		return w.err
	}
	w.begin(typeZSet2, key, expireAtMs)
	w.writeLength(uint64(n))
	for _, e := range all {
		w.writeString(e.m)
		w.writeDouble(e.s)
	}
	return w.err
}

// Close writes the EOF opcode and the CRC64, and flushes. It does not close
// the underlying writer.
func (w *Writer) Close() error {
	if w.dump || w.crc == nil {
		return errors.New("rdb: Close on a dump or record writer")
	}
	w.writeByte(opEOF)
	if w.err != nil {
		return w.err
	}
	sum := w.crc.Sum64()
	var b [8]byte
	binary.LittleEndian.PutUint64(b[:], sum)
	if _, err := w.bw.Write(b[:]); err != nil {
		return w.fail(err)
	}
	if err := w.bw.Flush(); err != nil {
		return w.fail(err)
	}
	w.err = errors.New("rdb: writer closed")
	return nil
}
