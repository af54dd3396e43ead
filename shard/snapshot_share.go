package shard

import (
	"github.com/damselflydb/damselfly/dash"
	"github.com/damselflydb/damselfly/shard/slab"
)

// Big strings shared with a running snapshot (docs/architecture.md,
// "Forkless snapshots"). A string held in a large slab chunk (over
// slab.MaxSmall bytes: a Go byte slice of its own, which the slab drops to
// the garbage collector when freed) need not be copied by the snapshot
// under the shard lock: its sink may take a reference instead
// (Entry.ShareStr, Entry.Share) and encode the bytes later, off the lock, so a writer
// that captures a bucket of 10 MB values pays microseconds, not a copy.
//
// Collections are shared the same way (Entry.ShareObj): their object is
// read by the sink off the lock; before Modify changes it, or when an
// overwrite, Delete or Forget lets go of it, the sink is told (Unshare,
// Dropped) and copies what it has not encoded yet.
//
// Invariants, while a snapshot runs on the shard:
//   - The DB never writes into the value bytes of a shared chunk. An
//     overwrite of a large value by one of the same size, which would reuse
//     the chunk, allocates a new one instead (DB.overwrite). Before a change
//     in place (Modify, ModifyUnwatched, GrowString), after the pre-change
//     hook ran, the sink is told to stop reading the bytes
//     (StrSharer.Unshare: it copies what it has not encoded yet), and only
//     then do they change.
//   - Freeing a shared chunk only forgets it: the sink's reference keeps
//     the old bytes alive and unchanged (the slab dropped the slice).
//   - Snapshot.Finish forgets every shared chunk, so the sink must have
//     encoded (or copied) every value it shared before it calls Finish.
//   - A chunk an overwrite dropped (ChunkRecycler.Overwritten) is read by
//     nothing but the sink: the new value is already in its new chunk, and
//     no command keeps a view of shard memory past its lock hold. So the
//     sink may hand it back, once written, to a later overwrite of the
//     same size (ChunkRecycler.Spare). A chunk Delete or Forget dropped is
//     never handed back: RENAME and MOVE still read it under the same
//     hold to store the value under its new key.

// StrSharer is implemented by a SnapshotSink that shares big strings.
type StrSharer interface {
	// Unshare is called, shard locked, before the bytes of a value the
	// sink shared (token from ShareStr) change in place. On return the sink
	// must no longer read them.
	Unshare(token any)
	// Dropped is called, shard locked, when the store lets go of a value
	// the sink shared (overwritten by a new chunk, or deleted): from then
	// on the sink's reference alone keeps the bytes, which are unchanged.
	Dropped(token any)
}

// ChunkRecycler is implemented by a StrSharer that recycles the chunks of
// shared big strings an overwrite replaced. A fresh large chunk costs page
// faults on first touch, far more than the copy of the value into it (on
// this project's VM 35-45 ms of CPU for 10 MB: BENCHMARKS.md, biglat),
// which is what a save made the first overwrite of each big value pay; a
// chunk the save has finished writing is warm.
type ChunkRecycler interface {
	// Overwritten is Dropped for a value an overwrite replaced; chunk is
	// its whole large chunk, which nothing but the sink reads any more.
	Overwritten(token any, chunk []byte)
	// Spare returns a chunk of exactly n bytes that nothing references
	// (one Overwritten gave, already written), or nil. Shard locked.
	Spare(n int) []byte
	// Done reports whether the sink has finished reading the value token
	// names (written, or copied): its chunk may then change in place, and
	// an overwrite reuses it instead of taking a new one. Shard locked.
	Done(token any) bool
}

// sharedStrs is a DB's record of the chunks shared with the running
// snapshot (nil when no snapshot shares).
type sharedStrs struct {
	refs map[dash.Ref]any // chunk -> the sink's token
	sink StrSharer
}

// ShareStr returns the value of a string entry held in a large chunk
// without copying it; false for small values, collections, or when the
// sink does not share. The sink then records the chunk as shared under its
// token (Share) before it keeps the bytes. Only a SnapshotSink's Entry may
// call them, for the entry it was handed.
func (e *Entry) ShareStr() ([]byte, bool) {
	d := e.db
	if d == nil || d.shared == nil || Type(e.hdr.flags&typeMask) != TypeString || !d.slab.IsLarge(e.ref) {
		return nil, false
	}
	return e.hdr.val, true
}

