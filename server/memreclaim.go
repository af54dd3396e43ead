package server

import (
	"runtime"
	"sync"
	"sync/atomic"
	"time"
)

// Used memory counts the Go heap, which keeps freed objects until the next
// garbage collection. After DEL of a big collection nothing may allocate, so
// no collection comes, and under noeviction every write would get -OOM for
// minutes although the data is gone. So, when a write is about to be refused
// and writes (deletes among them) were committed since the last such check,
// the server collects and measures again at once, and admits the write if
// memory is now under the limit. Writes refused in a loop cannot turn into a
// GC storm: a collection needs a committed write (a DEL, say) since the
// previous one, and at most one runs at a time (others are refused as
// before). The cost is one collection per write that frees, while over the
// limit; the collector's marking is cheap since entries live outside the Go
// heap.

type reclaimer struct {
	mu        sync.Mutex
	lastAt    atomic.Int64 // unix ns of the last forced collection
	lastDirty atomic.Int64 // s.dirty then
}

// reclaimAndAdmit is the noeviction admission after a refusal by the cached
// measure: true when a fresh measure is under maxmemory.
func (c *Client) reclaimAndAdmit() bool {
	s := c.srv
	r := &s.reclaim
	d := s.dirty.Load()
	if d == r.lastDirty.Load() {
		return false
	}
	if !r.mu.TryLock() {
		return false
	}
	defer r.mu.Unlock()
	runtime.GC()
	heap, dataset := s.memoryParts(c) // c's held shards (EXEC, scripts) are not locked again
	s.usedMem.Store(heap + dataset)
	s.updateBudget(heap+dataset, dataset)
	r.lastAt.Store(time.Now().UnixNano())
	r.lastDirty.Store(d)
	return heap+dataset <= s.cfg.maxMemory.Load()
}
