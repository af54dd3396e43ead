package dash

import (
	"bytes"
	"math/bits"
	"unsafe"
)

// Ref is the caller-owned 32-bit reference stored for an entry (for example
// an offset into the caller's slab). Dash never interprets it.
type Ref = uint32

// Keys resolves a Ref to the key bytes stored under it. The returned slice is
// only read during the call that asked for it.
type Keys interface {
	Key(ref Ref) []byte
}

// Geometry. See doc.go for the reasoning behind these numbers.
const (
	slotsPerBucket = 8
	nRegular       = 64 // regular buckets per segment (power of two)
	nStash         = 8  // stash buckets per segment (power of two, <= 8)
	nBuckets       = nRegular + nStash

	bucketMask = nRegular - 1
	stashMask  = nStash - 1

	// maxDepth bounds the global depth. The bucket index and fingerprint use
	// the low 16 bits of the hash, the directory the top bits, so they stay
	// independent for any depth <= 48; 32 is far beyond any realistic table
	// (2^32 segments of 4 KiB) and only reached by a broken hash function.
	maxDepth = 32
)

const (
	lsb = 0x0101010101010101
	msb = 0x8080808080808080
	low = 0x7f7f7f7f7f7f7f7f
)

// bucket is 48 bytes: 8 fingerprints packed in one word (SWAR match), four
// bytes of metadata and 8 refs; everything a lookup reads lies in its first
// 44 bytes. It holds no pointers. Bucket versions live in a separate array of
// the segment: only snapshots and mutations read them.
type bucket struct {
	fps     uint64                 // byte k = fingerprint of slot k
	occ     uint8                  // bit k set: slot k occupied
	probe   uint8                  // bit k set: slot k's entry is not in its home bucket
	ovf     uint8                  // regular buckets: entries homed here that live in the stash
	stashes uint8                  // regular buckets: bit i set: stash bucket i may hold such entries
	refs    [slotsPerBucket]uint32 // caller references
}

// segment is one allocation of 72*48+72*8+8 = 4040 bytes (Go's 4096-byte
// size class, so nothing is wasted).
type segment struct {
	buckets  [nBuckets]bucket
	versions [nBuckets]uint64 // snapshot version of each bucket (see OnBeforeChange)
	depth    uint8            // local depth
}

const segmentSize = int(unsafe.Sizeof(segment{}))

// match returns the mask of occupied slots whose fingerprint equals fp.
// The zero-byte test is exact (no false positives from borrows).
func (b *bucket) match(fp uint8) uint8 {
	x := b.fps ^ (lsb * uint64(fp))
	z := ^(((x & low) + low) | x) & msb // high bit of each zero byte
	return uint8(((z>>7)*0x0102040810204080)>>56) & b.occ
}

func (b *bucket) fp(k uint) uint8 { return uint8(b.fps >> (8 * k)) }

func (b *bucket) put(k uint, fp uint8, ref Ref, probe bool) {
	b.fps = b.fps&^(0xff<<(8*k)) | uint64(fp)<<(8*k)
	b.refs[k] = ref
	b.occ |= 1 << k
	if probe {
		b.probe |= 1 << k
	} else {
		b.probe &^= 1 << k
	}
}

func (b *bucket) free() uint { return uint(bits.TrailingZeros8(^b.occ)) }

func (b *bucket) full() bool { return b.occ == 0xff }

// neighbour returns the second bucket an entry homed in bucket i may use.
// It is always a higher index except for the last regular bucket, whose
// neighbour is the one before it (entries never *move* backwards, see doc.go).
func neighbour(i uint) uint {
	if i == nRegular-1 {
		return nRegular - 2
	}
	return i + 1
}

func homeOf(h uint64) uint { return uint(h) & bucketMask }
func fpOf(h uint64) uint8  { return uint8(h >> 8) }

// Pos is the position of an entry. It is invalidated by any Insert, Remove
// or Clear on the table.
type Pos struct {
	s    *segment
	b    uint8 // bucket index within the segment
	slot uint8
	home uint8 // home bucket of the entry (for stash bookkeeping)
}

