// Package slab is a shard's memory for entries: size-classed chunks carved
// from large pages that live outside the Go heap.
//
// Design. Every entry (key, value, metadata) of a shard lives in one chunk.
// A chunk is named by a 32-bit Ref: the top 20 bits pick a page, the low 12
// bits a chunk inside it. Small chunks (up to MaxSmall bytes) come from 64 KiB
// pages, each page serving one size class; classes step by 8 bytes up to 128
// and by about 12.5% above, so internal slack stays near 6%. Pages are carved
// from 4 MiB arenas obtained with mmap, so the garbage collector neither scans
// nor paces on entry bytes: the Go heap holds only page descriptors, and the
// process's memory follows the live data instead of 2x it (GOGC's headroom).
// Chunks larger than MaxSmall get a page descriptor of their own backed by a
// Go byte slice (few, large, pointer-free).
//
// Invariants:
//   - A Ref stays valid, and its bytes stay put, until Free(ref). Chunks never
//     move, so indexes that store Refs never need fixing up.
//   - Free chunks of a page form a singly linked list through their first two
//     bytes; a page whose chunks are all free returns to the free page list and
//     its memory is given back to the OS (MADV_DONTNEED).
//   - Not safe for concurrent use: the owning shard's lock protects it.
package slab

import (
	"fmt"
	"syscall"
	"unsafe"
)

const (
	pageShift  = 16
	PageSize   = 1 << pageShift // bytes per small page
	arenaPages = 64             // pages per mmap'd arena (4 MiB)
	chunkBits  = 12
	maxChunks  = 1 << chunkBits
	maxPages   = 1 << (32 - chunkBits)
	// MaxSmall is the largest chunk served from pages; larger allocations get
	// a dedicated buffer.
	MaxSmall = 16 << 10
	minChunk = PageSize / maxChunks // 16 bytes
	noChunk  = 0xFFFF
)

// Ref names a chunk. The zero Ref is never handed out.
type Ref = uint32

// classSizes lists the chunk sizes of the small classes, ascending.
var classSizes = buildClasses()

func buildClasses() []int {
	var sizes []int
	for s := minChunk; s <= 128; s += 8 {
		sizes = append(sizes, s)
	}
	for s := 128; s < MaxSmall; {
		s += s / 8
		s = (s + 7) &^ 7
		if s > MaxSmall {
			s = MaxSmall
		}
		sizes = append(sizes, s)
	}
	return sizes
}

// classFor maps a size to the smallest class that holds it.
var classIndex = func() []uint8 {
	idx := make([]uint8, MaxSmall/8+1)
	c := 0
	for i := range idx {
		for classSizes[c] < i*8 {
			c++
		}
		idx[i] = uint8(c)
	}
	return idx
}()

func classFor(n int) int { return int(classIndex[(n+7)>>3]) }

// page describes one page (or one large allocation).
type page struct {
	mem      []byte // the page's bytes (PageSize) or the large chunk
	class    int16  // size class, -1 for a large allocation, -2 when free
	used     uint16 // chunks in use
	bump     uint16 // chunks never handed out start here
	freeHead uint16 // first free chunk, noChunk when none
	next     int32  // doubly linked list of pages with free chunks in the same class
	prev     int32
	inList   bool
}

// Slab allocates chunks for one shard.
type Slab struct {
	pages     []page
	freePages []int32     // descriptors of released small pages (memory kept, DONTNEED'd)
	freeDescs []int32     // descriptors without memory
	partial   []int32     // per class: head of the list of pages with free chunks
	inUse     int64       // bytes of chunks handed out (chunk sizes)
	requested int64       // bytes asked for
	mapped    int64       // bytes of pages and large chunks held
	arenas    [][]byte    // unused tail of the newest arena
	maps      [][]byte    // every mapping, for Release
	hugePages bool        // advise transparent huge pages on new arenas
	large     map[int]int // live large chunks by length (large.go)
}

// New returns an empty slab; hugePages asks for transparent huge pages on
// its arenas (see mapArena).
func New(hugePages bool) *Slab {
	s := &Slab{partial: make([]int32, len(classSizes)), hugePages: hugePages}
	for i := range s.partial {
		s.partial[i] = -1
	}
	// Page 0 is reserved so that Ref 0 means "none".
	s.pages = append(s.pages, page{class: -3})
	return s
}

