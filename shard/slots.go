package shard

// The per-slot key index of cluster mode: for database 0, the keys of each
// of Redis Cluster's 16384 hash slots, so that CLUSTER COUNTKEYSINSLOT,
// GETKEYSINSLOT and slot migration cost what the slot holds, not what the
// keyspace holds. It exists only once Store.EnableSlotIndex was called (a
// standalone server pays a nil check per insert and delete).
//
// Invariant: while d.slots is set, a key is in d.slots.keys[KeySlot(key)]
// exactly when it is in d.main. insert and Delete (every path that adds or
// removes a key: writes, expiry, eviction, RENAME, loading) maintain it; a
// flush drops the DB and its index together; Adopt rebuilds it for adopted
// data.

import "github.com/damselflydb/damselfly/cluster"

type slotIndex struct {
	keys []map[string]struct{} // per slot, allocated on first key
}

func newSlotIndex() *slotIndex {
	return &slotIndex{keys: make([]map[string]struct{}, cluster.Slots)}
}

func (x *slotIndex) add(key []byte) {
	s := cluster.KeySlot(key)
	m := x.keys[s]
	if m == nil {
		m = map[string]struct{}{}
		x.keys[s] = m
	}
	m[string(key)] = struct{}{}
}

func (x *slotIndex) remove(key []byte) {
	s := cluster.KeySlot(key)
	if m := x.keys[s]; m != nil {
		delete(m, string(key))
		if len(m) == 0 {
			x.keys[s] = nil // a slot migrated away gives its map back
		}
	}
}

// EnableSlotIndex turns the per-slot index of database 0 on in every shard
// (cluster mode), building it from the keys already there.
func (s *Store) EnableSlotIndex() {
	for _, sh := range s.shards {
		sh.Lock()
		sh.slotIndexed = true
		if d := sh.dbs[0]; d != nil {
			d.buildSlotIndex()
		}
		sh.Unlock()
	}
}

// buildSlotIndex indexes every key of d.
func (d *DB) buildSlotIndex() {
	d.slots = newSlotIndex()
	cur := uint64(0)
	for {
		cur = d.Scan(cur, func(e *Entry) { d.slots.add(e.Key()) })
		if cur == 0 {
			return
		}
	}
}

// SlotCount is the number of keys of d in slot.
func (d *DB) SlotCount(slot int) int {
	if d.slots != nil {
		return len(d.slots.keys[slot])
	}
	n := 0
	d.scanAll(func(e *Entry) {
		if cluster.KeySlot(e.Key()) == slot {
			n++
		}
	})
	return n
}

// AppendSlotKeys appends up to max keys of slot (all when max < 0) to dst,
// as copies.
func (d *DB) AppendSlotKeys(dst [][]byte, slot, max int) [][]byte {
	if max == 0 {
		return dst
	}
	n := 0
	if d.slots != nil {
		for k := range d.slots.keys[slot] {
			dst = append(dst, []byte(k))
			if n++; n == max {
				break
			}
		}
		return dst
	}
	d.scanAll(func(e *Entry) {
		if (max < 0 || n < max) && cluster.KeySlot(e.Key()) == slot {
			dst = append(dst, append([]byte(nil), e.Key()...))
			n++
		}
	})
	return dst
}

func (d *DB) scanAll(fn func(e *Entry)) {
	cur := uint64(0)
	for {
		cur = d.Scan(cur, fn)
		if cur == 0 {
			return
		}
	}
}
