package shard

import (
	"sync"
	"time"
)

// Shard owns a slice of the keyspace (every key whose hash routes to it) in
// all databases. Everything in it is guarded by its lock; callers hold it
// (Lock/Unlock) around every use, and lock several shards only in ascending
// ID order (Store.LockMany does this).
type Shard struct {
	mu  sync.Mutex
	id  int
	dbs []*DB

	// OnExpire, when set, is told of every key the shard deletes because it
	// expired (replication turns it into DEL). Called under the shard lock.
	OnExpire func(db int, key []byte)
	// OnFieldExpire, when set, is told of the hash fields the shard deletes
	// because they expired (gone: the key went with them). Called under
	// the shard lock; fields and key are the callee's.
	OnFieldExpire func(db int, key []byte, fields [][]byte, gone bool)

	expiredFields int64 // stats: hash fields removed by expiry

	expiredKeys int64  // stats: keys removed by expiry
	dirty       uint64 // changes made through this shard; see Dirty
	clock       uint32 // LRU clock as of the last Lookup or Tick (see LRUClock)

	// replica: expired keys stay until the primary deletes them (see
	// Store.SetReplica). primaryView: the lock holder applies the primary's
	// stream (see SetPrimaryView). Both are read and written under the lock.
	replica, primaryView bool
	// expiryPaused: CLIENT PAUSE WRITE|ALL is in force, so expired keys are
	// reported missing but not deleted (see SetExpiryPaused).
	expiryPaused bool
	// noTouch: the lock holder's reads do not count as accesses.
	noTouch bool
	// gateMark: the lock holder's write took a save's memory budget past
	// its soft limit (snapshot.WriterGate); its connection is to wait at
	// the gate before its next write (MarkGate, TakeGateMark).
	gateMark bool

	epoch uint64    // snapshot version epoch; see snapshot.go
	snap  *Snapshot // the running snapshot, if any
	watch watchers

	newKey *newKeyHook // the store's new-key hook (events.go)
	lfu    *lfuConfig  // the store's LFU switch (lfu.go)
	// minutes is the LFU minute clock (unix minutes mod 65536) as of the
	// last Tick.
	minutes uint32
	// slotIndexed: database 0 keeps its per-slot key index (cluster mode,
	// slots.go).
	slotIndexed bool
	// hugePages: databases made from now on ask for transparent huge pages
	// on their slab arenas (Store.AdviseHugePages).
	hugePages bool
}

// Dirty counts every change made to the shard's data (like Redis's
// server.dirty): callers compare it before and after a command to learn
// whether the command wrote anything (to replicate it, to schedule saves).
func (sh *Shard) Dirty() uint64 { return sh.dirty }

func newShard(id, dbnum int) *Shard {
	ms := time.Now().UnixMilli()
	return &Shard{id: id, dbs: make([]*DB, dbnum), clock: LRUClock(ms), minutes: lfuMinutes(ms)}
}

// Tick advances the shard's LRU clock to unix milliseconds now (the server
// cron calls it; Lookup does too). Call it under the lock.
func (sh *Shard) Tick(now int64) {
	// Forward only: callers read the time before taking the lock, so a
	// later lock holder may bring an earlier time. A clock stepping back
	// would make entries stamped a moment ago look 194 days idle (the
	// 24-bit clock's wrap) to eviction and OBJECT IDLETIME.
	if c := LRUClock(now); (c-sh.clock)&LRUClockMax < LRUClockMax/2 {
		sh.clock = c
	}
	if m := lfuMinutes(now); (m-sh.minutes)&65535 < 32768 {
		sh.minutes = m
	}
}

// Clock is the shard's LRU clock (under the lock).
func (sh *Shard) Clock() uint32 { return sh.clock }

// ID is the shard's index in its store.
func (sh *Shard) ID() int { return sh.id }

// MarkGate records (shard locked) that the lock holder's write took a
// save's memory budget past its soft limit (snapshot.WriterGate).
func (sh *Shard) MarkGate() { sh.gateMark = true }

// TakeGateMark reports and clears the mark of MarkGate (shard locked): the
// server moves it to the connection that held the lock. A mark left by a
// writer that does not take it (expiry, the memcached front end) goes to
// the next connection that unlocks the shard: it then waits at the gate
// once, while the budget is over its soft limit anyway.
func (sh *Shard) TakeGateMark() bool {
	m := sh.gateMark
	sh.gateMark = false
	return m
}

func (sh *Shard) Lock()   { sh.mu.Lock() }
func (sh *Shard) Unlock() { sh.mu.Unlock() }

// TryLock locks the shard if no one holds it, for work that is only worth
// doing without waiting (prefetching hints).
func (sh *Shard) TryLock() bool { return sh.mu.TryLock() }

// DB returns database i of this shard, creating it on first use.
func (sh *Shard) DB(i int) *DB {
	d := sh.dbs[i]
	if d == nil {
		d = newDB(&sh.dirty, &sh.clock, sh.epoch, sh.hugePages)
		d.idx, d.watch, d.newKey = i, &sh.watch, sh.newKey
		d.lfu, d.minutes, d.rnd = sh.lfu, &sh.minutes, uint64(sh.id)*0x9E3779B97F4A7C15+uint64(i)+1
		if i == 0 && sh.slotIndexed {
			d.slots = newSlotIndex()
		}
		sh.dbs[i] = d
	}
	return d
}

// DBCount is the number of databases.
func (sh *Shard) DBCount() int { return len(sh.dbs) }

// PeekDB returns database i or nil when it was never used.
func (sh *Shard) PeekDB(i int) *DB { return sh.dbs[i] }

