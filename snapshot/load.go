package snapshot

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/damselflydb/damselfly/shard"
	"github.com/damselflydb/damselfly/shard/types"
	"github.com/damselflydb/damselfly/snapshot/rdb"
)

// loadBatch is the number of keys handed to a shard's loader at once;
// loadBatchBytes bounds the key and string bytes a batch copies.
const (
	loadBatch      = 256
	loadBatchBytes = 256 << 10
)

// unknownSizeKeys bounds the RESIZEDB hint when the input's size is not
// known (a replica's full sync): at most this many keys are reserved
// (16 MiB of index at worst; the rest of a larger dataset grows as usual).
const unknownSizeKeys = 1 << 20

// loadItem is one key handed to a shard's loader: its key, and a string's
// value, are copied into the batch's buf (the reader reuses its buffers);
// a collection is coll (whose Key field is unused).
type loadItem struct {
	h            uint64
	db           int
	keyOff, kLen int
	vLen         int // string value, right after the key
	expireAtMs   int64
	mcFlags      uint32
	coll         *rdb.Entry
}

// batch is a batch of keys for one shard; batches are recycled.
type batch struct {
	items []loadItem
	buf   []byte
	name  string // the input's name, for errors
}

func (b *batch) full() bool { return len(b.items) >= loadBatch || len(b.buf) >= loadBatchBytes }

// entry rebuilds the decoded entry of item i (viewing b.buf), in *tmp
// for a string.
func (b *batch) entry(i int, tmp *rdb.Entry) *rdb.Entry {
	it := &b.items[i]
	key := b.buf[it.keyOff : it.keyOff+it.kLen : it.keyOff+it.kLen]
	if it.coll != nil {
		it.coll.Key = key
		return it.coll
	}
	val := b.buf[it.keyOff+it.kLen : it.keyOff+it.kLen+it.vLen]
	*tmp = rdb.Entry{DB: it.db, Key: key, Type: rdb.String, String: val, ExpireAtMs: it.expireAtMs, MCFlags: it.mcFlags}
	return tmp
}

// Load reads an RDB file into st (all shards in parallel), dropping expired
// keys; on any error nothing is kept (the caller refuses to start) and the
// error names the file, offset and what was expected.
//
// One goroutine decodes and checks the file (rdb.LoadWith: framing, limits,
// CRC64) and routes each key to its shard, copying keys and strings into
// recycled batch buffers; one goroutine per shard builds the values and
// inserts them under the shard lock, a batch at a time. RESIZEDB hints
// pre-size each shard's index (bounded by the input's size when r is a
// file), so loading does not re-hash keys in split after split.
// Load is meant for an empty store (start-up, DEBUG RELOAD, a replica's
// full sync): on error every database of st is emptied. Keys that cannot
// be represented (a database index beyond st's) and duplicate keys are
// errors; hash fields with their own TTL are loaded without it, with a
// warning per key in Stats.Warnings (fieldttl.go), so that a server never
// starts with part of its dump and later saves over the rest.
func Load(st *shard.Store, r io.Reader, name string) (Stats, error) {
	return LoadWith(st, r, name, LoadOptions{})
}

// LoadOptions tune LoadWith.
type LoadOptions struct {
	// Read, when set, counts the bytes read from the input so far (INFO's
	// loading_loaded_bytes while a server loads).
	Read *atomic.Int64
	// Limits are the encoding thresholds loaded collections are built
	// under: the server's live configuration, so OBJECT ENCODING reads the
	// same before and after a reload (nil: types.DefaultLimits).
	Limits *types.Limits
}

// countingReader counts what it reads.
type countingReader struct {
	r io.Reader
	n *atomic.Int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n.Add(int64(n))
	return n, err
}

