package types

import (
	"bytes"
	"runtime"
	"testing"
	"unsafe"
)

// TestNodeMemModel checks nodeMem against a model of what it hands out:
// every buffer has length and capacity n and is zero, no two buffers ever
// share a byte (the allocator never reuses memory, the garbage collector
// does), lists under the threshold and big buffers get buffers of their
// own, and chunk sizes follow the list's size within the bounds.
func TestNodeMemModel(t *testing.T) {
	for _, seed := range []uint64{1, 2, 3} {
		r := newRand(seed)
		m := &nodeMem{from: 16 << 10, minChunk: 64 << 10, maxChunk: 256 << 10}
		type span struct{ lo, hi uintptr }
		var spans []span
		var keep [][]byte // keeps every buffer alive, so addresses stay unique
		var chunkLo, chunkHi uintptr
		for step := 0; step < 3000; step++ {
			if r.IntN(200) == 0 {
				m.forget()
				chunkLo, chunkHi = 0, 0
			}
			n := 1 + r.IntN(20000)
			if r.IntN(4) != 0 {
				n = 8192
			}
			live := r.IntN(2 << 20)
			before := m.reserved()
			b := m.alloc(n, live)
			if len(b) != n || cap(b) != n {
				t.Fatalf("alloc(%d): len %d cap %d", n, len(b), cap(b))
			}
			if !bytes.Equal(b, make([]byte, n)) {
				t.Fatal("buffer not zero")
			}
			lo := uintptr(unsafe.Pointer(&b[0]))
			s := span{lo, lo + uintptr(n)}
			for _, o := range spans {
				if s.lo < o.hi && o.lo < s.hi {
					t.Fatalf("step %d: buffer %#x-%#x overlaps %#x-%#x", step, s.lo, s.hi, o.lo, o.hi)
				}
			}
			spans = append(spans, s)
			keep = append(keep, b)
			for i := range b {
				b[i] = byte(step) | 1 // later allocations must not see this
			}
			own := live < m.from || n >= m.minChunk/4
			switch {
			case own:
				if m.reserved() != before {
					t.Fatal("an own buffer changed the chunk")
				}
			case n <= before:
				if m.reserved() != before-n || s.lo < chunkLo || s.hi > chunkHi {
					t.Fatal("buffer not from the current chunk")
				}
			default: // a new chunk
				c := m.reserved() + n
				want := m.minChunk
				for want < live/4 && want < m.maxChunk {
					want *= 2
				}
				if c != want || !m.chunked {
					t.Fatalf("live %d: chunk of %d, want %d", live, c, want)
				}
				chunkLo, chunkHi = s.lo, s.lo+uintptr(c)
			}
		}
		runtime.KeepAlive(keep)
	}
	var nilMem *nodeMem
	if b := nilMem.alloc(100, 1<<30); len(b) != 100 || cap(b) != 100 || nilMem.reserved() != 0 {
		t.Fatal("nil nodeMem")
	}
}

// TestListChunksLifetime builds a list big enough for real chunks (over
// chunkFrom), checks its views survive the removal of most of it (the
// bytes of a removed node are never handed out again) and that the
// removals copy the survivors out of the chunks (compaction), so that
// the garbage collector can take the chunks back.
func TestListChunksLifetime(t *testing.T) {
	l := newList()
	v := bytes.Repeat([]byte("v"), 256)
	n := 3 * chunkFrom / 256
	for i := 0; i < n; i++ {
		v[0] = byte(i)
		if i%2 == 0 {
			l.PushFront(wOf(l), nil, v)
		} else {
			l.PushBack(wOf(l), nil, v)
		}
	}
	if !l.mem.chunked {
		t.Fatal("a 24 MiB list uses no chunk")
	}
	if got := l.MemoryUsage(); got < 3*chunkFrom || got > 3*chunkFrom+maxChunk+chunkFrom/4 {
		t.Fatalf("MEMORY USAGE %d for %d bytes of elements", got, 3*chunkFrom)
	}
	head, _ := l.Index(0)
	want := bytes.Clone(head)
	// LTRIM keeping a small part: the removed elements outnumber the kept
	l.Trim(wOf(l), 10, 1009, nil)
	if l.mem.chunked {
		t.Fatal("a trimmed list still uses chunks")
	}
	if !bytes.Equal(head, want) {
		t.Fatal("a view of a trimmed element changed")
	}
	for i, nd := range l.nodes {
		if cap(nd.b) > 2*len(nd.b)+64 || nd.base != nil {
			t.Fatalf("node %d not compacted: len %d cap %d", i, len(nd.b), cap(nd.b))
		}
	}
	if l.Len() != 1000 {
		t.Fatal("trim length")
	}

	// pops from a chunked list back under chunkFrom/2 compact it too
	l = newList()
	for i := 0; i < n; i++ {
		l.PushFront(wOf(l), nil, v)
	}
	l.PopBack(wOf(l), n-1000)
	if l.mem.chunked || l.Len() != 1000 {
		t.Fatal("popping to 1000 elements left the list in chunks")
	}
}
