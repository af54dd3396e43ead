package server

// Keys by slot: COUNTKEYSINSLOT, GETKEYSINSLOT and dropping the keys of a
// slot handed to another node. Cluster mode has database 0 only.

import (
	"github.com/damselflydb/damselfly/shard"
)

// countKeysInSlot counts the keys of database 0 in slot.
func (s *Server) countKeysInSlot(c *Client, slot int) int {
	n := 0
	for _, sh := range s.store.Shards() {
		c.lockShard(sh)
		if d := sh.PeekDB(0); d != nil {
			n += d.SlotCount(slot)
		}
		c.unlockShard(sh)
	}
	return n
}

// keysInSlot returns up to max keys of database 0 in slot.
func (s *Server) keysInSlot(c *Client, slot, max int) [][]byte {
	var out [][]byte
	for _, sh := range s.store.Shards() {
		if len(out) >= max {
			break
		}
		c.lockShard(sh)
		if d := sh.PeekDB(0); d != nil {
			out = d.AppendSlotKeys(out, slot, max-len(out))
		}
		c.unlockShard(sh)
	}
	return out
}

// dropSlots deletes the keys of the given slots (handed to another node),
// journalled as DEL so replicas and the AOF follow.
func (s *Server) dropSlots(slots []int) {
	if len(slots) == 0 {
		return
	}
	del := []byte("DEL")
	for _, sh := range s.store.Shards() {
		sh.Lock()
		if d := sh.PeekDB(0); d != nil {
			for _, slot := range slots {
				for _, k := range d.AppendSlotKeys(nil, slot, -1) {
					if e, ok := d.Find(shard.Hash(k), k); ok {
						d.Delete(&e)
						s.dirty.Add(1)
						if !s.repl.IsReplica() {
							s.journal(0, [][]byte{del, k})
						}
					}
				}
			}
		}
		sh.Unlock()
	}
}