// LoadWith is Load with options.
func LoadWith(st *shard.Store, r io.Reader, name string, lo LoadOptions) (Stats, error) {
	start := time.Now()
	l := newLoader(st, lo.Limits)
	p := l.producer()
	maxKeys := uint64(unknownSizeKeys)
	if f, ok := r.(*os.File); ok {
		if fi, err := f.Stat(); err == nil && fi.Mode().IsRegular() {
			maxKeys = uint64(fi.Size()) / 3 // a key record takes at least 3 bytes
		}
	}
	opt := rdb.Options{Reuse: true, Listpacks: true, ResizeDB: func(db int, keys, expires uint64) {
		l.reserve(db, min(keys, maxKeys), min(expires, keys, maxKeys))
	}}
	in := r
	if lo.Read != nil {
		in = &countingReader{r: r, n: lo.Read}
	}
	info, err := rdb.LoadWith(bufio.NewReaderSize(in, 1<<20), name, opt, func(e *rdb.Entry) error { return p.add(e, name) })
	if err == nil {
		p.flush()
	}
	keys, err := l.finish(err, name)
	if err != nil {
		return Stats{}, err
	}
	return Stats{Keys: keys, Bytes: info.Bytes, Duration: time.Since(start), Functions: info.Functions,
		Warnings: append(info.Warnings, l.warn.result()...)}, nil
}

// loader inserts keys into st: one goroutine per shard builds the values
// and inserts them under the shard lock, a batch at a time; any number of
// producers (one per input stream) route decoded keys to them.
type loader struct {
	st     *shard.Store
	shards []*shard.Shard
	chans  []chan *batch
	free   []chan *batch
	nowMs  int64
	lim    *types.Limits // encoding thresholds (nil: defaults)
	wg     sync.WaitGroup
	errMu  sync.Mutex
	werr   error
	stop   chan struct{}
	failed sync.Once
	keys   atomic.Int64
	warn   warnings
}

var errStopped = errors.New("stopped")

func newLoader(st *shard.Store, lim *types.Limits) *loader {
	shards := st.Shards()
	l := &loader{st: st, shards: shards, lim: lim, chans: make([]chan *batch, len(shards)), free: make([]chan *batch, len(shards)),
		stop: make(chan struct{}), nowMs: time.Now().UnixMilli()}
	for i, sh := range shards {
		ch := make(chan *batch, 4)
		l.chans[i] = ch
		l.free[i] = make(chan *batch, 6)
		l.wg.Add(1)
		go func() {
			defer l.wg.Done()
			var n int64
			var tmp rdb.Entry
			for b := range ch {
				sh.Lock()
				for j := range b.items {
					it := &b.items[j]
					sh.DB(it.db).Prefetch(it.h, it.expireAtMs > 0 || it.coll != nil && it.coll.ExpireAtMs > 0)
				}
				for j := range b.items {
					if err := insert(sh, b.items[j].h, b.entry(j, &tmp), l.lim); err != nil {
						l.fail(fmt.Errorf("%s: %w", b.name, err))
						break
					}
					n++
				}
				sh.Unlock()
				clear(b.items) // drop collections
				b.items, b.buf = b.items[:0], b.buf[:0]
				if cap(b.buf) <= 4*loadBatchBytes { // not one grown by a huge value
					select {
					case l.free[i] <- b:
					default:
					}
				}
			}
			l.keys.Add(n)
		}()
	}
	return l
}

func (l *loader) fail(err error) {
	l.errMu.Lock()
	if l.werr == nil {
		l.werr = err
	}
	l.errMu.Unlock()
	l.failed.Do(func() { close(l.stop) })
}

// reserve pre-sizes every shard's database db for keys keys in all (a
// hint; the shards share them evenly).
func (l *loader) reserve(db int, keys, expires uint64) {
	if db < 0 || db >= l.st.DBNum() || keys == 0 {
		return // (the first key of a db out of range reports the error)
	}
	n := uint64(len(l.shards))
	for _, sh := range l.shards {
		sh.Lock()
		sh.DB(db).Reserve(int(keys/n), int(expires/n))
		sh.Unlock()
	}
}

