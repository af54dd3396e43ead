package types

import (
	"bytes"
	"encoding/binary"
	"hash/maphash"
	"math"
	"math/bits"
	"math/rand/v2"
)

// table is the big encoding of hashes, sets and sorted sets' member index:
// an open-addressing (linear probing, backward-shift deletion) index of
// uint64 slots over an arena of byte pages. Nothing in it holds per-element
// pointers: a slot is tag(24 bits of hash) << 40 | ref(40 bits), where ref is
// page<<16 | offset into t.pages. An entry in the arena is
//
//	uvarint(klen) key [uvarint(vlen) value]   (kindHash)
//	uvarint(klen) key [8-byte score]          (kindZSet)
//	uvarint(klen) key                         (kindSet)
//
// Deleted or overwritten entries leave dead bytes; the arena is compacted when
// dead bytes exceed live ones. The home slot of a hash h is h >> shift (its
// top bits), which makes SCAN cursors (positions in hash space) survive
// resizes.

type tkind uint8

const (
	kindSet tkind = iota
	kindHash
	kindZSet
)

const (
	pageSize   = 64 << 10
	refMask    = 1<<40 - 1
	tagShift   = 40
	tagBits    = 24
	minSlots   = 16
	minCompact = 16 << 10
)

var tseed = maphash.MakeSeed()

func thash(k []byte) uint64 { return maphash.Bytes(tseed, k) }

type table struct {
	slots []uint64
	pages [][]byte
	shift uint // 64 - log2(len(slots))
	n     int
	live  int // bytes of live entries
	dead  int // bytes of dead entries
	kind  tkind
}

func newTable(kind tkind, hint int) *table {
	t := &table{kind: kind}
	size := minSlots
	for size*4/5 < hint {
		size *= 2
	}
	t.setSlots(size)
	return t
}

func (t *table) setSlots(size int) {
	t.slots = make([]uint64, size)
	t.shift = uint(64 - bits.TrailingZeros(uint(size)))
}

func (t *table) logSize() uint { return 64 - t.shift }

// entry returns the arena bytes starting at ref.
func (t *table) entry(ref uint64) []byte {
	return t.pages[ref>>16][ref&0xffff:]
}

func (t *table) keyAt(ref uint64) []byte {
	p := t.entry(ref)
	n, s := binary.Uvarint(p)
	return p[s : s+int(n) : s+int(n)]
}

// valueAt returns the hash value of the entry at ref.
func (t *table) valueAt(ref uint64) []byte {
	p := t.entry(ref)
	n, s := binary.Uvarint(p)
	p = p[s+int(n):]
	vn, vs := binary.Uvarint(p)
	return p[vs : vs+int(vn) : vs+int(vn)]
}

// scoreOff returns the offset of the zset score within the entry.
func (t *table) scoreAt(ref uint64) float64 {
	p := t.entry(ref)
	n, s := binary.Uvarint(p)
	return math.Float64frombits(binary.LittleEndian.Uint64(p[s+int(n):]))
}

func (t *table) setScoreAt(ref uint64, score float64) {
	p := t.entry(ref)
	n, s := binary.Uvarint(p)
	binary.LittleEndian.PutUint64(p[s+int(n):], math.Float64bits(score))
}

func (t *table) entrySize(ref uint64) int { return entrySizeOf(t.kind, t.entry(ref)) }

func entrySizeOf(kind tkind, p []byte) int {
	n, s := binary.Uvarint(p)
	sz := s + int(n)
	switch kind {
	case kindHash:
		vn, vs := binary.Uvarint(p[sz:])
		sz += vs + int(vn)
	case kindZSet:
		sz += 8
	}
	return sz
}

func (t *table) encSize(key, val []byte) int {
	sz := uvarintLen(len(key)) + len(key)
	switch t.kind {
	case kindHash:
		sz += uvarintLen(len(val)) + len(val)
	case kindZSet:
		sz += 8
	}
	return sz
}

