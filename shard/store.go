// Package shard holds the keyspace: N shards, each owning the keys whose
// hash routes to it, in every database, behind one lock.
//
// Design and invariants:
//   - A key belongs to shard route(hash(key)); a key with a hash tag
//     ("{tag}") routes by the tag, so related keys can share a shard.
//   - Each shard keeps, per database, a DB: entries in a slab outside the Go
//     heap, indexed by Dashtables of 32-bit refs. Nothing per key holds a Go
//     pointer except collection objects.
//   - A shard's data is touched only under its lock. Commands on several
//     keys lock their shards in ascending ID order (LockMany), which makes
//     them atomic and deadlock-free.
//   - Any change to a stored value goes through DB.Put, DB.Delete or, for
//     in-place changes, DB.Modify first: the index's pre-change hook is
//     how a running snapshot captures the old value. The types enforce it
//     for every value: collections' (streams' too) mutating methods need
//     the types.W that only Modify grants for a stored object, and a
//     string's bytes are writable only through Entry.StrW with the W of
//     its value (writegate.go).
//   - Expiry is lazy (Lookup deletes what it finds expired) plus an active
//     cycle (ExpireCycle) that samples only keys with an expiry. On a
//     replica (SetReplica) neither deletes: expired keys read as missing
//     until the primary's DEL removes them.
package shard

import (
	"bytes"
	"math/bits"
	"slices"

	"github.com/zeebo/xxh3"
)

// Hash is the hash of a key used by both routing and the index.
func Hash(key []byte) uint64 { return xxh3.Hash(key) }

// Store is the set of shards.
type Store struct {
	shards   []*Shard
	dbnum    int
	snapSlot chan struct{} // holds a token while a snapshot runs
	newKey   newKeyHook    // "new" keyspace events (events.go)
	lfu      lfuConfig     // LFU accounting (lfu.go)
}

// NewStore makes a store with n shards and dbnum databases.
func NewStore(n, dbnum int) *Store {
	if n < 1 {
		n = 1
	}
	s := &Store{dbnum: dbnum, snapSlot: make(chan struct{}, 1)}
	s.lfu.logFactor.Store(10) // Redis's defaults
	s.lfu.decayTime.Store(1)
	for i := 0; i < n; i++ {
		s.shards = append(s.shards, newShard(i, dbnum))
		s.shards[i].newKey = &s.newKey
		s.shards[i].lfu = &s.lfu
	}
	return s
}

// AdviseHugePages makes the databases created from now on ask for
// transparent huge pages on their slab arenas (the server's disable-thp
// no); call it before any data is stored.
func (s *Store) AdviseHugePages(on bool) {
	for _, sh := range s.shards {
		sh.Lock()
		sh.hugePages = on
		sh.Unlock()
	}
}

// SetReplica switches every shard into replica mode (on) or back (off):
// in replica mode Lookup reports expired keys as missing without deleting
// them and ExpireCycle deletes nothing, because a replica's keys expire
// when its primary's DEL arrives (as in Redis). The server sets it when it
// becomes a replica and clears it on REPLICAOF NO ONE. It takes each
// shard's lock in turn.
func (s *Store) SetReplica(on bool) {
	for _, sh := range s.shards {
		sh.Lock()
		sh.replica = on
		sh.Unlock()
	}
}

// Shards returns all shards in ID order.
func (s *Store) Shards() []*Shard { return s.shards }

// Release frees the memory of every database of a store that will not be
// used again (a replica's full sync that failed half-way): slab memory is
// mapped outside the Go heap, so dropping the store alone would leak it.
func (s *Store) Release() {
	for _, sh := range s.shards {
		sh.Lock()
		for db := range sh.dbs {
			sh.FlushDB(db, false)
		}
		sh.Unlock()
	}
}

// DBNum is the number of databases.
func (s *Store) DBNum() int { return s.dbnum }

// Route returns the shard index for a key with hash h.
func (s *Store) Route(key []byte, h uint64) int {
	if i := bytes.IndexByte(key, '{'); i >= 0 {
		if j := bytes.IndexByte(key[i+1:], '}'); j > 0 {
			h = Hash(key[i+1 : i+1+j])
		}
	}
	// Remix so the shard choice is independent of the bits the index uses.
	hi, _ := bits.Mul64(h*0x9E3779B97F4A7C15, uint64(len(s.shards)))
	return int(hi)
}

// ShardOf returns the shard of key and the key's hash.
func (s *Store) ShardOf(key []byte) (*Shard, uint64) {
	h := Hash(key)
	return s.shards[s.Route(key, h)], h
}

// Set is a set of shard IDs.
type Set struct{ ids []int }

// Add adds the shard of key.
func (s *Store) Add(set *Set, key []byte) {
	id := s.Route(key, Hash(key))
	if !slices.Contains(set.ids, id) {
		set.ids = append(set.ids, id)
	}
}

// AddID adds shard id.
func (set *Set) AddID(id int) {
	if !slices.Contains(set.ids, id) {
		set.ids = append(set.ids, id)
	}
}

// IDs lists the shard IDs in the set (ascending once locked).
func (set *Set) IDs() []int { return set.ids }

// All makes a set of every shard.
func (s *Store) All() Set {
	ids := make([]int, len(s.shards))
	for i := range ids {
		ids[i] = i
	}
	return Set{ids: ids}
}

// LockMany locks the shards of set in ascending order.
func (s *Store) LockMany(set *Set) {
	slices.Sort(set.ids)
	for _, id := range set.ids {
		s.shards[id].Lock()
	}
}

// UnlockMany unlocks what LockMany locked.
func (s *Store) UnlockMany(set *Set) {
	for i := len(set.ids) - 1; i >= 0; i-- {
		s.shards[set.ids[i]].Unlock()
	}
}

// DirtySum adds up the change counters of the shards in set (locked).
func (s *Store) DirtySum(set *Set) uint64 {
	var n uint64
	for _, id := range set.ids {
		n += s.shards[id].Dirty()
	}
	return n
}