// finish waits for the inserters and returns the keys loaded or the first
// error (err, the producers' own, first unless it only reports a stop). On
// error every database of the store is emptied.
func (l *loader) finish(err error, name string) (int64, error) {
	for _, ch := range l.chans {
		close(ch)
	}
	l.wg.Wait()
	if err == nil || errors.Is(err, errStopped) {
		l.errMu.Lock()
		if l.werr != nil {
			err = l.werr
		}
		l.errMu.Unlock()
	}
	if err != nil {
		all := l.st.All()
		l.st.LockMany(&all)
		for _, sh := range l.shards {
			for db := 0; db < l.st.DBNum(); db++ {
				sh.FlushDB(db, true)
			}
		}
		l.st.UnlockMany(&all)
		return 0, err
	}
	return l.keys.Load(), nil
}

// producer batches one input's keys per shard.
type producer struct {
	l       *loader
	pending []*batch
}

func (l *loader) producer() *producer {
	p := &producer{l: l, pending: make([]*batch, len(l.shards))}
	for i := range p.pending {
		p.pending[i] = &batch{}
	}
	return p
}

func (p *producer) send(i int) bool {
	l := p.l
	select {
	case l.chans[i] <- p.pending[i]:
	case <-l.stop:
		return false
	}
	select {
	case p.pending[i] = <-l.free[i]:
	default:
		p.pending[i] = &batch{items: make([]loadItem, 0, loadBatch)}
	}
	return true
}

// add routes one decoded key (copied) to its shard.
func (p *producer) add(e *rdb.Entry, name string) error {
	st := p.l.st
	if e.DB < 0 || e.DB >= st.DBNum() {
		return fmt.Errorf("%s: key %q is in DB %d, but only %d databases are configured (--dbnum)", name, e.Key, e.DB, st.DBNum())
	}
	if e.Expired(p.l.nowMs) {
		return nil
	}
	if e.HashFieldExpireAtMs != nil {
		// fieldttl.go: expired fields go; the others keep their deadlines.
		if expired := pruneExpiredFields(e, p.l.nowMs); len(e.Hash) == 0 && expired > 0 {
			return nil // every field had expired: Redis drops the key too
		}
	}
	h := shard.Hash(e.Key)
	i := st.Route(e.Key, h)
	b := p.pending[i]
	b.name = name
	it := loadItem{h: h, db: e.DB, keyOff: len(b.buf), kLen: len(e.Key)}
	b.buf = append(b.buf, e.Key...)
	if e.Type == rdb.String {
		it.vLen, it.expireAtMs, it.mcFlags = len(e.String), e.ExpireAtMs, e.MCFlags
		b.buf = append(b.buf, e.String...)
	} else {
		c := *e // the reader reuses e; collections are fresh
		it.coll = &c
	}
	b.items = append(b.items, it)
	if b.full() && !p.send(i) {
		return errStopped
	}
	return nil
}

// flush hands over the partial batches.
func (p *producer) flush() {
	for i := range p.pending {
		if len(p.pending[i].items) > 0 && !p.send(i) {
			return
		}
	}
}

// insert stores one loaded key whose hash is h (shard locked).
func insert(sh *shard.Shard, h uint64, e *rdb.Entry, lim *types.Limits) error {
	d := sh.DB(e.DB)
	v, err := ValueWith(e, lim)
	if err != nil {
		return fmt.Errorf("key %q (DB %d): %w", e.Key, e.DB, err)
	}
	if v.Type != shard.TypeString && v.Obj == nil {
		// An empty collection is not stored, but a duplicate is still an error.
		if _, dup := d.Find(h, e.Key); dup {
			return fmt.Errorf("duplicate key %q in DB %d", e.Key, e.DB)
		}
		return nil
	}
	if !d.Add(h, e.Key, v) {
		return fmt.Errorf("duplicate key %q in DB %d", e.Key, e.DB)
	}
	return nil
}
