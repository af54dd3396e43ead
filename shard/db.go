package shard

import (
	"encoding/binary"

	"github.com/damselflydb/damselfly/dash"
	"github.com/damselflydb/damselfly/shard/slab"
	"github.com/damselflydb/damselfly/shard/types"
)

// DB is one numbered database's part of one shard: a slab of entries, the
// Dashtable that indexes them, a second Dashtable over the entries that carry
// an expiry (so the active expiry cycle samples only those), and the table of
// collection objects. A DB is used under its shard's lock.
type DB struct {
	slab     *slab.Slab
	main     *dash.Table
	expires  *dash.Table
	objs     []any
	freeObjs []uint32
	valBytes int64     // sum of key+value bytes, for MEMORY and INFO
	dirty    *uint64   // the owning shard's change counter
	clock    *uint32   // the owning shard's LRU clock (stamped on new entries)
	idx      int       // the database number (changes with SWAPDB)
	watch    *watchers // the owning shard's WATCH registry
	newKey   *newKeyHook
	lfu      *lfuConfig // the store's LFU switch (lfu.go)
	minutes  *uint32    // the owning shard's LFU minute clock
	rnd      uint64     // LFU's random source (never 0)
	slots    *slotIndex // keys per cluster slot (database 0 in cluster mode; slots.go)
	// fieldTTLKeys: keys that held a hash with field deadlines when last
	// seen (fieldexpiry.go); nil until there is one.
	fieldTTLKeys map[string]struct{}
	// shared: big strings shared with a running snapshot
	// (snapshot_share.go); nil when none.
	shared *sharedStrs
	// PrefetchLookups' scratch, and its sink for the reads it makes.
	prefetchRefs []dash.Ref
	sink         byte
}

// newDB makes an empty DB whose tables stamp changed buckets with version
// (the shard's epoch), so a running snapshot skips every key created in it.
func newDB(dirty *uint64, clock *uint32, version uint64, hugePages bool) *DB {
	d := &DB{slab: slab.New(hugePages), dirty: dirty, clock: clock}
	d.main = dash.New(d, Hash)
	d.expires = dash.New(d, Hash)
	d.main.SetVersion(version)
	d.expires.SetVersion(version)
	return d
}

// Key implements dash.Keys: the key stored in the entry named by ref.
func (d *DB) Key(ref dash.Ref) []byte { return keyOf(d.slab.Bytes(ref)) }

// Len is the number of keys (expired ones not yet reclaimed included).
func (d *DB) Len() int { return d.main.Len() }

// ExpiresLen is the number of keys with an expiry.
func (d *DB) ExpiresLen() int { return d.expires.Len() }

// Entry is a key found in a DB. Its byte slices view the shard's memory:
// they are valid only under the shard lock and until the next change to
// the DB.
type Entry struct {
	db  *DB
	pos dash.Pos
	ref dash.Ref
	h   uint64
	hdr header
}

func (e *Entry) Type() Type      { return Type(e.hdr.flags & typeMask) }
func (e *Entry) Key() []byte     { return e.hdr.key }
func (e *Entry) ExpireAt() int64 { return e.hdr.expireAt }
func (e *Entry) Hash() uint64    { return e.h }
func (e *Entry) MCFlags() uint32 { return e.hdr.mcFlags }
func (e *Entry) MCCAS() uint64   { return e.hdr.mcCAS }
func (e *Entry) HasMeta() bool   { return e.hdr.flags&flagMeta != 0 }

// Atime is the LRU clock of the entry's last access (see LRUClock).
func (e *Entry) Atime() uint32 { return e.hdr.atime }

// MCFetched, MCStale and MCWon are a memcached item's access state (false
// without meta).
func (e *Entry) MCFetched() bool { return e.hdr.flags&flagFetched != 0 }
func (e *Entry) MCStale() bool   { return e.hdr.flags&flagStale != 0 }
func (e *Entry) MCWon() bool     { return e.hdr.flags&flagWon != 0 }
func (e *Entry) Expired(now int64) bool {
	return e.hdr.expireAt != 0 && e.hdr.expireAt <= now
}

// Str is a string entry's value, for reading only: its bytes are the
// shard's memory, and an in-place change goes through StrW (writegate.go)
// so that a running snapshot captures the old value first. The slice's
// capacity is its length, so an append to it copies.
func (e *Entry) Str() []byte { return e.hdr.val }