// ShareObj returns a collection entry's object for the sink to read off
// the lock; false for strings or when the sink does not share. As with
// ShareStr, the sink then calls Share. The DB never changes a shared
// object without telling the sink first: Modify and ModifyUnwatched call
// Unshare after the pre-change hook, and an overwrite, Delete or Forget
// calls Dropped (the object may live on under another key after RENAME or
// MOVE, so the sink must stop reading it then too). Reads of a collection
// change nothing in it, so the sink may read it while commands read it
// under the shard lock.
func (e *Entry) ShareObj() (any, bool) {
	d := e.db
	if d == nil || d.shared == nil || Type(e.hdr.flags&typeMask) == TypeString {
		return nil, false
	}
	return e.Obj(), true
}

// Share records e's chunk (ShareStr or ShareObj said true) as shared under token.
func (e *Entry) Share(token any) { e.db.shared.refs[e.ref] = token }

// startSharing makes the DB keep its large chunks for the sink (StartSnapshot).
func (d *DB) startSharing(sink SnapshotSink) {
	if s, ok := sink.(StrSharer); ok {
		d.shared = &sharedStrs{refs: make(map[dash.Ref]any), sink: s}
	}
}

// stopSharing ends the sharing (Snapshot.Finish).
func (d *DB) stopSharing() { d.shared = nil }

// reuseInPlace reports whether an overwrite may write the new value into
// the old chunk (ref, its bytes mem, at pos): not when it is a large chunk
// shared with the running snapshot, unless the sink is done with it
// (ChunkRecycler.Done). The pre-change hook runs here, first,
// so that a chunk it shares now is not reused either; a chunk whose bucket
// was captured before, or that is not shared, is reused (only the first
// overwrite of a key the snapshot shares allocates, as a fork copies a
// page on its first write).
func (d *DB) reuseInPlace(pos dash.Pos, ref dash.Ref, mem []byte) bool {
	if d.shared == nil || len(mem) <= slab.MaxSmall {
		return true
	}
	d.main.Replace(pos, ref) // the hook; the in-place path's own Replace is then a no-op for it
	tok, shared := d.shared.refs[ref]
	if !shared {
		return true
	}
	if r, ok := d.shared.sink.(ChunkRecycler); ok && r.Done(tok) {
		delete(d.shared.refs, ref) // written already: nobody reads it now
		return true
	}
	return false
}

// unshare is called before ref's bytes change in place (hook already run).
func (d *DB) unshare(ref dash.Ref) {
	if d.shared == nil {
		return
	}
	if tok, ok := d.shared.refs[ref]; ok {
		delete(d.shared.refs, ref)
		d.shared.sink.Unshare(tok)
	}
}

// forgetShared is called when ref is freed: the sink keeps the bytes.
func (d *DB) forgetShared(ref dash.Ref) {
	if d.shared == nil {
		return
	}
	if tok, ok := d.shared.refs[ref]; ok {
		delete(d.shared.refs, ref)
		d.shared.sink.Dropped(tok)
	}
}

// forgetOverwritten is forgetShared for the chunk an overwrite replaced
// (its new value already in its new chunk): a recycler may reuse it.
func (d *DB) forgetOverwritten(ref dash.Ref) {
	if d.shared == nil {
		return
	}
	if tok, ok := d.shared.refs[ref]; ok {
		delete(d.shared.refs, ref)
		if r, ok := d.shared.sink.(ChunkRecycler); ok && d.slab.IsLarge(ref) {
			r.Overwritten(tok, d.slab.Bytes(ref))
		} else {
			d.shared.sink.Dropped(tok)
		}
	}
}

// allocOverwrite allocates the chunk of an overwrite that cannot reuse the
// old one: a spare from the running snapshot if it has one of that size
// (warm: no page faults), else a new one.
func (d *DB) allocOverwrite(size int) (dash.Ref, []byte) {
	if size > slab.MaxSmall && d.shared != nil {
		if r, ok := d.shared.sink.(ChunkRecycler); ok {
			if b := r.Spare(size); b != nil {
				return d.slab.AllocLarge(b)
			}
		}
	}
	return d.slab.Alloc(size)
}

// LargeSizes calls fn with each length of the shard's live large chunks
// (strings over slab.MaxSmall bytes) and their count, per database: a
// length may come more than once (shard locked).
func (sh *Shard) LargeSizes(fn func(size, count int)) {
	for _, d := range sh.dbs {
		if d != nil {
			d.slab.LargeSizes(fn)
		}
	}
}