// alloc reserves size bytes in the arena.
func (t *table) alloc(size int) (uint64, []byte) {
	if len(t.pages) == 0 {
		c := 256
		for c < size+1 && c < pageSize {
			c *= 2
		}
		if size+1 > c {
			c = size + 1
		}
		t.pages = append(t.pages, make([]byte, 1, c)) // offset 0 of page 0 is never a ref
	}
	li := len(t.pages) - 1
	last := t.pages[li]
	if cap(last)-len(last) < size && cap(last) < pageSize && len(last)+size <= pageSize {
		c := cap(last) * 2
		for c < len(last)+size {
			c *= 2
		}
		if c > pageSize {
			c = pageSize
		}
		nb := make([]byte, len(last), c)
		copy(nb, last)
		last = nb
		t.pages[li] = nb
	}
	if cap(last)-len(last) < size {
		if size > pageSize/4 {
			t.pages = append(t.pages, make([]byte, size))
			li = len(t.pages) - 1
			t.live += size
			return uint64(li) << 16, t.pages[li]
		}
		t.pages = append(t.pages, make([]byte, 0, pageSize))
		li = len(t.pages) - 1
		last = t.pages[li]
	}
	off := len(last)
	last = last[:off+size]
	t.pages[li] = last
	if li >= 1<<tagBits {
		panic("types: table arena exhausted")
	}
	t.live += size
	return uint64(li)<<16 | uint64(off), last[off : off+size]
}

func (t *table) free(ref uint64) {
	sz := t.entrySize(ref)
	t.live -= sz
	t.dead += sz
}

func (t *table) writeEntry(dst []byte, key, val []byte, score float64) {
	p := binary.PutUvarint(dst, uint64(len(key)))
	p += copy(dst[p:], key)
	switch t.kind {
	case kindHash:
		p += binary.PutUvarint(dst[p:], uint64(len(val)))
		copy(dst[p:], val)
	case kindZSet:
		binary.LittleEndian.PutUint64(dst[p:], math.Float64bits(score))
	}
}

func (t *table) newEntry(key, val []byte, score float64) uint64 {
	ref, dst := t.alloc(t.encSize(key, val))
	t.writeEntry(dst, key, val, score)
	return ref
}

// slotHome returns the home slot of an occupied slot value.
func (t *table) slotHome(s uint64) uint64 {
	if k := t.logSize(); k <= tagBits {
		return (s >> tagShift) >> (tagBits - k)
	}
	return thash(t.keyAt(s&refMask)) >> t.shift
}

// find returns the slot index holding key, or the empty slot where it would
// go.
func (t *table) find(key []byte, h uint64) (int, bool) {
	mask := uint64(len(t.slots) - 1)
	i := h >> t.shift
	tag := h >> tagShift
	for {
		s := t.slots[i]
		if s == 0 {
			return int(i), false
		}
		if s>>tagShift == tag && bytes.Equal(t.keyAt(s&refMask), key) {
			return int(i), true
		}
		i = (i + 1) & mask
	}
}

func (t *table) lookup(key []byte) (uint64, bool) {
	i, ok := t.find(key, thash(key))
	if !ok {
		return 0, false
	}
	return t.slots[i] & refMask, true
}

// put inserts a new key (which must be absent) with its entry at ref.
func (t *table) put(h uint64, ref uint64) {
	if (t.n+1)*5 > len(t.slots)*4 {
		t.resize(len(t.slots) * 2)
	}
	mask := uint64(len(t.slots) - 1)
	i := h >> t.shift
	for t.slots[i] != 0 {
		i = (i + 1) & mask
	}
	t.slots[i] = (h>>tagShift)<<tagShift | ref
	t.n++
}

func (t *table) resize(size int) {
	old := t.slots
	t.setSlots(size)
	mask := uint64(size - 1)
	k := t.logSize()
	for _, s := range old {
		if s == 0 {
			continue
		}
		var home uint64
		if k <= tagBits {
			home = (s >> tagShift) >> (tagBits - k)
		} else {
			home = thash(t.keyAt(s&refMask)) >> t.shift
		}
		for t.slots[home] != 0 {
			home = (home + 1) & mask
		}
		t.slots[home] = s
	}
}