// Obj is a collection entry's object.
func (e *Entry) Obj() any {
	return e.db.objs[binary.LittleEndian.Uint32(e.hdr.val)]
}

// Find looks key up without regard to expiry.
func (d *DB) Find(h uint64, key []byte) (Entry, bool) {
	pos, ok := d.main.Find(h, key)
	if !ok {
		return Entry{}, false
	}
	ref := d.main.Ref(pos)
	return Entry{db: d, pos: pos, ref: ref, h: h, hdr: decodeHeader(d.slab.Bytes(ref))}, true
}

// Value is what Put stores: a string or a collection object.
type Value struct {
	Type      Type
	Str       []byte
	Obj       any
	ExpireAt  int64 // unix ms; 0 = none
	MCFlags   uint32
	MCCAS     uint64
	Meta      bool // store the memcached fields below and above (memcached items)
	MCFetched bool // read since written (NoteAccess sets it)
	MCStale   bool // invalidated (md I)
	MCWon     bool // a recache win was handed out
}

// Put stores v under key, replacing any previous value, and returns the new
// entry. An existing chunk is overwritten in place when the new entry needs
// the same size class.
func (d *DB) Put(h uint64, key []byte, v Value) Entry {
	flags := v.entryFlags()
	vlen := len(v.Str)
	if v.Type != TypeString {
		vlen = 4
	}
	size := encodedSize(flags, len(key), vlen)
	*d.dirty++
	if d.watch != nil && d.watch.active() {
		d.touchWatched(key, false)
	}
	d.noteStored(key, &v)
	pos, found := d.main.Find(h, key)
	if !found {
		return d.insertNew(h, key, v, flags, size, vlen)
	}
	return d.overwrite(pos, h, key, v, flags, size, vlen)
}

// Overwrite is Put for a key the caller has just found (e came from Find or
// Lookup under the same lock hold, with no change since): it skips the
// index probe. key must not view shard memory (e.Key() does).
func (d *DB) Overwrite(e *Entry, key []byte, v Value) Entry {
	flags := v.entryFlags()
	vlen := len(v.Str)
	if v.Type != TypeString {
		vlen = 4
	}
	*d.dirty++
	if d.watch != nil && d.watch.active() {
		d.touchWatched(key, false)
	}
	d.noteStored(key, &v)
	return d.overwrite(e.pos, e.h, key, v, flags, encodedSize(flags, len(key), vlen), vlen)
}

// overwrite replaces the entry at pos (key's) with v.
func (d *DB) overwrite(pos dash.Pos, h uint64, key []byte, v Value, flags byte, size, vlen int) Entry {
	oldRef := d.main.Ref(pos)
	oldMem := d.slab.Bytes(oldRef)
	old := decodeHeader(oldMem)
	oldObj := int64(-1)
	if Type(old.flags&typeMask) != TypeString {
		oldObj = int64(binary.LittleEndian.Uint32(old.val))
	}
	d.valBytes += int64(vlen - len(old.val))
	oldSize := encodedSize(old.flags, len(old.key), len(old.val))
	if len(oldMem) == slab.ClassSize(size) && d.reuseInPlace(pos, oldRef, oldMem) {
		// Same size class: overwrite in place. Replace with the same ref
		// tells the index (and a running snapshot) that the bucket changes.
		d.main.Replace(pos, oldRef)
		if oldObj >= 0 {
			d.forgetShared(oldRef) // the old collection object leaves the store
		}
		if old.flags&flagExpire != 0 && flags&flagExpire == 0 {
			d.removeExpire(h, key)
		}
		if old.flags&flagExpire == 0 && flags&flagExpire != 0 {
			d.expires.Insert(h, oldRef)
		} else if flags&flagExpire != 0 {
			d.touchExpire(h, key)
		}
		val := encode(oldMem, flags, d.overwriteAtime(old.atime), key, vlen, &v)
		d.fillValue(val, v, oldObj)
		d.slab.AdjustRequested(size - oldSize)
		return Entry{db: d, pos: pos, ref: oldRef, h: h, hdr: decodeHeader(oldMem)}
	}
	ref, mem := d.allocOverwrite(size)
	val := encode(mem, flags, d.overwriteAtime(old.atime), key, vlen, &v)
	// Replace first: the pre-change hook must see the old value and object.
	d.main.Replace(pos, ref)
	d.fillValue(val, v, oldObj)
	if old.flags&flagExpire != 0 {
		epos, ok := d.expires.Find(h, key)
		if ok {
			if flags&flagExpire != 0 {
				d.expires.Replace(epos, ref)
			} else {
				d.expires.Remove(epos)
			}
		}
	} else if flags&flagExpire != 0 {
		d.expires.Insert(h, ref)
	}
	d.forgetOverwritten(oldRef)
	d.slab.Free(oldRef, oldSize)
	return Entry{db: d, pos: pos, ref: ref, h: h, hdr: decodeHeader(mem)}
}

