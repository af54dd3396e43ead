package snapshot

import "sync"

// bufPool keeps written chunk buffers for the serializers and big value
// encoders to reuse, up to max bytes of capacity in all. Without it, every
// chunk the pool could not keep became garbage, and a save writes its
// whole dataset through chunks: with values in the Go heap (large slab
// chunks) the collector lets garbage grow to GOGC's share of that heap
// before a cycle, so each save of 100 KB or 10 MB values held tens of MiB
// of dead buffers and ran collections whose assists stall writers that
// allocate. The pool hands out the smallest buffer that fits, so a 10 MB
// buffer is not taken for a 128 KiB chunk while a small one would do.
//
// The pool's bytes are the save's memory too, so it keeps a buffer only
// while they fit, with the budget's bytes in flight, under the budget
// (room, given by put's caller), and at most max (half the budget) in
// all: a save holds about the budget (plus one record larger than it), in
// flight or pooled, not the budget plus the pool.
type bufPool struct {
	mu    sync.Mutex
	bufs  [][]byte
	bytes int64
	max   int64
}

// get returns an empty buffer of capacity at least n.
func (p *bufPool) get(n int) []byte {
	p.mu.Lock()
	best := -1
	for i, b := range p.bufs {
		if cap(b) >= n && (best < 0 || cap(b) < cap(p.bufs[best])) {
			best = i
		}
	}
	if best >= 0 {
		b := p.bufs[best]
		last := len(p.bufs) - 1
		p.bufs[best], p.bufs[last] = p.bufs[last], nil
		p.bufs = p.bufs[:last]
		p.bytes -= int64(cap(b))
		p.mu.Unlock()
		return b[:0]
	}
	p.mu.Unlock()
	return make([]byte, 0, max(n, chunkBytes+chunkBytes/4))
}

// put keeps b for reuse if the pool's bytes stay within max and room.
func (p *bufPool) put(b []byte, room int64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if n := p.bytes + int64(cap(b)); n > p.max || n > room {
		return
	}
	p.bufs = append(p.bufs, b)
	p.bytes += int64(cap(b))
}