// Lookup finds key in database db, deleting it instead if it has expired
// at now (unix ms).
//
// On a replica (Store.SetReplica) an expired key is reported missing but
// left in place: like a Redis replica, it waits for its primary's DEL
// (the primary's clock decides when a key expires, and deleting on our own
// would make the replica diverge, e.g. a later primary command that still
// saw the key live). The same holds for the primary's own commands: while
// the lock holder applies the primary's stream (SetPrimaryView), an
// expired key is reported live, as Redis's expireIfNeeded does for the
// master client, so a DEL, INCR or APPEND from the primary acts on it.
func (sh *Shard) Lookup(db int, h uint64, key []byte, now int64) (Entry, bool) {
	e, ok := sh.LookupNoTouch(db, h, key, now)
	if ok && !sh.noTouch {
		sh.Tick(now)
		e.db.Touch(&e)
	}
	return e, ok
}

// LookupNoTouch is Lookup without recording an access (EXISTS, TYPE, TTL,
// OBJECT: Redis's LOOKUP_NOTOUCH).
func (sh *Shard) LookupNoTouch(db int, h uint64, key []byte, now int64) (Entry, bool) {
	return sh.lookup(db, h, key, now, true)
}

// LookupStaleFields is Lookup that leaves a hash's expired fields for the
// active cycle (or a later lookup) to reclaim: HLEN counts them, as Redis
// 7.4's HLEN does until they are reclaimed.
func (sh *Shard) LookupStaleFields(db int, h uint64, key []byte, now int64) (Entry, bool) {
	e, ok := sh.lookup(db, h, key, now, false)
	if ok && !sh.noTouch {
		sh.Tick(now)
		e.db.Touch(&e)
	}
	return e, ok
}

func (sh *Shard) lookup(db int, h uint64, key []byte, now int64, reclaimFields bool) (Entry, bool) {
	d := sh.dbs[db]
	if d == nil {
		return Entry{}, false
	}
	e, ok := d.Find(h, key)
	if !ok {
		return Entry{}, false
	}
	if e.Expired(now) {
		switch {
		case !sh.replica && !sh.expiryPaused:
			sh.expire(db, d, &e)
		case sh.primaryView:
			return e, true
		}
		return Entry{}, false
	}
	if !reclaimFields || sh.replica || sh.expiryPaused {
		return e, true // expired fields stay; readers hide them (server's readHash)
	}
	if fe, due := fieldsDue(&e, now); due {
		if sh.expireFields(db, d, &e, fe, now) {
			return Entry{}, false
		}
	}
	return e, true
}

// SetPrimaryView tells Lookup that the lock holder applies the stream of
// this replica's primary (on) or is done (off); call it under the lock,
// after locking and before unlocking. It matters only on a replica.
func (sh *Shard) SetPrimaryView(on bool) { sh.primaryView = on }

// IsReplica reports whether the shard is in replica mode (Store.SetReplica).
func (sh *Shard) IsReplica() bool { return sh.replica }

// expire deletes an expired entry and reports it.
func (sh *Shard) expire(db int, d *DB, e *Entry) {
	sh.expiredKeys++
	if sh.OnExpire != nil {
		sh.OnExpire(db, e.hdr.key)
	}
	d.Delete(e)
}

// ExpiredKeys is the number of keys this shard removed because they expired.
func (sh *Shard) ExpiredKeys() int64 { return sh.expiredKeys }

// FlushDB drops every key of database db; release runs in the background
// when async.
func (sh *Shard) FlushDB(db int, async bool) {
	d := sh.dbs[db]
	if d == nil {
		return
	}
	sh.watchEmptied(db, d, nil)
	sh.dbs[db] = nil
	sh.dirty++
	if sh.snap.pinned(d) {
		// A running snapshot still reads it; it releases it when done.
		return
	}
	if async {
		go d.release()
	} else {
		d.release()
	}
}

// SwapDB exchanges databases a and b.
func (sh *Shard) SwapDB(a, b int) {
	sh.watchEmptied(a, sh.dbs[a], sh.dbs[b])
	sh.watchEmptied(b, sh.dbs[b], sh.dbs[a])
	sh.dbs[a], sh.dbs[b] = sh.dbs[b], sh.dbs[a]
	if sh.dbs[a] != nil {
		sh.dbs[a].idx = a
	}
	if sh.dbs[b] != nil {
		sh.dbs[b].idx = b
	}
	sh.dirty++
}

// ExpireCycle deletes expired keys from samples of keys with an expiry, at
// most limit keys per database, and reports how many it deleted and how many
// it looked at.
//
// A replica's shard deletes nothing: its primary sends the DELs.
func (sh *Shard) ExpireCycle(now int64, rnd uint64, limit int) (deleted, sampled int) {
	sh.Tick(now)
	if sh.replica || sh.expiryPaused {
		return 0, 0
	}
	for i, d := range sh.dbs {
		if d == nil || d.ExpiresLen() == 0 {
			continue
		}
		var dead [][]byte
		var hashes []uint64
		n := 0
		d.SampleExpires(rnd, func(e *Entry) bool {
			n++
			if e.Expired(now) {
				dead = append(dead, append([]byte(nil), e.hdr.key...))
				hashes = append(hashes, 0)
			}
			return n < limit
		})
		sampled += n
		for j, k := range dead {
			hashes[j] = Hash(k)
			if e, ok := d.Find(hashes[j], k); ok && e.Expired(now) {
				sh.expire(i, d, &e)
				deleted++
			}
		}
	}
	for i, d := range sh.dbs {
		if d != nil {
			fd, fs := sh.fieldExpireCycle(i, d, now, limit)
			deleted += fd
			sampled += fs
		}
	}
	return deleted, sampled
}
