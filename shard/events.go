package shard

import "sync/atomic"

// newKeyHook tells the server of every key a command creates (DB.Put of an
// absent key; loading a dump with DB.Add does not count), for the "new"
// keyspace notification. It is shared by every shard of a store; fn is
// called under the creating shard's lock, only while on is set, so the cost
// when off is one atomic load per created key.
type newKeyHook struct {
	on atomic.Bool
	fn func(db int, key []byte)
}

// OnNewKey sets the function told of created keys (before the store is
// used; it runs under the shard lock and must not take other locks but
// leaves).
func (s *Store) OnNewKey(fn func(db int, key []byte)) { s.newKey.fn = fn }

// SetNewKeyEvents turns the OnNewKey calls on or off.
func (s *Store) SetNewKeyEvents(on bool) { s.newKey.on.Store(on && s.newKey.fn != nil) }

// noteNew reports key, just created in d, to the hook.
func (d *DB) noteNew(key []byte) {
	if h := d.newKey; h != nil && h.on.Load() {
		h.fn(d.idx, key)
	}
}
