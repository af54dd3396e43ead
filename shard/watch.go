package shard

import (
	"sync/atomic"
	"time"
)

// WATCH support (optimistic locking for MULTI/EXEC).
//
// Design and invariants:
//   - A Watch is one client's set of watched keys. Each watched key is a
//     registration in the registry of the key's shard, keyed by the key's
//     hash; registrations are added and removed only under that shard's lock.
//   - Every change to data passes through DB.Put, DB.Delete, DB.Modify,
//     Shard.FlushDB or Shard.SwapDB (the same places that count Dirty). Each
//     consults the registry only when it is non-empty, so the hot path pays
//     one length check when nobody watches. A change to a watched key marks
//     its Watch dirty (an atomic flag: different shards may mark it at once).
//   - Redis's expiry rules are kept: a key already logically expired when
//     watched is "absent"; deleting it (expiry, FLUSHDB) is no change, but
//     writing it is. A key live when watched that is logically expired by
//     EXEC time counts as changed (Changed checks this).
//   - EXEC holds the shards of all its watched keys while it asks Changed and
//     unregisters (ReleaseLocked), so no write slips in between.

// Watch is one client's watched keys.
type Watch struct {
	dirty atomic.Bool
	regs  []*watchReg
}

type watchReg struct {
	w       *Watch
	sh      *Shard
	db      int
	key     string
	h       uint64
	expired bool // logically expired when watched; guarded by sh's lock
}

// watchers is a shard's registry of watched keys.
type watchers struct {
	m map[uint64][]*watchReg
	// track, when set, is told of every key about to change (client-side
	// caching; see track.go).
	track func(db int, key []byte)
}

// active reports whether a change must consult the registry or the
// tracking hook: one length and one nil check when neither is in use.
func (w *watchers) active() bool { return len(w.m) > 0 || w.track != nil }

// Len is the number of keys watched (by all clients).
func (w *Watch) Len() int { return len(w.regs) }

// Shards returns the IDs of the shards holding watched keys.
func (w *Watch) Shards(set *Set) {
	for _, r := range w.regs {
		set.AddID(r.sh.id)
	}
}

// Watch registers key of database db in w. Caller holds the shard's lock.
// Watching the same key twice is a no-op, as in Redis.
func (sh *Shard) Watch(w *Watch, db int, h uint64, key []byte, now int64) {
	for _, r := range sh.watch.m[h] {
		if r.w == w && r.db == db && r.key == string(key) {
			return
		}
	}
	r := &watchReg{w: w, sh: sh, db: db, key: string(key), h: h}
	if d := sh.dbs[db]; d != nil {
		if e, ok := d.Find(h, key); ok && e.Expired(now) {
			r.expired = true
		}
	}
	if sh.watch.m == nil {
		sh.watch.m = map[uint64][]*watchReg{}
	}
	sh.watch.m[h] = append(sh.watch.m[h], r)
	w.regs = append(w.regs, r)
}

// Changed reports whether any watched key changed since it was watched,
// including live keys that have logically expired since. Caller holds the
// shards of all watched keys.
func (w *Watch) Changed(now int64) bool {
	if w.dirty.Load() {
		return true
	}
	for _, r := range w.regs {
		if r.expired {
			continue
		}
		if d := r.sh.dbs[r.db]; d != nil {
			if e, ok := d.Find(r.h, []byte(r.key)); ok && e.Expired(now) {
				return true
			}
		}
	}
	return false
}

// ReleaseLocked unregisters every key of w. Caller holds the shards of all
// watched keys. w may be reused afterwards.
func (w *Watch) ReleaseLocked() {
	for _, r := range w.regs {
		r.sh.unregister(r)
	}
	w.regs = w.regs[:0]
	w.dirty.Store(false)
}

// Unwatch unregisters every key of w, locking each shard involved in turn.
func (s *Store) Unwatch(w *Watch) {
	for _, r := range w.regs {
		r.sh.Lock()
		r.sh.unregister(r)
		r.sh.Unlock()
	}
	w.regs = w.regs[:0]
	w.dirty.Store(false)
}

func (sh *Shard) unregister(r *watchReg) {
	list := sh.watch.m[r.h]
	for i, x := range list {
		if x == r {
			list[i] = list[len(list)-1]
			list[len(list)-1] = nil
			list = list[:len(list)-1]
			break
		}
	}
	if len(list) == 0 {
		delete(sh.watch.m, r.h)
	} else {
		sh.watch.m[r.h] = list
	}
}

// touchWatched is called (under the shard lock) before key of d changes;
// deleted says the change removes the key.
func (d *DB) touchWatched(key []byte, deleted bool) {
	if d.watch.track != nil {
		d.watch.track(d.idx, key)
	}
	for _, r := range d.watch.m[Hash(key)] {
		if r.db != d.idx || r.key != string(key) {
			continue
		}
		if r.expired {
			if deleted {
				// The already expired key is now gone: logically no change.
				r.expired = false
				continue
			}
		}
		r.w.dirty.Store(true)
	}
}

// watchEmptied applies Redis's touchAllWatchedKeysInDb to database idx of
// the shard, whose DB emptied is being dropped and replaced by replacedWith
// (nil for FLUSHDB).
func (sh *Shard) watchEmptied(idx int, emptied, replacedWith *DB) {
	if len(sh.watch.m) == 0 {
		return
	}
	now := time.Now().UnixMilli()
	find := func(d *DB, r *watchReg) (Entry, bool) {
		if d == nil {
			return Entry{}, false
		}
		return d.Find(r.h, []byte(r.key))
	}
	for _, list := range sh.watch.m {
		for _, r := range list {
			if r.db != idx {
				continue
			}
			_, inEmptied := find(emptied, r)
			re, inReplaced := find(replacedWith, r)
			if !inEmptied && !inReplaced {
				continue
			}
			if r.expired {
				if !inReplaced {
					r.expired = false // expired key deleted: no logical change
					continue
				}
				if re.Expired(now) {
					continue // expired key remains expired
				}
			} else if !inEmptied && re.Expired(now) {
				r.expired = true // absent key replaced by an expired one
				continue
			}
			r.w.dirty.Store(true)
		}
	}
}
