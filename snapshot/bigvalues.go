package snapshot

import (
	"bytes"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/damselflydb/damselfly/shard"
	"github.com/damselflydb/damselfly/shard/types"
	"github.com/damselflydb/damselfly/snapshot/rdb"
)

// Big values are encoded off the shard lock. A string in a large slab
// chunk (over 16 KiB) is not copied when its bucket is captured, by the
// traversal or by a writer's pre-change hook: the serializer takes a
// reference (shard.Entry.ShareStr; the shard then never writes into those
// bytes, see shard/snapshot_share.go) and queues it to its encoder
// goroutine, which encodes it into a chunk of its own while writes go on.
// A writer capturing a bucket of 10 MB values therefore pays a few
// microseconds instead of copying up to 80 MB with its shard locked. A
// collection whose MemoryUsage is over bigObj is captured the same way
// (shard.Entry.ShareObj): the encoder reads the live object unlocked,
// which is safe because reads change nothing in a collection and every
// change goes through Modify (Unshare) or replaces or drops the object
// (Dropped); both make the serializer clone the object first if the
// encoder has not encoded it yet (or wait for the one encoding running).
// So a writer that reaches a bucket of big collections pays at most one
// clone, of the collection it changes, instead of encoding the bucket; a
// RENAME or DEL of a big collection not encoded yet also pays a clone
// (Delete and Forget look alike to the shard, and after RENAME the object
// lives on under the new key).
//
// Memory (budget.go): a shared value still live in the store is not extra
// memory, so capturing it charges nothing; it is only counted among the
// budget's references, which keep the traversal from running ahead of the
// output. It is charged when it becomes extra memory: when the encoder is
// about to copy it into a chunk (the encoder waits for room, off the
// lock; the chunk then takes the charge over and the writer releases it),
// or when the store lets go of it before it was encoded (overwritten,
// deleted: shard calls Dropped; changed in place: Unshare copies it). Such
// a dropped value is encoded first, ahead of live ones, since it is the
// memory the save holds that nothing else does. So a writer that captures
// a bucket of big values waits for nothing: a hook costs microseconds
// whatever the sizes. When writers drop values not yet written faster
// than the output drains them, the budget passes its soft limit (half) and
// the dropping writer's connection is made to wait at the WriterGate
// before its next write, holding no lock (gate.go). Only if the whole
// budget fills all the same (writers that do not wait at the gate, or many
// at once) does a dropping writer wait for room with its shard locked:
// that last resort is what keeps the bound a constant (Redis's fork pays the same
// case in copy-on-write memory), and waits.go counts it apart ("drop
// budget wait"). The encoder never waits for room while a dropped value is
// pending, and no goroutine holding a bigItem's mutex waits for room, so
// the dropping writer's wait always ends as the output drains.
// Before a value is changed in place (SETRANGE, SETBIT, APPEND within its
// capacity...), the shard calls Unshare: the serializer copies the bytes
// it has not encoded yet, or the writer waits for the one value being
// encoded.
//
// A string stored raw (no compression) is not copied into a chunk: its
// chunk holds only the record's head and the item, and the writer takes
// the value from the reference sliceBytes at a time, each slice copied
// into its own cache-warm scratch buffer with it.mu locked and written
// unlocked (writeBig); an Unshare meanwhile copies only what is left and
// waits at most for one slice's memmove. The item stays charged until
// written, as if copied (the store may drop the bytes meanwhile).
//
// A string an overwrite replaced (Overwritten, not Dropped) leaves its whole
// chunk to the item: once the item is done (written, or copied by the
// encoder) nothing references that chunk, and it goes to the budget's
// spares for a later overwrite of the same size (budget.go,
// shard.ChunkRecycler): a warm chunk instead of a new one whose pages fault.
// Once an item is done (Done), the shard overwrites its chunk in place.
//
// The serializer stops the encoder and waits for it, and for the writer
// to have written every value it left in the shard's bytes, before
// Finish, which lets the shard write into shared chunks again.

