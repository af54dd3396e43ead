package shard

import (
	"context"
	"slices"

	"github.com/damselflydb/damselfly/dash"
)

// Point-in-time snapshots without fork (docs/architecture.md, "Forkless
// snapshots"). This file is the whole surface package snapshot sees: start a
// snapshot on a locked shard, traverse a database's buckets, finish.
//
// Invariants:
//   - Every bucket of every Dashtable carries a version. StartSnapshot raises
//     the shard's epoch to V and makes every table stamp the buckets it
//     changes with V. A bucket whose version is below V still holds exactly
//     what it held at the cut.
//   - Such a bucket is captured (its entries handed to the sink) and stamped
//     V exactly once: either by Traverse, or by the main table's pre-change
//     hook, before the change that would alter it. So the sink sees every key
//     that existed at the cut with its value at the cut, and no key created
//     after it (those buckets are already stamped V).
//   - Only the main tables need the hook: the expires tables index the same
//     entries, and every change to an entry goes through its main table
//     first (DB.Put, DB.Delete, DB.Modify).
//   - A command cannot change a stored value of any type without the hook:
//     the types' mutating methods (streams' groups, consumers and PELs
//     included) need the types.W that DB.Modify returns after running it,
//     and a string's bytes are writable only through Entry.StrW with that
//     W, or DB.ModifyStr (writegate.go).
//   - The snapshot keeps the databases as they were at the cut, by index:
//     SWAPDB only swaps the shard's pointers, and FLUSHDB/FLUSHALL leave a
//     pinned database to the snapshot, which releases it in Finish. Nothing
//     changes a flushed database any more, so its traversal simply finishes.
//   - New databases are created with the shard's current epoch, so keys
//     written into them after the cut are never captured.
//   - One snapshot at a time per store (AcquireSnapshot): a bucket stamped
//     by a newer snapshot would look captured to an older one.

// SnapshotSink receives the entries of buckets as they were at the cut. Its
// methods run under the shard lock.
type SnapshotSink interface {
	// Entry is called for each entry of a captured bucket of database db
	// (the index at the cut). The entry (its bytes and object) is valid only
	// during the call and must not be changed: copy or encode it, or
	// share a big value's bytes or object (snapshot_share.go).
	Entry(db int, e *Entry)
	// AfterHook is called after every run of the pre-change hook (captured
	// tells whether it captured a bucket), before the write that triggered
	// it goes on. The sink may call Traverse here (so writers help the
	// snapshot along) and may block to bound its memory, but must not lock
	// any shard.
	AfterHook(captured bool)
}

// Snapshot is a snapshot running on one shard.
type Snapshot struct {
	sh      *Shard
	version uint64
	dbs     []*DB // databases at the cut, by index (nil: empty)
	sink    SnapshotSink
	flushed []*DB // pinned databases flushed meanwhile; released by Finish
	// batch gathers the entries of one Traverse call before they are
	// handed out (see Traverse); entry is the one Entry handed to the sink,
	// reused so that a capture allocates nothing per key. Both are used
	// only under the shard lock.
	batch []batchEntry
	entry Entry
	touch byte // sink for the gathering loads, so they are not optimized away
}

// batchEntry is an entry gathered by Traverse: its ref and chunk bytes.
type batchEntry struct {
	ref dash.Ref
	mem []byte
}

// StartSnapshot starts a snapshot of the shard at this instant. The shard
// must be locked, and no other snapshot may run on it (AcquireSnapshot).
func (sh *Shard) StartSnapshot(sink SnapshotSink) *Snapshot {
	if sh.snap != nil {
		panic("shard: a snapshot is already running")
	}
	sh.epoch++
	s := &Snapshot{sh: sh, version: sh.epoch, dbs: slices.Clone(sh.dbs), sink: sink}
	for i, d := range s.dbs {
		if d == nil {
			continue
		}
		d.main.SetVersion(s.version)
		d.expires.SetVersion(s.version)
		d.main.OnBeforeChange(func(b dash.Bucket) {
			sink.AfterHook(s.capture(i, d, b))
		})
		d.startSharing(sink) // snapshot_share.go
	}
	sh.snap = s
	return s
}