// Alloc returns a chunk of at least n bytes. Its contents are undefined.
func (s *Slab) Alloc(n int) (Ref, []byte) {
	if n > MaxSmall {
		pi := s.newDescriptor()
		p := &s.pages[pi]
		p.mem = make([]byte, n)
		s.noteLarge(n, 1)
		p.class = -1
		p.used = 1
		s.inUse += int64(n)
		s.requested += int64(n)
		s.mapped += int64(n)
		return Ref(pi) << chunkBits, p.mem
	}
	c := classFor(n)
	size := classSizes[c]
	pi := s.partial[c]
	if pi < 0 {
		pi = s.freshPage(c)
	}
	p := &s.pages[pi]
	var idx uint16
	if p.freeHead != noChunk {
		idx = p.freeHead
		off := int(idx) * size
		p.freeHead = uint16(p.mem[off]) | uint16(p.mem[off+1])<<8
	} else {
		idx = p.bump
		p.bump++
	}
	p.used++
	if p.freeHead == noChunk && int(p.bump)*size+size > PageSize {
		s.unlink(c, pi)
	}
	s.inUse += int64(size)
	s.requested += int64(n)
	off := int(idx) * size
	return Ref(pi)<<chunkBits | Ref(idx), p.mem[off : off+size : off+size]
}

// AllocLarge is Alloc of a large chunk (more than MaxSmall bytes) in
// b, which the caller gives up: a chunk freed earlier that nothing else
// references, reused warm instead of a new buffer (whose pages fault on
// first touch).
func (s *Slab) AllocLarge(b []byte) (Ref, []byte) {
	if len(b) <= MaxSmall {
		panic(fmt.Sprintf("slab: AllocLarge of %d bytes", len(b)))
	}
	pi := s.newDescriptor()
	p := &s.pages[pi]
	p.mem = b
	s.noteLarge(len(b), 1)
	p.class = -1
	p.used = 1
	n := int64(len(b))
	s.inUse += n
	s.requested += n
	s.mapped += n
	return Ref(pi) << chunkBits, p.mem
}

// Bytes returns the chunk named by ref (its full class size).
func (s *Slab) Bytes(ref Ref) []byte {
	p := &s.pages[ref>>chunkBits]
	if p.class == -1 {
		return p.mem
	}
	size := classSizes[p.class]
	off := int(ref&(maxChunks-1)) * size
	return p.mem[off : off+size : off+size]
}

// Size returns the capacity of the chunk named by ref.
func (s *Slab) Size(ref Ref) int {
	p := &s.pages[ref>>chunkBits]
	if p.class == -1 {
		return len(p.mem)
	}
	return classSizes[p.class]
}

// Free releases the chunk named by ref; requested is the size passed to Alloc
// (for accounting only).
func (s *Slab) Free(ref Ref, requested int) {
	pi := int32(ref >> chunkBits)
	p := &s.pages[pi]
	s.requested -= int64(requested)
	if p.class == -1 {
		s.inUse -= int64(len(p.mem))
		s.mapped -= int64(len(p.mem))
		s.noteLarge(len(p.mem), -1)
		p.mem = nil
		p.class = -2
		s.freeDescs = append(s.freeDescs, pi)
		return
	}
	if p.class < 0 {
		panic(fmt.Sprintf("slab: free of invalid ref %#x", ref))
	}
	c := int(p.class)
	size := classSizes[c]
	idx := uint16(ref & (maxChunks - 1))
	off := int(idx) * size
	p.mem[off] = byte(p.freeHead)
	p.mem[off+1] = byte(p.freeHead >> 8)
	p.freeHead = idx
	p.used--
	s.inUse -= int64(size)
	if p.used == 0 {
		s.releasePage(pi)
		return
	}
	if !p.inList {
		s.link(c, pi)
	}
}

// link puts page pi at the head of class c's list of pages with free chunks.
func (s *Slab) link(c int, pi int32) {
	p := &s.pages[pi]
	p.inList = true
	p.prev = -1
	p.next = s.partial[c]
	if p.next >= 0 {
		s.pages[p.next].prev = pi
	}
	s.partial[c] = pi
}

// unlink removes page pi from class c's list.
func (s *Slab) unlink(c int, pi int32) {
	p := &s.pages[pi]
	if p.prev >= 0 {
		s.pages[p.prev].next = p.next
	} else {
		s.partial[c] = p.next
	}
	if p.next >= 0 {
		s.pages[p.next].prev = p.prev
	}
	p.next, p.prev, p.inList = -1, -1, false
}

