package snapshot

import (
	"bytes"
	"fmt"
	"sync"
	"time"

	"github.com/damselflydb/damselfly/shard"
	"github.com/damselflydb/damselfly/snapshot/rdb"
)

// Big strings are encoded off the shard lock. A string in a large slab
// chunk (over 16 KiB) is not copied when its bucket is captured, by the
// traversal or by a writer's pre-change hook: the serializer takes a
// reference (shard.Entry.ShareStr; the shard then never writes into those
// bytes, see shard/snapshot_share.go) and queues it to its encoder
// goroutine, which encodes it into a chunk of its own while writes go on.
// A writer capturing a bucket of 10 MB values therefore pays a few
// microseconds instead of copying up to 80 MB with its shard locked.
//
// Memory: a shared value is charged to the budget (budget.go) when it is
// captured, as if copied, because it is extra memory as soon as the key is
// overwritten or deleted; its chunk takes the charge over, and the writer
// releases it once written. When the budget is used up a capture waits for
// room, shard locked: writers then wait for the output, as before, for
// about (bytes over the budget) / (output rate), e.g. 10 MB at 32 MB/s is
// 0.3 s. The traversal waits the same way when writers' captures took the
// room it saw free before its lock hold (a hold starts only while at most
// half the budget is in use), so the bound holds at any write rate. The
// encoder and the writers never take a shard lock, so this cannot deadlock.
// Before a value is changed in place (SETRANGE, SETBIT, APPEND within its
// capacity...), the shard calls Unshare: the serializer copies the bytes
// it has not encoded yet, or the writer waits for the one value being
// encoded.
//
// The serializer stops the encoder and waits for it before Finish, which
// lets the shard write into shared chunks again.

// bigItem is one shared string waiting for the encoder.
type bigItem struct {
	mu     sync.Mutex
	db     int
	key    []byte
	val    []byte // the shard's bytes until done (or a copy after Unshare)
	exp    int64
	meta   bool
	flags  uint32
	charge int64 // bytes charged to the budget
	done   bool  // encoded (or dropped): val no longer read
}

// bigQueue hands shared strings from the shard-locked captures to the
// encoder goroutine.
type bigQueue struct {
	mu     sync.Mutex
	items  []*bigItem
	closed bool
	wake   chan struct{} // capacity 1
	exited chan struct{}
}

// bigPerHold bounds the shared bytes one traversal lock hold captures, so
// the hold stays short and the budget is checked between holds.
const bigPerHold = 8 * chunkBytes

// shareBig captures e (a live key of database db, expiring at exp) by
// reference if it is a big string; false means encode it now.
func (s *serializer) shareBig(db int, e *shard.Entry, exp int64) bool {
	if e.Type() != shard.TypeString {
		return false
	}
	val, ok := e.ShareStr()
	if !ok {
		return false
	}
	it := &bigItem{db: db, exp: exp}
	e.Share(it)
	it.key = bytes.Clone(e.Key())
	it.val = val
	if e.HasMeta() {
		it.meta, it.flags = true, e.MCFlags()
	}
	it.charge = int64(len(val) + len(it.key) + 64) // + the record's opcodes, lengths, expiry and flags
	t := time.Now()
	if !s.r.mem.acquire(it.charge, s.r.abort) {
		it.done = true
		return true
	}
	if !s.traversing {
		s.hookBudget += time.Since(t)
	}
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
func (s *serializer) Unshare(token any) {
	it := token.(*bigItem)
	it.mu.Lock()
	if !it.done {
		it.val = bytes.Clone(it.val)
	}
	it.mu.Unlock()
}

// encodeBig is the encoder goroutine: it encodes the shared strings, one
// chunk each, until stopBig.
func (s *serializer) encodeBig() {
	q := &s.big
	defer close(q.exited)
	var buf appendBuffer
	rw := rdb.NewRecordWriter(&buf, s.r.version)
	rw.SetLimits(s.r.limits)
	for {
		q.mu.Lock()
		items, closed := q.items, q.closed
		q.items = nil
		q.mu.Unlock()
		if len(items) == 0 {
			if closed {
				return
			}
			<-q.wake
			continue
		}
		for _, it := range items {
			it.mu.Lock()
			if s.r.failed() != nil {
				it.done, it.val = true, nil
				it.mu.Unlock()
				continue
			}
			buf.b = s.r.getBuf()
			var err error
			if it.meta {
				err = rw.MCFlags(it.flags)
			}
			if err == nil {
				err = rw.String(it.key, it.val, it.exp)
			}
			if err == nil {
				err = rw.Flush()
			}
			it.done, it.val = true, nil
			it.mu.Unlock()
			if err != nil {
				s.r.fail(fmt.Errorf("snapshot: key %q: %w", it.key, err))
				continue
			}
			c := chunk{db: it.db, data: buf.b}
			s.r.mem.adjust(int64(len(c.data)) - it.charge) // the chunk takes the item's charge over
			select {
			case s.queue <- c:
			case <-s.r.abort:
				s.r.written(c)
			}
		}
	}
}

// stopBig waits until the encoder has encoded everything queued and ended.
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
}
