package snapshot

import "testing"

// TestBufPool: the pool hands out the smallest kept buffer that fits,
// allocates when none does, and keeps at most max bytes, and no more than
// the room its caller gives.
func TestBufPool(t *testing.T) {
	p := &bufPool{max: 4 << 20}
	small, big := make([]byte, 10, 200<<10), make([]byte, 0, 3<<20)
	p.put(big, 1<<30)
	p.put(small, 1<<30)
	if b := p.get(100 << 10); cap(b) != 200<<10 || len(b) != 0 {
		t.Fatalf("got cap %d len %d, want the small buffer, empty", cap(b), len(b))
	}
	if b := p.get(1 << 20); cap(b) != 3<<20 {
		t.Fatalf("got cap %d, want the big buffer", cap(b))
	}
	if b := p.get(1 << 20); cap(b) != 1<<20 {
		t.Fatalf("empty pool: got cap %d, want a new buffer of the size asked", cap(b))
	}
	p.put(big, 1<<30)
	p.put(make([]byte, 0, 2<<20), 1<<30) // over max: dropped
	p.put(make([]byte, 0, 100), 3<<20)   // over the room: dropped
	if p.bytes != 3<<20 || len(p.bufs) != 1 {
		t.Fatalf("pool holds %d bytes in %d buffers, want only the 3 MiB one", p.bytes, len(p.bufs))
	}
}