// releasePage returns an empty small page to the free page list.
func (s *Slab) releasePage(pi int32) {
	p := &s.pages[pi]
	c := int(p.class)
	if p.inList {
		s.unlink(c, pi)
	}
	// Give the memory back to the OS but keep the mapping for reuse.
	releaseMemory(p.mem)
	p.class = -2
	s.freePages = append(s.freePages, pi)
	s.mapped -= PageSize
}

// freshPage readies a page for class c and puts it at the head of its list.
func (s *Slab) freshPage(c int) int32 {
	var pi int32
	if n := len(s.freePages); n > 0 {
		pi = s.freePages[n-1]
		s.freePages = s.freePages[:n-1]
	} else {
		pi = s.newDescriptor()
		s.pages[pi].mem = s.carvePage()
	}
	p := &s.pages[pi]
	p.class = int16(c)
	p.used = 0
	p.bump = 0
	p.freeHead = noChunk
	s.link(c, pi)
	s.mapped += PageSize
	return pi
}

// newDescriptor reuses a descriptor without memory or appends one.
func (s *Slab) newDescriptor() int32 {
	if n := len(s.freeDescs); n > 0 {
		pi := s.freeDescs[n-1]
		s.freeDescs = s.freeDescs[:n-1]
		return pi
	}
	if len(s.pages) >= maxPages {
		panic("slab: out of page descriptors")
	}
	s.pages = append(s.pages, page{class: -2, next: -1, prev: -1})
	return int32(len(s.pages) - 1)
}

// carvePage returns PageSize bytes of fresh mmap'd memory.
func (s *Slab) carvePage() []byte {
	if n := len(s.arenas); n > 0 {
		a := s.arenas[n-1]
		if len(a) >= PageSize {
			s.arenas[n-1] = a[PageSize:]
			return a[:PageSize:PageSize]
		}
	}
	mem := s.mapArena()
	s.arenas = append(s.arenas[:0], mem[PageSize:])
	return mem[:PageSize:PageSize]
}

// hugePage is the size of a transparent huge page on x86-64.
const hugePage = 2 << 20

// mapArena maps a new arena aligned to a huge page and, with hugePages,
// asks for transparent huge pages on it: entries are read at random
// (lookups, snapshots), and on a VM each TLB miss is a two-dimensional page
// walk. Whether that pays depends on the host: on one VM it sped up a
// snapshot's traversal, on another (KVM, Linux 6.18) each 2 MiB fault cost
// about 3 ms: SETs of 2M new keys took up to 40% more CPU (7 runs of 8;
// 1M new keys: no difference), with no gain on reads or saves
// (BENCHMARKS.md, "thp"). So it is Redis's disable-thp, default yes.
func (s *Slab) mapArena() []byte {
	size := PageSize * arenaPages
	raw, err := syscall.Mmap(-1, 0, size+hugePage, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_ANON|syscall.MAP_PRIVATE)
	if err != nil {
		panic(fmt.Sprintf("slab: mmap: %v", err))
	}
	s.maps = append(s.maps, raw)
	off := int(-uintptr(unsafe.Pointer(&raw[0])) & (hugePage - 1))
	mem := raw[off : off+size : off+size]
	if s.hugePages {
		adviseHugePages(mem)
	}
	return mem
}

// Stats reports the slab's memory accounting.
type Stats struct {
	InUse     int64 // bytes of chunks handed out
	Requested int64 // bytes requested by callers
	Mapped    int64 // bytes of pages and large chunks held
}

// Stats returns current accounting.
func (s *Slab) Stats() Stats {
	return Stats{InUse: s.inUse, Requested: s.requested, Mapped: s.mapped}
}

// ClassSize returns the capacity of the chunk Alloc(n) would return.
func ClassSize(n int) int {
	if n > MaxSmall {
		return n
	}
	return classSizes[classFor(n)]
}

// Release unmaps all memory. The slab and every Ref from it are unusable
// afterwards.
func (s *Slab) Release() {
	for _, m := range s.maps {
		_ = syscall.Munmap(m)
	}
	*s = Slab{}
}

// AdjustRequested corrects the requested-bytes accounting after a chunk was
// rewritten in place with a different length.
func (s *Slab) AdjustRequested(delta int) { s.requested += int64(delta) }
