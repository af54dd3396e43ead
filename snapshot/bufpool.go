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
// The pool's bytes are the save's memory too: at most max (half the
// budget), on top of the budget's in-flight bytes.
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

// put keeps b for reuse if there is room for it.
func (p *bufPool) put(b []byte) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.bytes+int64(cap(b)) > p.max {
		return
	}
	p.bufs = append(p.bufs, b)
	p.bytes += int64(cap(b))
}