// Size reports the number of keys and of keys with an expiry of database db
// at the cut (call it right after StartSnapshot, still locked).
func (s *Snapshot) Size(db int) (keys, expires int) {
	if d := s.dbs[db]; d != nil {
		return d.main.Len(), d.expires.Len()
	}
	return 0, 0
}

// Traverse captures the not yet captured buckets of the next small batch of
// database db's buckets from cursor (0 to start) and returns the cursor to
// continue from, 0 when the database is done. The shard must be locked; take
// the lock per call so writers interleave. It may also be called from
// AfterHook: every table is in a consistent state whenever its hook runs
// (dash calls hooks before it changes anything), and Traverse only reads
// entries and raises bucket versions.
func (s *Snapshot) Traverse(db int, cursor uint64) uint64 {
	d := s.dbs[db]
	if d == nil {
		return 0
	}
	// Gather first, then hand out: the first loads of the entries' chunks
	// are independent of one another, so the CPU overlaps their cache
	// misses instead of stalling on each key in turn (the entries of
	// neighbouring buckets lie anywhere in the slab). Nothing can change
	// the table between the two loops: the shard stays locked and the sink
	// only reads.
	s.batch = s.batch[:0]
	next := d.main.TraverseBuckets(cursor, func(b dash.Bucket) {
		if b.Version() >= s.version {
			return
		}
		b.Refs(func(ref dash.Ref) {
			mem := d.slab.Bytes(ref)
			s.touch += mem[0] + mem[min(64, len(mem)-1)] + mem[min(128, len(mem)-1)]
			s.batch = append(s.batch, batchEntry{ref, mem})
		})
		b.SetVersion(s.version)
	})
	for i := range s.batch {
		s.emit(db, d, s.batch[i].ref, s.batch[i].mem)
	}
	clear(s.batch) // drop the references to the chunks
	return next
}

// emit hands one entry (ref, its chunk mem) to the sink.
func (s *Snapshot) emit(db int, d *DB, ref dash.Ref, mem []byte) {
	s.entry = Entry{db: d, ref: ref, hdr: decodeHeader(mem)}
	s.sink.Entry(db, &s.entry)
}

// capture hands b's entries to the sink and stamps it, unless it already
// carries the snapshot's version. It reports whether it captured b.
func (s *Snapshot) capture(db int, d *DB, b dash.Bucket) bool {
	if b.Version() >= s.version {
		return false
	}
	b.Refs(func(ref dash.Ref) { s.emit(db, d, ref, d.slab.Bytes(ref)) })
	b.SetVersion(s.version)
	return true
}

// Finish ends the snapshot (shard locked): the hooks are removed and the
// databases flushed meanwhile are released.
func (s *Snapshot) Finish() {
	for _, d := range s.dbs {
		if d != nil {
			d.main.OnBeforeChange(nil)
			d.stopSharing()
		}
	}
	for _, d := range s.flushed {
		go d.release()
	}
	s.flushed = nil
	s.entry, s.batch = Entry{}, nil // no reference to the store's chunks outlives the snapshot
	s.sh.snap = nil
}

// pinned reports whether d, just removed from the shard by a flush, is
// still read by the snapshot; if so the snapshot takes over releasing it.
func (s *Snapshot) pinned(d *DB) bool {
	if s == nil || !slices.Contains(s.dbs, d) {
		return false
	}
	s.flushed = append(s.flushed, d)
	return true
}

// AcquireSnapshot waits until no other snapshot runs on the store (or ctx is
// done) and reserves it; ReleaseSnapshot gives it back.
func (s *Store) AcquireSnapshot(ctx context.Context) error {
	select {
	case s.snapSlot <- struct{}{}:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// TryAcquireSnapshot reserves the store for a snapshot if none is running.
func (s *Store) TryAcquireSnapshot() bool {
	select {
	case s.snapSlot <- struct{}{}:
		return true
	default:
		return false
	}
}

// ReleaseSnapshot ends a reservation made by AcquireSnapshot.
func (s *Store) ReleaseSnapshot() { <-s.snapSlot }