// Table is a Dashtable. It is not safe for concurrent use.
type Table struct {
	dir     []*segment
	shift   uint // 64 - depth
	depth   uint // global depth
	count   int
	segs    int
	version uint64
	keys    Keys
	hash    func([]byte) uint64
	hook    func(Bucket)
	sink    uint8 // keeps Prefetch's reads
}

// New returns an empty table. hash must be the function callers use to
// compute the h arguments of Find and Insert; dash calls it (through keys)
// to redistribute entries when a segment splits.
func New(keys Keys, hash func(key []byte) uint64) *Table {
	t := &Table{keys: keys, hash: hash}
	t.reset()
	return t
}

func (t *Table) reset() {
	s := new(segment)
	for i := range s.versions {
		s.versions[i] = t.version
	}
	t.dir = []*segment{s}
	t.depth, t.shift = 0, 64
	t.count, t.segs = 0, 1
}

// Len returns the number of entries.
func (t *Table) Len() int { return t.count }

// Segments returns the number of segments.
func (t *Table) Segments() int { return t.segs }

// MemUsage returns the bytes held by the table itself (segments and
// directory), excluding the keys and values the refs point to.
func (t *Table) MemUsage() int {
	return t.segs*4096 + cap(t.dir)*8 + int(unsafe.Sizeof(*t))
}

// Find returns the position of key, whose hash is h.
func (t *Table) Find(h uint64, key []byte) (Pos, bool) {
	s := t.dir[h>>t.shift]
	home := homeOf(h)
	fp := fpOf(h)
	b := &s.buckets[home]
	for m := b.match(fp) &^ b.probe; m != 0; m &= m - 1 {
		k := uint(bits.TrailingZeros8(m))
		if bytes.Equal(t.keys.Key(b.refs[k]), key) {
			return Pos{s, uint8(home), uint8(k), uint8(home)}, true
		}
	}
	n := neighbour(home)
	nb := &s.buckets[n]
	for m := nb.match(fp) & nb.probe; m != 0; m &= m - 1 {
		k := uint(bits.TrailingZeros8(m))
		if bytes.Equal(t.keys.Key(nb.refs[k]), key) {
			return Pos{s, uint8(n), uint8(k), uint8(home)}, true
		}
	}
	if b.ovf != 0 {
		return t.findStash(s, b.stashes, home, fp, key)
	}
	return Pos{}, false
}

// Prefetch reads the buckets of hash h (home, neighbour, home's version)
// so that a Find or Insert of h soon after finds them in cache. Called for
// a batch of hashes before operating on them, it lets the CPU overlap the
// cache (and TLB) misses that otherwise stall each operation in turn: bulk
// loading is dominated by them once the table outgrows the caches.
func (t *Table) Prefetch(h uint64) {
	s := t.dir[h>>t.shift]
	i := homeOf(h)
	// Find reads the neighbour too (often the next cache line), an insert
	// the version (another line, see stamp).
	t.sink += s.buckets[i].occ + s.buckets[neighbour(i)].probe + uint8(s.versions[i])
}

// PrefetchLookups prepares Finds of a batch of hashes: it reads their home
// and neighbour buckets (as Prefetch), all of them first, so that the CPU
// overlaps those cache misses instead of stalling on each in turn (a
// pipeline of GETs or SETs over a table bigger than the caches). It then
// appends to refs, per hash, the ref of its first fingerprint match (the
// entry a Find would compare first; in a stash bucket when the home and
// neighbour buckets have none), for the caller to prefetch the same way,
// and returns refs. It changes nothing.
func (t *Table) PrefetchLookups(hs []uint64, refs []Ref) []Ref {
	for _, h := range hs {
		t.Prefetch(h)
	}
	for _, h := range hs {
		s := t.dir[h>>t.shift]
		home := homeOf(h)
		fp := fpOf(h)
		hb := &s.buckets[home]
		b := hb
		m := b.match(fp) &^ b.probe
		if m == 0 {
			b = &s.buckets[neighbour(home)]
			m = b.match(fp) & b.probe
		}
		// Neither holds it: Find goes on to the stash buckets (findStash),
		// two more misses each (bucket, entry) unless read here too.
		for st := hb.stashes; m == 0 && hb.ovf != 0 && st != 0; st &= st - 1 {
			b = &s.buckets[nRegular+uint(bits.TrailingZeros8(st))]
			m = b.match(fp)
		}
		if m != 0 {
			refs = append(refs, b.refs[bits.TrailingZeros8(m)])
		}
	}
	return refs
}