// insertNew stores key, known to be absent, with its encoded flags and sizes.
func (d *DB) insertNew(h uint64, key []byte, v Value, flags byte, size, vlen int) Entry {
	pos, ref, mem := d.insert(h, key, v, flags, size, vlen)
	d.noteNew(key)
	return Entry{db: d, pos: pos, ref: ref, h: h, hdr: decodeHeader(mem)}
}

// insert is insertNew without building the Entry (Add needs none).
func (d *DB) insert(h uint64, key []byte, v Value, flags byte, size, vlen int) (dash.Pos, dash.Ref, []byte) {
	ref, mem := d.slab.Alloc(size)
	val := encode(mem, flags, d.newAtime(), key, vlen, &v)
	d.fillValue(val, v, -1)
	pos := d.main.Insert(h, ref)
	if v.ExpireAt != 0 {
		d.expires.Insert(h, ref)
	}
	d.valBytes += int64(len(key) + vlen)
	if d.slots != nil {
		d.slots.add(key)
	}
	return pos, ref, mem
}

// Reserve sizes the DB's indexes for a bulk load of keys entries, expires
// of them with an expiry (see dash.Table.Reserve).
func (d *DB) Reserve(keys, expires int) {
	d.main.Reserve(keys)
	d.expires.Reserve(expires)
}

// Prefetch brings the index buckets of hash h into cache (see
// dash.Table.Prefetch), those of the expires index too for a key that will
// have an expiry: call it for a batch of keys before adding them.
func (d *DB) Prefetch(h uint64, expires bool) {
	d.main.Prefetch(h)
	if expires {
		d.expires.Prefetch(h)
	}
}

// PrefetchLookups brings into cache what lookups of a batch of hashes will
// read: their index buckets, then the entry (header, key, value: up to
// prefetchEntryMax bytes) each would compare first. Each step's reads are
// independent of each other, so their cache misses overlap (see
// dash.Table.PrefetchLookups). Call it under the shard lock.
func (d *DB) PrefetchLookups(hs []uint64) {
	d.prefetchRefs = d.main.PrefetchLookups(hs, d.prefetchRefs[:0])
	var sink byte
	for _, r := range d.prefetchRefs {
		mem := d.slab.Bytes(r)
		for i := 0; i < len(mem) && i < prefetchEntryMax; i += 64 {
			sink += mem[i]
		}
	}
	d.sink += sink
}

// PrefetchFields reads into the CPU caches the index slots and entries of
// fields (members) of the hash, set or sorted set stored under key (h its
// hash), if it is in its hashtable encoding: the pipeline's prefetch for
// commands on fields and members, after PrefetchLookups brought key's
// entry in. A hint: it changes nothing.
func (d *DB) PrefetchFields(h uint64, key []byte, fields [][]byte) {
	e, ok := d.Find(h, key)
	if !ok {
		return
	}
	switch e.Type() {
	case TypeHash:
		if o, ok := e.Obj().(*types.Hash); ok {
			d.sink += o.PrefetchFields(fields)
		}
	case TypeSet:
		if o, ok := e.Obj().(*types.Set); ok {
			d.sink += o.PrefetchFields(fields)
		}
	case TypeZSet:
		if o, ok := e.Obj().(*types.ZSet); ok {
			d.sink += o.PrefetchFields(fields)
		}
	}
}

// prefetchEntryMax is how much of an entry PrefetchLookups reads: a GET
// copies the value into its reply and a SET overwrites it in place, so the
// lines of a small value are as hot as its header.
const prefetchEntryMax = 512

// Add stores v under key unless the key exists (then it reports false and
// changes nothing): one index probe where Find then Put would take two
// (loading a dump refuses duplicate keys this way).
func (d *DB) Add(h uint64, key []byte, v Value) bool {
	if _, found := d.main.Find(h, key); found {
		return false
	}
	flags := v.entryFlags()
	vlen := len(v.Str)
	if v.Type != TypeString {
		vlen = 4
	}
	*d.dirty++
	if d.watch != nil && d.watch.active() {
		d.touchWatched(key, false)
	}
	d.noteStored(key, &v)
	d.insert(h, key, v, flags, encodedSize(flags, len(key), vlen), vlen)
	return true
}