// bigItem is one shared string waiting for the encoder.
type bigItem struct {
	mu  sync.Mutex
	db  int
	key []byte
	val []byte // the shard's bytes until done (or a copy after Unshare)
	// A big collection (bigObj) instead of a string: its type and the
	// shard's object until done (or a clone after Unshare or Dropped).
	typ    shard.Type
	obj    any
	exp    int64
	meta   bool
	flags  uint32
	charge int64 // bytes charged to the budget once extra memory
	// state is itemLive (referenced, not charged), itemCharged (charged:
	// dropped by the store, or being encoded) or itemDone (encoded or
	// given up: val no longer read). It moves only forward; the step from
	// live to charged is taken by whoever wins its CompareAndSwap.
	state atomic.Int32
	// refs, once the item's chunk is queued with the bytes to write from
	// the reference (writeBig), is its serializer's bigQueue.refs.
	refs *sync.WaitGroup
	// chunk is the store's whole chunk once an overwrite replaced it
	// (Overwritten): it goes to the budget's spares when the item is done.
	chunk []byte
}

const (
	itemLive int32 = iota
	itemCharged
	itemDone
)

// bigQueue hands shared strings from the shard-locked captures to the
// encoder goroutine.
type bigQueue struct {
	mu     sync.Mutex
	items  []*bigItem
	closed bool
	wake   chan struct{} // capacity 1
	exited chan struct{}
	// refs counts the queued chunks whose value the writer writes from
	// the shard's bytes (writeBig): the shard's snapshot must not end
	// (Finish) before they are written.
	refs sync.WaitGroup
}

// bigObj is the memory (MemoryUsage) from which a collection is captured
// by reference, as a big string is.
const bigObj = 16 << 10

// bigPerHold bounds the shared bytes one traversal lock hold captures, so
// the hold stays short and the budget is checked between holds.
const bigPerHold = 8 * chunkBytes

// shareBig captures e (a live key of database db, expiring at exp) by
// reference if it is a big string; false means encode it now.
func (s *serializer) shareBig(db int, e *shard.Entry, exp int64) bool {
	it := &bigItem{db: db, exp: exp, typ: e.Type()}
	if it.typ == shard.TypeString {
		val, ok := e.ShareStr()
		if !ok {
			return false
		}
		it.val = val
		it.charge = int64(len(val))
	} else {
		obj, ok := e.ShareObj()
		if !ok {
			return false
		}
		m, ok := obj.(interface{ MemoryUsage() int })
		if !ok || m.MemoryUsage() < bigObj {
			return false
		}
		it.obj = obj
		it.charge = int64(m.MemoryUsage())
	}
	e.Share(it)
	it.key = bytes.Clone(e.Key())
	if e.HasMeta() {
		it.meta, it.flags = true, e.MCFlags()
	}
	it.charge += int64(len(it.key) + 64) // + the record's opcodes, lengths, expiry and flags
	s.r.mem.ref(it.charge)               // live: referenced, not charged
	s.heldBig += it.charge
	s.r.keys.Add(1)
	q := &s.big
	q.mu.Lock()
	q.items = append(q.items, it)
	q.mu.Unlock()
	select {
	case q.wake <- struct{}{}:
	default:
	}
	return true
}

// Unshare implements shard.StrSharer (shard locked): the bytes of the
// value token names are about to change in place.
func (s *serializer) Unshare(token any) { s.detach(token.(*bigItem)) }

// detach makes the item stop reading the shard's bytes or object: a copy
// (the encoder is done with it, or has not started: it.mu) is extra
// memory, charged outside it.mu.
func (s *serializer) detach(it *bigItem) {
	t := time.Now()
	it.mu.Lock()
	copied := it.state.Load() != itemDone
	if copied {
		if it.obj != nil {
			it.obj = cloneObj(it.obj)
		} else {
			it.val = bytes.Clone(it.val)
		}
	}
	it.mu.Unlock()
	s.r.waits.note(causeCopy, time.Since(t))
	if copied {
		s.dropped(it)
	}
}

// Overwritten implements shard.ChunkRecycler (shard locked): an overwrite
// replaced the string token names, whose whole chunk nothing but the item
// reads any more. It is Dropped, and the chunk is recycled (done) once the
// item no longer reads it.
func (s *serializer) Overwritten(token any, chunk []byte) {
	it := token.(*bigItem)
	it.mu.Lock()
	done := it.state.Load() == itemDone
	if !done {
		it.chunk = chunk
	}
	it.mu.Unlock()
	if done {
		s.r.mem.addSpare(chunk)
		return
	}
	s.dropped(it)
}

// Done implements shard.ChunkRecycler (shard locked): a string item is
// done once written or copied (itemDone is its last state, stored after
// its last read of the shard's bytes, under it.mu).
func (s *serializer) Done(token any) bool {
	it := token.(*bigItem)
	return it.typ == shard.TypeString && it.state.Load() == itemDone
}