func (t *Table) findStash(s *segment, stashes uint8, home uint, fp uint8, key []byte) (Pos, bool) {
	for ; stashes != 0; stashes &= stashes - 1 {
		j := nRegular + uint(bits.TrailingZeros8(stashes))
		sb := &s.buckets[j]
		for m := sb.match(fp); m != 0; m &= m - 1 {
			k := uint(bits.TrailingZeros8(m))
			if bytes.Equal(t.keys.Key(sb.refs[k]), key) {
				return Pos{s, uint8(j), uint8(k), uint8(home)}, true
			}
		}
	}
	return Pos{}, false
}

// Ref returns the ref stored at p.
func (t *Table) Ref(p Pos) Ref { return p.s.buckets[p.b].refs[p.slot] }

// Replace changes the ref stored at p. The new ref must resolve to the same
// key. The hook sees the bucket first.
func (t *Table) Replace(p Pos, ref Ref) {
	b := &p.s.buckets[p.b]
	t.before(p.s, uint(p.b))
	b.refs[p.slot] = ref
	t.stamp(p.s, uint(p.b))
}

// Remove deletes the entry at p.
func (t *Table) Remove(p Pos) {
	b := &p.s.buckets[p.b]
	t.before(p.s, uint(p.b))
	bit := uint8(1) << p.slot
	b.occ &^= bit
	b.probe &^= bit
	t.stamp(p.s, uint(p.b))
	if p.b >= nRegular {
		hb := &p.s.buckets[p.home]
		hb.ovf--
		if hb.ovf == 0 {
			hb.stashes = 0
		}
	}
	t.count--
}

// Insert adds an entry whose key (keys.Key(ref)) hashes to h. The caller
// guarantees the key is absent. Insert may split a segment.
func (t *Table) Insert(h uint64, ref Ref) Pos {
	for {
		idx := h >> t.shift
		if p, ok := t.insertSeg(t.dir[idx], h, ref); ok {
			t.count++
			return p
		}
		t.split(idx)
	}
}

func (t *Table) insertSeg(s *segment, h uint64, ref Ref) (Pos, bool) {
	home := homeOf(h)
	fp := fpOf(h)
	b := &s.buckets[home]
	if !b.full() {
		k := b.free()
		t.before(s, home)
		b.put(k, fp, ref, false)
		t.stamp(s, home)
		return Pos{s, uint8(home), uint8(k), uint8(home)}, true
	}
	n := neighbour(home)
	nb := &s.buckets[n]
	if !nb.full() {
		k := nb.free()
		t.before(s, n)
		nb.put(k, fp, ref, true)
		t.stamp(s, n)
		return Pos{s, uint8(n), uint8(k), uint8(home)}, true
	}
	// Displacement: move an entry living in its own home bucket n forward
	// to its neighbour n+1 (only forward moves, see doc.go).
	if n == home+1 && n+1 < nRegular {
		nn := &s.buckets[n+1]
		if own := ^nb.probe; !nn.full() && own != 0 {
			k := uint(bits.TrailingZeros8(own))
			k2 := nn.free()
			t.before(s, n)
			t.before(s, n+1)
			nn.put(k2, nb.fp(k), nb.refs[k], true)
			nb.put(k, fp, ref, true)
			t.stamp(s, n+1)
			t.stamp(s, n)
			return Pos{s, uint8(n), uint8(k), uint8(home)}, true
		}
	}
	start := uint(h>>16) & stashMask
	for i := uint(0); i < nStash; i++ {
		si := (start + i) & stashMask
		sb := &s.buckets[nRegular+si]
		if sb.full() {
			continue
		}
		k := sb.free()
		t.before(s, nRegular+si)
		sb.put(k, fp, ref, true)
		t.stamp(s, nRegular+si)
		b.ovf++
		b.stashes |= 1 << si
		return Pos{s, uint8(nRegular + si), uint8(k), uint8(home)}, true
	}
	return Pos{}, false
}