// fillValue writes v's payload; oldObj is the object slot of the value being
// replaced (-1 for none), reused for a new object or released.
func (d *DB) fillValue(dst []byte, v Value, oldObj int64) {
	if v.Type == TypeString {
		copy(dst, v.Str)
		if oldObj >= 0 {
			d.freeObj(uint32(oldObj))
		}
		return
	}
	var idx uint32
	if oldObj >= 0 {
		idx = uint32(oldObj)
		d.objs[idx] = v.Obj
	} else {
		idx = d.newObj(v.Obj)
	}
	binary.LittleEndian.PutUint32(dst, idx)
}

func (d *DB) newObj(o any) uint32 {
	if n := len(d.freeObjs); n > 0 {
		idx := d.freeObjs[n-1]
		d.freeObjs = d.freeObjs[:n-1]
		d.objs[idx] = o
		return idx
	}
	d.objs = append(d.objs, o)
	return uint32(len(d.objs) - 1)
}

func (d *DB) freeObj(idx uint32) {
	d.objs[idx] = nil
	d.freeObjs = append(d.freeObjs, idx)
}

func (d *DB) removeExpire(h uint64, key []byte) {
	if epos, ok := d.expires.Find(h, key); ok {
		d.expires.Remove(epos)
	}
}

// touchExpire tells the expires index (and a running snapshot of it) that
// the entry changes in place.
func (d *DB) touchExpire(h uint64, key []byte) {
	if epos, ok := d.expires.Find(h, key); ok {
		d.expires.Replace(epos, d.expires.Ref(epos))
	}
}

// Delete removes the entry e.
func (d *DB) Delete(e *Entry) {
	*d.dirty++
	if d.watch != nil && d.watch.active() {
		d.touchWatched(e.hdr.key, true)
	}
	// The index changes first: a running snapshot's pre-change hook then
	// captures the entry while its chunk and object are still intact.
	d.main.Remove(e.pos)
	if d.slots != nil {
		d.slots.remove(e.hdr.key)
	}
	if e.hdr.flags&flagExpire != 0 {
		d.removeExpire(e.h, e.hdr.key)
	}
	if Type(e.hdr.flags&typeMask) != TypeString {
		d.freeObj(binary.LittleEndian.Uint32(e.hdr.val))
	}
	d.valBytes -= int64(len(e.hdr.key) + len(e.hdr.val))
	d.forgetShared(e.ref)
	d.slab.Free(e.ref, encodedSize(e.hdr.flags, len(e.hdr.key), len(e.hdr.val)))
	*e = Entry{}
}

// Forget removes the entry e but keeps its collection object alive, for
// RENAME and MOVE, which hand the object to another key. (The DB only
// drops its reference to the object, exactly as Delete does; the name
// documents that the caller keeps using it.)
func (d *DB) Forget(e *Entry) { d.Delete(e) }

// Modify must be called before a collection object (or any value) is changed
// in place, so that a running snapshot captures the old value first. It
// returns the right to change e's object (writegate.go), which the types'
// mutating methods require.
func (d *DB) Modify(e *Entry) types.W {
	*d.dirty++
	if d.watch != nil && d.watch.active() {
		d.touchWatched(e.hdr.key, false)
	}
	d.main.Replace(e.pos, e.ref)
	d.unshare(e.ref)
	return grant(e)
}

// ModifyUnwatched is Modify for the few changes Redis does not signal to
// WATCH (XGROUP CREATE on an existing stream, SETID, DESTROY,
// CREATECONSUMER, DELCONSUMER): the snapshot still captures the old value.
func (d *DB) ModifyUnwatched(e *Entry) types.W {
	*d.dirty++
	d.main.Replace(e.pos, e.ref)
	d.unshare(e.ref)
	return grant(e)
}

// SignalModified tells WATCH that key changed, for a change made under
// ModifyUnwatched that turned out to be one: XTRIM takes the right to
// change its stream before it knows whether anything goes, and Redis
// signals the key only when entries were deleted.
func (d *DB) SignalModified(key []byte) {
	if d.watch != nil && d.watch.active() {
		d.touchWatched(key, false)
	}
}

