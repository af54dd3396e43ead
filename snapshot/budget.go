package snapshot

import (
	"slices"
	"sync"
)

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
	// spares are the chunks of big strings that overwrites replaced and
	// the save has written, kept for the overwrites that follow: a warm
	// chunk instead of a new one that faults on first touch
	// (shard.ChunkRecycler). They count against the limit (used +
	// spareBytes never exceeds it) but not in used, so they never close
	// the gate, and they only fill room nobody wants: a writer's charge
	// sheds them first when it needs their room (shed); the live value
	// encoder waits for the output instead (tryAcquireLive).
	spares       [][]byte
	spareBytes   int64
	kept, reused int64 // spares counted (Stats)
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
		b.shed(n)
		if b.used == 0 || b.used+n <= b.limit {
			b.used += n
			b.peak = max(b.peak, b.used+b.spareBytes)
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
	b.shed(n)
	if b.used == 0 || b.used+n <= b.limit {
		b.used += n
		b.peak = max(b.peak, b.used+b.spareBytes)
		b.setGate()
		return true
	}
	return false
}

// tryAcquireLive is tryAcquire for the encoder's live values: with a gate
// they take only the lower half of the budget (up to the soft limit), so
// that the save's own pipeline never closes the gate; the upper half is
// left to the values writers drop, whose writers the gate slows. It sheds
// no spare unless nothing is in flight: the encoder can wait for the
// output, while an overwrite that finds no spare pays page faults with its
// shard locked.
func (b *budget) tryAcquireLive(n int64) bool {
	if b.gate == nil {
		return b.tryAcquire(n)
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.used == 0 {
		b.shed(n)
	}
	if b.used == 0 || (b.used+n <= b.soft && b.used+b.spareBytes+n <= b.limit) {
		b.used += n
		b.peak = max(b.peak, b.used+b.spareBytes)
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
	if n > 0 {
		b.shed(n)
	}
	b.used += n
	b.peak = max(b.peak, b.used+b.spareBytes)
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

// shed drops spares (to the garbage collector) until n more bytes fit
// with them under the limit, or none is left (b.mu held).
func (b *budget) shed(n int64) {
	for len(b.spares) > 0 && b.used+b.spareBytes+n > b.limit {
		last := len(b.spares) - 1
		b.spareBytes -= int64(cap(b.spares[last]))
		b.spares[last] = nil
		b.spares = b.spares[:last]
	}
}

// addSpare keeps chunk (a written big string's chunk an overwrite
// replaced, which nothing else references) for spare, if it fits under
// the limit beside what is in flight; else it goes to the garbage
// collector.
func (b *budget) addSpare(chunk []byte) {
	n := int64(cap(chunk))
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.used+b.spareBytes+n > b.limit {
		return
	}
	b.spareBytes += n
	b.spares = append(b.spares, chunk)
	b.peak = max(b.peak, b.used+b.spareBytes)
	b.kept++
}

// addReserve adds a chunk of the warm reserve (reserve.go) to the spares;
// the caller keeps the reserve within the limit.
func (b *budget) addReserve(chunk []byte) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.spareBytes += int64(cap(chunk))
	b.spares = append(b.spares, chunk)
	b.peak = max(b.peak, b.used+b.spareBytes)
}

// spare takes a kept chunk of exactly n bytes (capacity at most an eighth
// over), or returns nil.
func (b *budget) spare(n int) []byte {
	b.mu.Lock()
	defer b.mu.Unlock()
	for i, c := range b.spares {
		if len(c) >= n && cap(c) <= n+n/8 {
			b.spares = slices.Delete(b.spares, i, i+1)
			b.spareBytes -= int64(cap(c))
			b.reused++
			close(b.wake) // room for an encoder waiting (tryAcquireLive)
			b.wake = make(chan struct{})
			return c[:n:n]
		}
	}
	return nil
}

// dropSpares lets every kept chunk go (the save ends).
func (b *budget) dropSpares() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.shed(1 << 62)
}

// spareCounts returns how many chunks were kept as spares and reused.
func (b *budget) spareCounts() (kept, reused int64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.kept, b.reused
}
