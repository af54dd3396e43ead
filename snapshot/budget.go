package snapshot

import "sync"

// DefaultMaxExtraMemory is Options.MaxExtraMemory's default.
const DefaultMaxExtraMemory = 64 << 20

// budget bounds the save's extra memory: the bytes of encoded records a
// save holds between its serializers and its writers (sealed chunks queued
// or being written) and the big strings it references that the store no
// longer holds (overwritten, deleted or copied before a change in place,
// bigvalues.go), so a save's extra memory is a constant whatever the
// values' size and the write rate. Big strings captured by reference and
// still live in the store are not extra memory: they are counted apart
// (refs), only to keep the traversal from running far ahead of the output.
//
// Who waits for room: the traversal, shard unlocked, until no more than
// a quarter of the budget (used + refs) is in use before each lock hold; the big
// value encoder, off the lock; a connection whose write took the budget
// past its soft limit (half the limit), at the WriterGate before its next
// write, holding no lock (gate.go); and, only as the last resort when the
// whole budget is used, a writer's hook (shard locked). The writers never take a
// shard lock, so this cannot deadlock. One chunk is always let through
// when nothing is in flight, so a single record larger than the budget (a
// 100 MB value) still goes out, alone.
type budget struct {
	limit int64
	mu    sync.Mutex
	used  int64
	peak  int64
	refs  int64         // big strings captured by reference, live, not yet charged
	wake  chan struct{} // closed (and replaced) by every release
	// gate, when set, is closed while more than soft bytes are in flight
	// (gate.go); gateShut is what it was last set to.
	gate     *WriterGate
	soft     int64
	gateShut bool
}

func newBudget(limit int64, gate *WriterGate) *budget {
	if limit <= 0 {
		limit = DefaultMaxExtraMemory
	}
	return &budget{limit: limit, wake: make(chan struct{}), gate: gate, soft: limit / 2}
}

// setGate opens or closes the gate as used crossed the soft limit (b.mu
// held; the gate's own mutex nests inside).
func (b *budget) setGate() {
	if b.gate == nil || (b.used > b.soft) == b.gateShut {
		return
	}
	b.gateShut = !b.gateShut
	if b.gateShut {
		b.gate.close()
	} else {
		b.gate.open()
	}
}

// overSoft reports whether more than the soft limit is in flight.
func (b *budget) overSoft() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.used > b.soft
}

// acquire reserves n bytes, waiting for room; false if abort closed first.
func (b *budget) acquire(n int64, abort <-chan struct{}) bool {
	for {
		b.mu.Lock()
		if b.used == 0 || b.used+n <= b.limit {
			b.used += n
			b.peak = max(b.peak, b.used)
			b.setGate()
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

// tryAcquire reserves n bytes if there is room now.
func (b *budget) tryAcquire(n int64) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.used == 0 || b.used+n <= b.limit {
		b.used += n
		b.peak = max(b.peak, b.used)
		b.setGate()
		return true
	}
	return false
}

// tryAcquireLive is tryAcquire for the encoder's live values: with a gate
// they take only the lower half of the budget (up to the soft limit), so
// that the save's own pipeline never closes the gate; the upper half is
// left to the values writers drop, whose writers the gate slows.
func (b *budget) tryAcquireLive(n int64) bool {
	if b.gate == nil {
		return b.tryAcquire(n)
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.used == 0 || b.used+n <= b.soft {
		b.used += n
		b.peak = max(b.peak, b.used)
		b.setGate()
		return true
	}
	return false
}

// waitCh is closed by the next release.
func (b *budget) waitCh() <-chan struct{} {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.wake
}

// ref adds n (which may be negative) to the bytes referenced, not charged.
func (b *budget) ref(n int64) {
	b.mu.Lock()
	b.refs += n
	if n < 0 {
		close(b.wake)
		b.wake = make(chan struct{})
	}
	b.mu.Unlock()
}

// waitBelow waits until at most n bytes are in flight or referenced; false
// if abort closed first.
func (b *budget) waitBelow(n int64, abort <-chan struct{}) bool {
	for {
		b.mu.Lock()
		if b.used+b.refs <= n {
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
	b.setGate()
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
	b.setGate()
	close(b.wake)
	b.wake = make(chan struct{})
	b.mu.Unlock()
}

// inUse is the bytes in flight now.
func (b *budget) inUse() int64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.used
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