// Spare implements shard.ChunkRecycler (shard locked).
func (s *serializer) Spare(n int) []byte { return s.r.mem.spare(n) }

// done marks it done (it.mu held) and returns the chunk to recycle, if an
// overwrite left it one.
func (it *bigItem) done() []byte {
	it.val, it.obj = nil, nil
	it.state.Store(itemDone)
	c := it.chunk
	it.chunk = nil
	return c
}

// Dropped implements shard.StrSharer (shard locked): the store no longer
// holds the value token names (overwritten or deleted; a collection's
// object may live on under another key, RENAME, so it is cloned first).
func (s *serializer) Dropped(token any) {
	it := token.(*bigItem)
	if it.typ != shard.TypeString {
		s.detach(it)
		return
	}
	s.dropped(it)
}

// cloneObj deep-copies a collection object.
func cloneObj(obj any) any {
	switch o := obj.(type) {
	case *types.List:
		return o.Clone()
	case *types.Set:
		return o.Clone()
	case *types.Hash:
		return o.Clone()
	case *types.ZSet:
		return o.Clone()
	case *types.Stream:
		return o.Clone()
	}
	panic(fmt.Sprintf("snapshot: cannot clone %T", obj))
}

// dropped charges it to the budget if nobody did yet and moves it to the
// front of the encoder's work. The charge waits for room only when the
// whole budget is in use (the last resort, see above), shard locked; past
// the soft limit it marks the shard, so that the writer's connection
// waits at the WriterGate before its next write, unlocked (gate.go).
func (s *serializer) dropped(it *bigItem) {
	if !it.state.CompareAndSwap(itemLive, itemCharged) {
		return
	}
	s.r.mem.ref(-it.charge)
	if !s.r.mem.tryAcquire(it.charge) {
		t := time.Now()
		s.r.mem.acquire(it.charge, s.r.abort)
		d := time.Since(t)
		s.r.waits.note(causeDropBudget, d)
		s.r.waits.budgetNs.Add(int64(d))
	}
	s.markGate()
	select {
	case s.big.wake <- struct{}{}:
	default:
	}
}

// encodeBig is the encoder goroutine: it encodes the shared strings, one
// chunk each, until stopBig. Dropped values (already charged) go first; a
// live one waits for room in the budget, but never while a dropped one is
// pending.
func (s *serializer) encodeBig() {
	q := &s.big
	defer close(q.exited)
	var buf appendBuffer
	rw := rdb.NewRecordWriter(&buf, s.r.version)
	rw.SetLimits(s.r.limits)
	var pending []*bigItem
	for {
		q.mu.Lock()
		pending = append(pending, q.items...)
		closed := q.closed
		q.items = nil
		q.mu.Unlock()
		if len(pending) == 0 {
			if closed {
				return
			}
			<-q.wake
			continue
		}
		i := slices.IndexFunc(pending, func(it *bigItem) bool { return it.state.Load() == itemCharged })
		if i < 0 {
			i = 0
			it := pending[0]
			if s.r.failed() == nil {
				w := s.r.mem.waitCh()
				if !s.r.mem.tryAcquireLive(it.charge) {
					select {
					case <-w:
					case <-q.wake:
					case <-s.r.abort:
					}
					continue
				}
				if it.state.CompareAndSwap(itemLive, itemCharged) {
					s.r.mem.ref(-it.charge)
				} else {
					s.r.mem.release(it.charge) // dropped meanwhile: charged already
				}
			}
		}
		it := pending[i]
		pending = slices.Delete(pending, i, i+1)
		if s.r.failed() != nil {
			it.mu.Lock()
			it.done() // (no spares: the save ends)
			it.mu.Unlock()
			continue
		}
		buf.b = s.r.getBuf(0)
		ref, spare, err := s.encodeItem(it, &buf, rw)
		if spare != nil {
			s.r.mem.addSpare(spare)
		}
		if err != nil {
			s.r.fail(fmt.Errorf("snapshot: key %q: %w", it.key, err))
			continue
		}
		c := chunk{db: it.db, data: buf.b}
		if ref > 0 {
			// The writer writes the value from the reference: the chunk
			// holds the item (charged: a value the store drops meanwhile
			// is extra memory until written) and the serializer's
			// finish waits for it.
			c.big, c.bigBytes = it, int64(ref)
			it.refs = &q.refs
			q.refs.Add(1)
		}
		s.r.mem.adjust(c.charge() - it.charge) // the chunk takes the item's charge over
		select {
		case s.queue <- c:
		case <-s.r.abort:
			s.r.written(c)
		}
		if s.r.keyDelay != nil {
			// rdb-key-save-delay slows the big values too, so that
			// tests can hold a save of big values open.
			if d := s.r.keyDelay(); d > 0 {
				time.Sleep(d)
			}
		}
		// A value under sliceBytes is one slice: without this the
		// encoder went from one to the next for tens of ms (100 KB
		// values, runtime trace in BENCHMARKS.md).
		s.r.yieldToClients()
	}
}