// Touch records an access to e now (its LRU clock), as Lookup does. The
// access state is not part of the value: it changes in place, is not a
// write (no dirty count, no snapshot hook) and is neither saved nor
// replicated.
func (d *DB) Touch(e *Entry) {
	at := *d.clock
	if d.lfu != nil && d.lfu.on.Load() {
		at = d.lfuAccess(e.hdr.atime, *d.minutes)
	}
	setAtime(d.slab.Bytes(e.ref), at)
	e.hdr.atime = at
}

// overwriteAtime is the access field of a value replacing one whose field
// was old: under LFU the counter carries over (Redis's dbOverwrite),
// otherwise the access is now.
func (d *DB) overwriteAtime(old uint32) uint32 {
	if d.lfu != nil && d.lfu.on.Load() {
		return old
	}
	return *d.clock
}

// SetIdle makes e look idle for the given seconds (RESTORE ... IDLETIME).
func (d *DB) SetIdle(e *Entry, seconds int64) {
	at := (int64(*d.clock) - seconds%LRUClockMax + LRUClockMax) % LRUClockMax
	setAtime(d.slab.Bytes(e.ref), uint32(at))
	e.hdr.atime = uint32(at)
}

// NoteAccess is Touch for a memcached read: a memcached item (e has meta)
// is also marked fetched (mg h).
func (d *DB) NoteAccess(e *Entry) {
	d.Touch(e)
	if e.HasMeta() {
		mem := d.slab.Bytes(e.ref)
		mem[0] |= flagFetched
		e.hdr.flags = mem[0]
	}
}

// NoteWin records that a client was handed the right to recache e (a
// memcached item), in place like NoteAccess.
func (d *DB) NoteWin(e *Entry) {
	if !e.HasMeta() {
		return
	}
	mem := d.slab.Bytes(e.ref)
	mem[0] |= flagWon
	e.hdr.flags = mem[0]
}

// SetExpireAt changes e's expiry (0 removes it) and returns the updated entry.
func (d *DB) SetExpireAt(e *Entry, at int64) Entry {
	v := Value{Type: e.Type(), ExpireAt: at, MCFlags: e.hdr.mcFlags, MCCAS: e.hdr.mcCAS, Meta: e.HasMeta(),
		MCFetched: e.MCFetched(), MCStale: e.MCStale(), MCWon: e.MCWon()}
	key := append([]byte(nil), e.hdr.key...)
	if v.Type == TypeString {
		v.Str = append([]byte(nil), e.hdr.val...)
	} else {
		v.Obj = e.Obj()
	}
	return d.Put(e.h, key, v)
}

// Scan visits a group of entries from cursor and returns the next cursor.
// The entries are for reading only: fn must not change the DB.
func (d *DB) Scan(cursor uint64, fn func(e *Entry)) uint64 {
	return d.main.Scan(cursor, func(ref dash.Ref) {
		e := Entry{db: d, ref: ref, hdr: decodeHeader(d.slab.Bytes(ref))}
		fn(&e)
	})
}

// SampleExpires visits entries with an expiry from a random point until fn
// returns false. fn must not change the DB.
func (d *DB) SampleExpires(rnd uint64, fn func(e *Entry) bool) {
	d.expires.Sample(rnd, func(ref dash.Ref) bool {
		e := Entry{db: d, ref: ref, hdr: decodeHeader(d.slab.Bytes(ref))}
		return fn(&e)
	})
}

// Sample visits entries from a random point until fn returns false. fn must
// not change the DB.
func (d *DB) Sample(rnd uint64, fn func(e *Entry) bool) {
	d.main.Sample(rnd, func(ref dash.Ref) bool {
		e := Entry{db: d, ref: ref, hdr: decodeHeader(d.slab.Bytes(ref))}
		return fn(&e)
	})
}

// release frees all memory of the DB; it must not be used afterwards.
func (d *DB) release() {
	d.slab.Release()
}

// MemoryUsed estimates the bytes the DB holds (slab pages plus index).
func (d *DB) MemoryUsed() int64 {
	st := d.slab.Stats()
	return st.InUse + int64(d.main.Len()+d.expires.Len())*8
}

// EntrySize is the number of slab bytes an entry occupies (MEMORY USAGE).
func (d *DB) EntrySize(e *Entry) int {
	return d.slab.Size(e.ref)
}