// Clear drops every entry and shrinks the table to one segment. When a hook
// is registered it is first called with every non-empty bucket (so a running
// snapshot captures them); callers that want to avoid that cost during a
// snapshot should swap in a fresh table instead.
func (t *Table) Clear() {
	if t.hook != nil {
		t.forEachSegment(func(s *segment) {
			for i := range s.buckets {
				if s.buckets[i].occ != 0 {
					t.hook(Bucket{s, uint8(i)})
				}
			}
		})
	}
	t.reset()
}

// before calls the hook with bucket i of s before it changes.
func (t *Table) before(s *segment, i uint) {
	if t.hook != nil {
		t.hook(Bucket{s, uint8(i)})
	}
}

// stamp raises the version of bucket i of s to the table version after a change.
func (t *Table) stamp(s *segment, i uint) {
	if v := &s.versions[i]; *v < t.version {
		*v = t.version
	}
}

// forEachSegment calls fn once per distinct segment, in directory order.
func (t *Table) forEachSegment(fn func(s *segment)) {
	for i := 0; i < len(t.dir); {
		s := t.dir[i]
		fn(s)
		i += 1 << (t.depth - uint(s.depth))
	}
}

// grow doubles the directory.
func (t *Table) grow() {
	if t.depth >= maxDepth {
		panic("dash: directory depth limit reached (hash function produces too many collisions)")
	}
	nd := make([]*segment, 2*len(t.dir))
	for i, s := range t.dir {
		nd[2*i] = s
		nd[2*i+1] = s
	}
	t.dir = nd
	t.depth++
	t.shift--
}

// split splits the segment at directory index idx into two segments of
// local depth+1. Entries keep their (bucket, slot) position: the half whose
// next hash bit is 1 moves to the new segment at the same position, so every
// placement stays valid and nothing moves inside a segment.
func (t *Table) split(idx uint64) {
	s := t.dir[idx]
	if uint(s.depth) == t.depth {
		t.grow()
		idx <<= 1
	}
	if t.hook != nil {
		for i := range s.buckets {
			t.hook(Bucket{s, uint8(i)})
		}
	}
	d := uint(s.depth)
	ns := new(segment)
	ns.depth = uint8(d + 1)
	s.depth = uint8(d + 1)
	t.segs++
	bit := uint64(1) << (63 - d)
	ver := t.version
	for j := 0; j < nRegular; j++ {
		s.buckets[j].ovf = 0
		s.buckets[j].stashes = 0
	}
	for j := range s.buckets {
		b := &s.buckets[j]
		ver = max(ver, s.versions[j])
		for m := b.occ; m != 0; m &= m - 1 {
			k := uint(bits.TrailingZeros8(m))
			h := t.hash(t.keys.Key(b.refs[k]))
			dst := s
			if h&bit != 0 {
				dst = ns
				ns.buckets[j].put(k, b.fp(k), b.refs[k], b.probe&(1<<k) != 0)
				b.occ &^= 1 << k
				b.probe &^= 1 << k
			}
			if j >= nRegular {
				hb := &dst.buckets[homeOf(h)]
				hb.ovf++
				hb.stashes |= 1 << (j - nRegular)
			}
		}
	}
	for j := range s.buckets {
		s.versions[j] = ver
		ns.versions[j] = ver
	}
	span := uint64(1) << (t.depth - d)
	start := idx &^ (span - 1)
	for i := start + span/2; i < start+span; i++ {
		t.dir[i] = ns
	}
}