// removeSlot empties slot i with backward-shift deletion.
func (t *table) removeSlot(i int) {
	mask := len(t.slots) - 1
	j := i
	for {
		j = (j + 1) & mask
		s := t.slots[j]
		if s == 0 {
			break
		}
		h := int(t.slotHome(s))
		// s may move to i if its home is not cyclically in (i, j].
		var inRange bool
		if i <= j {
			inRange = h > i && h <= j
		} else {
			inRange = h > i || h <= j
		}
		if !inRange {
			t.slots[i] = s
			i = j
		}
	}
	t.slots[i] = 0
	t.n--
}

// deleteAt removes the element in slot i and frees its entry.
func (t *table) deleteAt(i int) {
	t.free(t.slots[i] & refMask)
	t.removeSlot(i)
	t.maybeShrink()
	if t.kind != kindZSet { // the sorted set compacts through its tree
		t.maybeCompact(nil)
	}
}

func (t *table) maybeShrink() {
	if len(t.slots) > minSlots && t.n*8 < len(t.slots) {
		size := len(t.slots)
		for size > minSlots && t.n*4 < size {
			size /= 2
		}
		t.resize(size)
	}
}

// maybeCompact rewrites the arena when it holds more dead than live bytes.
// walk, when not nil, must call move for every live ref (the sorted set
// uses it so that its tree follows the moves); otherwise the index is walked.
func (t *table) maybeCompact(walk func(move func(uint64) uint64)) bool {
	if t.dead < minCompact || t.dead < t.live {
		return false
	}
	t.compact(walk)
	return true
}

func (t *table) compact(walk func(move func(uint64) uint64)) {
	old := t.pages
	t.pages = nil
	t.live, t.dead = 0, 0
	copyEntry := func(ref uint64) uint64 {
		src := old[ref>>16][ref&0xffff:]
		sz := entrySizeOf(t.kind, src)
		nref, dst := t.alloc(sz)
		copy(dst, src[:sz])
		return nref
	}
	if walk == nil {
		for i, s := range t.slots {
			if s != 0 {
				t.slots[i] = s&^refMask | copyEntry(s&refMask)
			}
		}
		return
	}
	// A slot already moved holds a new ref, which may equal the old ref
	// of an entry not moved yet: matching on the ref alone could rewrite
	// the wrong slot (a member then became unreachable, about one run in
	// two hundred of TestZTreeLarge). moved marks the slots done.
	moved := make([]uint64, (len(t.slots)+63)/64)
	walk(func(ref uint64) uint64 {
		src := old[ref>>16][ref&0xffff:]
		n, s := binary.Uvarint(src)
		key := src[s : s+int(n)]
		h := thash(key)
		mask := uint64(len(t.slots) - 1)
		i := h >> t.shift
		for t.slots[i]&refMask != ref || moved[i/64]&(1<<(i%64)) != 0 {
			i = (i + 1) & mask
		}
		moved[i/64] |= 1 << (i % 64)
		nref := copyEntry(ref)
		t.slots[i] = t.slots[i]&^refMask | nref
		return nref
	})
}

// setHash sets key to val (kindHash) and reports whether the key is new.
func (t *table) setHash(key, val []byte) bool {
	h := thash(key)
	i, ok := t.find(key, h)
	if !ok {
		t.put(h, t.newEntry(key, val, 0))
		return true
	}
	ref := t.slots[i] & refMask
	old := t.valueAt(ref)
	if len(old) == len(val) {
		copy(old[:len(val):len(val)], val)
		return false
	}
	t.free(ref)
	nref := t.newEntry(key, val, 0)
	t.slots[i] = t.slots[i]&^refMask | nref
	t.maybeCompact(nil)
	return false
}

// add inserts key (kindSet) and reports whether it was new.
func (t *table) add(key []byte) bool {
	h := thash(key)
	if _, ok := t.find(key, h); ok {
		return false
	}
	t.put(h, t.newEntry(key, nil, 0))
	return true
}

