package types

// nodeMem hands a big quicklist its node buffers out of a few big chunks of
// the Go heap. With hugePages (disable-thp no) each chunk is asked to be
// backed by 2 MiB pages (transparent huge pages in madvise mode, as on most
// distributions): a list that only grows (a queue fed by LPUSH) otherwise
// takes a minor fault for every fresh 4 KiB of node memory. On one VM that
// was the largest part of a pipelined LPUSH's cost and huge pages cut it by
// a fifth (BENCHMARKS.md, "pipecpu" and "lpush"); on another each huge page
// fault cost about 3 ms and LPUSH 30-55% more CPU ("thp"), so it is off by
// default, like Redis's disable-thp.
//
// The chunks are ordinary Go byte slices, so the garbage collector keeps a
// chunk while any node (or any reply or snapshot still reading a node's
// bytes) points into it and frees it after: there is no free path to get
// wrong and no use after free. The price is that a chunk lives as long as
// its longest-lived node. Three rules keep that bounded:
//   - Lists under chunkFrom bytes of nodes allocate each node on its own
//     (a chunk below 2 MiB gets no huge page anyway).
//   - A chunk is about a quarter of the list's node memory (a power of two,
//     minChunk to maxChunk), so a window of live nodes (a queue of steady
//     length cycles through the chunks) holds at most two chunks more than
//     it uses: at most about 2x the list's own size.
//   - A list whose removals leave it sparse (LREM, LTRIM removing at least
//     as much as they keep) or small again (under chunkFrom/2) has its
//     nodes copied out of the chunks (List.compact), amortised against the
//     removed bytes.
//
// Invariant: free is the unused tail of the newest chunk; bytes handed out
// are never handed out again, so no node shares bytes with another.
type nodeMem struct {
	hugePages bool // advise transparent huge pages on new chunks
	free      []byte
	chunked   bool // some node of the list may live in a chunk
	nodeMax   int  // the node byte limit when the last chunk was made

	// from, minChunk, maxChunk: chunkFrom, minChunk, maxChunk except in
	// tests (which use small ones to exercise chunks on small lists)
	from, minChunk, maxChunk int
}

const (
	chunkFrom = 8 << 20  // node memory from which a list uses chunks
	minChunk  = 4 << 20  // two huge pages: at least one aligned inside
	maxChunk  = 32 << 20 // the unaligned ends (< 2 MiB each) are a small share
)

func newNodeMem(hugePages bool) *nodeMem {
	return &nodeMem{hugePages: hugePages, from: chunkFrom, minChunk: minChunk, maxChunk: maxChunk}
}

// chunking reports whether alloc takes node buffers from chunks for a
// list of live bytes of nodes.
func (m *nodeMem) chunking(live int) bool { return m != nil && live >= m.from }

// alloc returns n bytes (capacity n) of zeroed node memory; live is the
// list's node memory now. A nil nodeMem allocates each buffer on its own.
func (m *nodeMem) alloc(n, live int) []byte {
	if !m.chunking(live) || n >= m.minChunk/4 {
		return make([]byte, n)
	}
	if n > len(m.free) {
		c := m.minChunk
		for c < live/4 && c < m.maxChunk {
			c *= 2
		}
		m.free = make([]byte, c)
		if m.hugePages {
			adviseHugePages(m.free)
		}
		m.chunked = true
		m.nodeMax = n
	}
	b := m.free[:n:n]
	m.free = m.free[n:]
	return b
}

// forget drops the newest chunk's tail: no node lives in a chunk now.
func (m *nodeMem) forget() {
	m.free = nil
	m.chunked = false
}

// reserved returns the bytes of the newest chunk not handed out yet.
func (m *nodeMem) reserved() int {
	if m == nil {
		return 0
	}
	return len(m.free)
}