// encodeItem encodes a charged item into buf and marks it done, or, for a
// string stored raw, appends only its record's head and leaves the item
// charged, not done, for the writer to write its bytes straight from the
// reference (writeBig); ref is then the length of the value. spare is the
// chunk an overwrite left to recycle once the item is done.
func (s *serializer) encodeItem(it *bigItem, buf *appendBuffer, rw *rdb.Writer) (ref int, spare []byte, err error) {
	it.mu.Lock()
	defer it.mu.Unlock()
	if it.meta {
		err = rw.MCFlags(it.flags)
	}
	// (A big chunk may hold a short value after an overwrite in place:
	// one of up to 11 bytes may take the integer encoding.) Big strings
	// are written raw even with rdbcompression: compressing one takes
	// milliseconds per MB with it.mu held, and an overwrite of the key
	// (Overwritten, shard locked) would wait for it.
	if err == nil && it.obj == nil && len(it.val) > 11 {
		if err = rw.Flush(); err == nil {
			buf.b = rdb.AppendStringHead(buf.b, it.key, len(it.val), it.exp)
			return len(it.val), nil, nil
		}
	}
	if err == nil {
		if it.obj != nil {
			err = encodeObj(rw, it.key, it.typ, it.obj, it.exp)
		} else {
			err = rw.String(it.key, it.val, it.exp)
		}
	}
	if err == nil {
		err = rw.Flush()
	}
	return 0, it.done(), err
}

// writeBig writes the bytes of a big string stored raw, the rest of its
// record after the head its chunk carried, from the reference, not from a
// chunk it was first copied into (that copy, of the whole value into a
// cold buffer, was 43% of a SAVE of 10 MB values). Each sliceBytes slice
// is copied into scratch, a buffer the writer reuses (so it stays in
// cache), with it.mu locked, then checksummed and written unlocked:
// write(2) straight from the value measured 3x the kernel time of write(2)
// from the cache-warm scratch (BENCHMARKS.md, savecopy), and a writer that
// changes the value (Unshare) waits at most for one slice's memmove, not
// for a write. it.val is what is left to write: Unshare copies only that
// rest, the very bytes the value had, and the output goes on from the
// copy. The writer yields to clients between slices (yieldToClients) and
// marks the item done once the chunk is written (bigDone).
func (r *run) writeBig(out *rdb.Writer, it *bigItem, scratch *[]byte) error {
	for {
		it.mu.Lock()
		part := it.val[:min(len(it.val), sliceBytes)]
		*scratch = append((*scratch)[:0], part...)
		it.val = it.val[len(part):]
		last := len(it.val) == 0 || r.failed() != nil
		if last {
			it.val = nil
		}
		it.mu.Unlock()
		if err := out.RawDirect(*scratch); err != nil || last {
			return err
		}
		r.yieldToClients()
	}
}

// bigDone marks a big string's item done once its chunk is written (or
// dropped by a failed save): the item no longer reads the shard's bytes,
// so the serializer's finish may end the shard's snapshot (bigQueue.refs).
// The chunk an overwrite left goes to the spares.
func (r *run) bigDone(it *bigItem) {
	it.mu.Lock()
	spare := it.done()
	it.mu.Unlock()
	if spare != nil && r.failed() == nil {
		r.mem.addSpare(spare)
	}
	it.refs.Done()
}

// markGate marks the shard (locked by the writer) when the writer's charge
// left the budget over its soft limit (gate.go).
func (s *serializer) markGate() {
	if s.r.mem.gate != nil && s.r.mem.overSoft() {
		s.sh.MarkGate()
	}
}

// stopBig waits until the encoder has encoded everything queued and ended,
// and the writer has written every value it left in the shard's bytes.
func (s *serializer) stopBig() {
	q := &s.big
	q.mu.Lock()
	q.closed = true
	q.mu.Unlock()
	select {
	case q.wake <- struct{}{}:
	default:
	}
	<-q.exited
	q.refs.Wait()
}