// remove deletes key and reports whether it was present.
func (t *table) remove(key []byte) bool {
	i, ok := t.find(key, thash(key))
	if ok {
		t.deleteAt(i)
	}
	return ok
}

// randomSlot returns the index of a random occupied slot (n must be > 0).
func (t *table) randomSlot(r *rand.Rand) int {
	for {
		i := r.IntN(len(t.slots))
		if t.slots[i] != 0 {
			return i
		}
	}
}

// each calls fn for every live ref in slot order until fn returns false.
func (t *table) each(fn func(ref uint64) bool) {
	for _, s := range t.slots {
		if s != 0 && !fn(s&refMask) {
			return
		}
	}
}

// scan visits the elements whose home slot lies in a window starting at the
// hash-space position cursor and returns the next cursor (0 when done).
// Elements present for the whole scan are returned at least once, even if
// the table is resized between calls.
func (t *table) scan(cursor uint64, count int, fn func(ref uint64)) uint64 {
	if count < 1 {
		count = 1
	}
	size := uint64(len(t.slots))
	start := cursor >> t.shift
	// the window covers about count elements
	width := size
	if count < t.n {
		width = uint64(count) * size / uint64(t.n)
	}
	if width < 1 {
		width = 1
	}
	end := start + width
	if end > size || end < start {
		end = size
	}
	mask := size - 1
	i := start
	for {
		if i == size {
			break
		}
		s := t.slots[i]
		if s == 0 {
			if i >= end {
				return t.nextCursor(end)
			}
			i++
			continue
		}
		h := t.slotHome(s)
		if h <= i && h >= start && h < end {
			fn(s & refMask)
		}
		i++
	}
	// wrapped part of the last cluster
	for j := uint64(0); j < size; j++ {
		s := t.slots[j&mask]
		if s == 0 {
			break
		}
		h := t.slotHome(s)
		if h > j && h >= start && h < end {
			fn(s & refMask)
		}
	}
	return t.nextCursor(end)
}

func (t *table) nextCursor(end uint64) uint64 {
	if end >= uint64(len(t.slots)) {
		return 0
	}
	return end << t.shift
}

func (t *table) clone() *table {
	c := &table{shift: t.shift, n: t.n, kind: t.kind}
	c.slots = make([]uint64, len(t.slots))
	copy(c.slots, t.slots)
	c.pages = make([][]byte, len(t.pages))
	for i, p := range t.pages {
		np := make([]byte, len(p))
		copy(np, p)
		c.pages[i] = np
	}
	c.live, c.dead = t.live, t.dead
	return c
}

func (t *table) memoryUsage() int {
	m := 80 + 8*len(t.slots) + 24*cap(t.pages)
	for _, p := range t.pages {
		m += cap(p)
	}
	return m
}

// prefetchMax bounds the fields one prefetch call covers (a pipeline window).
const prefetchMax = 16

// prefetch reads, for each key, its home index slot, then the arena entry
// of the first slot from there whose tag matches (the entry find would
// compare first), up to entryMax bytes of it. Each step is a tight loop
// of independent loads, so the CPU overlaps their cache misses; it
// returns a byte of what it read so that the loads are kept.
func (t *table) prefetch(keys [][]byte, entryMax int) byte {
	var hs [prefetchMax]uint64
	var sink byte
	keys = keys[:min(len(keys), prefetchMax)]
	mask := uint64(len(t.slots) - 1)
	for i, k := range keys {
		hs[i] = thash(k)
		sink += byte(t.slots[hs[i]>>t.shift])
	}
	for i := range keys {
		h := hs[i]
		tag := h >> tagShift
		for j, n := h>>t.shift, 0; n < 8; j, n = (j+1)&mask, n+1 {
			s := t.slots[j]
			if s == 0 {
				break
			}
			if s>>tagShift == tag {
				p := t.entry(s & refMask)
				for o := 0; o < len(p) && o < entryMax; o += 64 {
					sink += p[o]
				}
				break
			}
		}
	}
	return sink
}
