package snapshot

import "sync"

// DefaultMaxExtraMemory is Options.MaxExtraMemory's default.
const DefaultMaxExtraMemory = 64 << 20

// budget bounds the bytes of encoded records a save holds between its
// serializers and its writers (sealed chunks queued or being written), so
// a save's extra memory is a constant whatever the values' size and the
// write rate. A serializer that would exceed it waits, shard locked, for
// the writers to drain: a writer touching a key not yet saved then waits
// for the saver instead of the save copying more (Valkey's choice for its
// forkless save). The writers never take a shard lock, so this cannot
// deadlock. One chunk is always let through when nothing is in flight, so
// a single record larger than the budget (a 100 MB value) still goes out,
// alone. The traversal waits, shard unlocked, until no more than half the
// budget is in use before each lock hold, so writes that capture keys not
// yet saved find the other half free and rarely wait.
type budget struct {
	limit int64
	mu    sync.Mutex
	used  int64
	peak  int64
	wake  chan struct{} // closed (and replaced) by every release
}

func newBudget(limit int64) *budget {
	if limit <= 0 {
		limit = DefaultMaxExtraMemory
	}
	return &budget{limit: limit, wake: make(chan struct{})}
}

// acquire reserves n bytes, waiting for room; false if abort closed first.
func (b *budget) acquire(n int64, abort <-chan struct{}) bool {
	for {
		b.mu.Lock()
		if b.used == 0 || b.used+n <= b.limit {
			b.used += n
			b.peak = max(b.peak, b.used)
			b.mu.Unlock()
			return true
		}
		w := b.wake
		b.mu.Unlock()
		select {
		case <-w:
		case <-abort:
			return false
		}
	}
}

// waitBelow waits until at most n bytes are in flight; false if abort
// closed first.
func (b *budget) waitBelow(n int64, abort <-chan struct{}) bool {
	for {
		b.mu.Lock()
		if b.used <= n {
			b.mu.Unlock()
			return true
		}
		w := b.wake
		b.mu.Unlock()
		select {
		case <-w:
		case <-abort:
			return false
		}
	}
}

// adjust adds n (which may be negative) to the bytes in flight without
// waiting: a chunk taking over the charge of the values it encodes.
func (b *budget) adjust(n int64) {
	b.mu.Lock()
	b.used += n
	b.peak = max(b.peak, b.used)
	if n < 0 {
		close(b.wake)
		b.wake = make(chan struct{})
	}
	b.mu.Unlock()
}

// release returns n bytes reserved by acquire.
func (b *budget) release(n int64) {
	b.mu.Lock()
	b.used -= n
	close(b.wake)
	b.wake = make(chan struct{})
	b.mu.Unlock()
}

// chunks is the capacity of a chunk queue: the budget, not the queue,
// bounds what is in flight, so a queue holds as many full chunks as fit.
func (b *budget) chunks() int { return int(min(max(b.limit/chunkBytes, 8), 4096)) }

// maxUsed is the most bytes that were in flight at once.
func (b *budget) maxUsed() int64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.peak
}
