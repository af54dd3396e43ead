package types

import (
	"bytes"
	"github.com/damselflydb/damselfly/shard/internal/writegate"
	"slices"
)

// List is a Redis list: one listpack while small, then a quicklist (a slice
// of nodes, each a packed []byte of elements of about 8 KiB), as Redis 7.2.
// Unlike Redis 7.2 a quicklist never converts back to a listpack.
//
// Head operations on a quicklist are amortized O(1) in the element size:
// the node slice and the head node keep free room in front of their data
// (nbase / qnode.base, see headroom), so LPUSH writes one entry into that
// room and LPOP/dropping the head node only reslices, instead of moving the
// whole node (or the whole node slice) as an insert at offset 0 would.
//
// The nodes of a list past 8 MiB of them come from mem's huge-page chunks
// (nodemem.go); every path that allocates a node buffer of maxBytes goes
// through mem.alloc, and a buffer never grows past its capacity in place,
// so a node never writes into another node's bytes of the same chunk.
type List struct {
	small [1]qnode // the listpack encoding (when !big)
	nodes []qnode  // the quicklist encoding (when big)
	nbase []qnode  // backing array of nodes with room in front (may be stale)
	count int
	rsz   int // Redis's listpack size of small (for exact conversion)
	big   bool
	mem   *nodeMem // where quicklist nodes come from (nil until big)
}

type qnode struct {
	b    []byte
	n    int
	base []byte // backing array of b with room in front (may be stale)
}

// headroom returns how many free slots of base precede s[0], when s is a
// suffix window of base (s reaches base's capacity); otherwise 0. base is
// only a hint: any code that reallocates s simply makes it stale, which the
// pointer comparison detects, so no other code path has to maintain it.
func headroom[T any](base, s []T) int {
	if cap(s) == 0 || cap(s) > cap(base) {
		return 0
	}
	h := cap(base) - cap(s)
	if &base[:cap(base)][h] != &s[:1][0] {
		return 0
	}
	return h
}

// prepend writes the entry for v in front of the node's data, using the
// room in front of it or reallocating it at the node byte limit.
func (nd *qnode) prepend(v []byte, maxBytes int, mem *nodeMem, live int) {
	sz := lpEntrySize(len(v))
	l := len(nd.b)
	if h := headroom(nd.base, nd.b); h >= sz {
		nd.b = nd.base[h-sz : h+l]
	} else {
		// the head node of a quicklist fills up towards maxBytes as pushes
		// go on: allocate that at once (one allocation per node)
		c := max(maxBytes, l+sz)
		base := mem.alloc(c, live)
		h := c - l - sz
		copy(base[h+sz:], nd.b)
		nd.base = base
		nd.b = base[h:c]
	}
	lpPut(nd.b[:sz], v)
}

// pushNodeFront inserts an empty node at the head of a quicklist.
func (l *List) pushNodeFront() {
	n := len(l.nodes)
	if h := headroom(l.nbase, l.nodes); h > 0 {
		l.nodes = l.nbase[h-1 : h+n]
		l.nodes[0] = qnode{}
		return
	}
	c := 2*n + 8
	h := (c - n - 1) / 2
	base := make([]qnode, c)
	copy(base[h+1:], l.nodes)
	l.nbase = base
	l.nodes = base[h : h+n+1]
}

// NewList returns an empty list in the listpack encoding.
func newList() *List { return &List{rsz: redisLPHeader} }

// NewList returns an empty list and the right to change it (it is stored
// nowhere yet); a stored list is changed with the W of shard.DB.Modify.
func NewList() (*List, W) {
	l := newList()
	return l, writegate.Grant(l)
}

// Encoding returns "listpack" or "quicklist".
func (l *List) Encoding() string {
	if l.big {
		return "quicklist"
	}
	return "listpack"
}

// Len returns the number of elements.
func (l *List) Len() int { return l.count }

func (l *List) segs() []qnode {
	if l.big {
		return l.nodes
	}
	return l.small[:]
}

// nodeLimits returns the byte and element limits of a quicklist node.
func nodeLimits(lm *Limits) (maxBytes, maxCount int) {
	fill := lm.ListMaxListpackSize
	if fill >= 0 {
		return 8192, max(fill, 1)
	}
	lvl := -fill
	if lvl > 5 {
		lvl = 5
	}
	return 4096 << (lvl - 1), int(^uint(0) >> 1)
}

// exceeds is Redis's quicklistNodeExceedsLimit.
func exceeds(lm *Limits, size, count int) bool {
	maxBytes, maxCount := nodeLimits(lm)
	return size > maxBytes || count > maxCount
}

// maybeConvert converts a small list that would exceed the node limit after
// adding the elements vs (Redis's listTypeTryConvertListpack: it adds the raw
// lengths of the new elements to the current listpack size).
func (l *List) maybeConvert(lm *Limits, vs ...[]byte) {
	if l.big {
		return
	}
	add := 0
	for _, v := range vs {
		add += len(v)
	}
	if !exceeds(lm, l.rsz+add, l.count+len(vs)) {
		return
	}
	l.big = true
	if l.mem == nil {
		l.mem = newNodeMem(lm != nil && lm.HugePages)
	}
	l.nodes = nil
	if l.count > 0 {
		l.nodes = []qnode{l.small[0]}
		l.fixNode(0, lm)
	}
	l.small[0] = qnode{}
	l.rsz = 0
}

func (l *List) recomputeRsz() {
	if l.big {
		return
	}
	l.rsz = redisLPHeader
	b := l.small[0].b
	for off := 0; off < len(b); {
		var v []byte
		v, off = lpNext(b, off)
		l.rsz += redisLPEntrySize(v)
	}
}

// nodeGrow makes room for extra bytes, doubling up to limit.
func nodeGrow(b []byte, extra, limit int) []byte {
	need := len(b) + extra
	if cap(b) >= need {
		return b
	}
	c := max(2*cap(b), 64)
	if c > limit {
		c = limit
	}
	if c < need {
		c = need
	}
	nb := make([]byte, len(b), c)
	copy(nb, b)
	return nb
}

// fits reports whether a node can take one more element of n bytes.
func fits(nd *qnode, n int, lm *Limits) bool {
	maxBytes, maxCount := nodeLimits(lm)
	return nd.n+1 <= maxCount && len(nd.b)+lpEntrySize(n) <= maxBytes
}

// PushBack appends vs (RPUSH) and returns the new length.
func (l *List) PushBack(w W, lm *Limits, vs ...[]byte) int {
	w.Check(l)
	lm = lim(lm)
	l.maybeConvert(lm, vs...)
	maxBytes, _ := nodeLimits(lm)
	for _, v := range vs {
		if !l.big {
			nd := &l.small[0]
			nd.b = lpAppend(nd.b, v)
			nd.n++
			l.rsz += redisLPEntrySize(v)
		} else {
			k := len(l.nodes) - 1
			if k < 0 || !fits(&l.nodes[k], len(v), lm) {
				l.nodes = append(l.nodes, qnode{})
				k++
			}
			nd := &l.nodes[k]
			sz := lpEntrySize(len(v))
			if live := len(l.nodes) * maxBytes; cap(nd.b) == 0 && l.mem.chunking(live) {
				// a chunk's bytes are not handed out twice: take the
				// whole node at once instead of growing it by doubling
				nd.b = l.mem.alloc(max(maxBytes, sz), live)[:0]
			}
			nd.b = nodeGrow(nd.b, sz, maxBytes)
			nd.b = nd.b[:len(nd.b)+sz]
			lpPut(nd.b[len(nd.b)-sz:], v)
			nd.n++
		}
		l.count++
	}
	return l.count
}

// PushFront prepends each of vs in turn (LPUSH a b c leaves c first) and
// returns the new length.
func (l *List) PushFront(w W, lm *Limits, vs ...[]byte) int {
	w.Check(l)
	lm = lim(lm)
	l.maybeConvert(lm, vs...)
	maxBytes, _ := nodeLimits(lm)
	for _, v := range vs {
		if !l.big {
			nd := &l.small[0]
			nd.b = lpInsert(nd.b, 0, v)
			nd.n++
			l.rsz += redisLPEntrySize(v)
		} else {
			if len(l.nodes) == 0 || !fits(&l.nodes[0], len(v), lm) {
				l.pushNodeFront()
			}
			nd := &l.nodes[0]
			nd.prepend(v, maxBytes, l.mem, len(l.nodes)*maxBytes)
			nd.n++
		}
		l.count++
	}
	return l.count
}

func (l *List) dropNode(j int) {
	if !l.big {
		l.small[0] = qnode{}
		return
	}
	if j == 0 {
		l.nodes[0] = qnode{}
		l.nodes = l.nodes[1:]
		return
	}
	l.nodes = slices.Delete(l.nodes, j, j+1)
}

// afterRemoval copies the nodes out of nodeMem's chunks when removals
// left the list sparse (removed elements at least as many as remain) or
// small again (see nodeMem).
func (l *List) afterRemoval(removed int) {
	if !l.big || l.mem == nil || !l.mem.chunked {
		return
	}
	if removed >= l.count || len(l.nodes)*l.mem.nodeMax < l.mem.from/2 {
		l.compact()
	}
}

// compact copies every node into a buffer of its own, so that the chunks
// they lived in can be collected once nothing else reads them.
func (l *List) compact() {
	for i := range l.nodes {
		nd := &l.nodes[i]
		nd.b = bytes.Clone(nd.b)
		nd.base = nil
	}
	l.mem.forget()
}

// PopFront removes and returns up to n elements from the head (copies).
func (l *List) PopFront(w W, n int) [][]byte { return l.popCopies(w, n, l.PopFrontEach) }

// PopBack removes and returns up to n elements from the tail (copies), the
// last element first.
func (l *List) PopBack(w W, n int) [][]byte { return l.popCopies(w, n, l.PopBackEach) }

func (l *List) popCopies(w W, n int, each func(W, int, func([]byte)) int) [][]byte {
	if n <= 0 || l.count == 0 {
		w.Check(l)
		return nil
	}
	out := make([][]byte, 0, min(n, l.count))
	each(w, n, func(v []byte) { out = append(out, bytes.Clone(v)) })
	return out
}

// PopFrontEach removes up to n elements from the head and returns how many;
// it hands each to emit just before removing it (a view, valid only during
// the call: a reply copies it, with no copy of its own to allocate).
func (l *List) PopFrontEach(w W, n int, emit func(v []byte)) int {
	w.Check(l)
	if n <= 0 || l.count == 0 {
		return 0
	}
	n = min(n, l.count)
	for k := n; k > 0; k-- {
		nd := &l.segs()[0]
		v, e := lpNext(nd.b, 0)
		emit(v)
		if !l.big {
			l.rsz -= redisLPEntrySize(v)
			nd.b = lpDelete(nd.b, 0, e)
		} else {
			nd.b = nd.b[e:] // the freed bytes become headroom when nd.base is current
		}
		nd.n--
		l.count--
		if nd.n == 0 && l.big {
			l.dropNode(0)
			l.afterRemoval(0)
		}
	}
	return n
}

// PopBackEach is PopFrontEach from the tail, the last element first.
func (l *List) PopBackEach(w W, n int, emit func(v []byte)) int {
	w.Check(l)
	if n <= 0 || l.count == 0 {
		return 0
	}
	n = min(n, l.count)
	for k := n; k > 0; k-- {
		s := l.segs()
		j := len(s) - 1
		nd := &s[j]
		v, st := lpPrev(nd.b, len(nd.b))
		emit(v)
		if !l.big {
			l.rsz -= redisLPEntrySize(v)
		}
		nd.b = nd.b[:st]
		nd.n--
		l.count--
		if nd.n == 0 && l.big {
			l.dropNode(j)
			l.afterRemoval(0)
		}
	}
	return n
}

// locate returns the node and byte offset of element i (0 <= i < count).
func (l *List) locate(i int) (j, off int) {
	s := l.segs()
	if i < l.count/2 {
		for j = 0; i >= s[j].n; j++ {
			i -= s[j].n
		}
	} else {
		ri := l.count - 1 - i
		for j = len(s) - 1; ri >= s[j].n; j-- {
			ri -= s[j].n
		}
		i = s[j].n - 1 - ri
	}
	b := s[j].b
	if i < s[j].n/2 {
		for k := 0; k < i; k++ {
			_, off = lpNext(b, off)
		}
		return j, off
	}
	end := len(b)
	for k := s[j].n - 1; k > i; k-- {
		_, end = lpPrev(b, end)
	}
	_, off = lpPrev(b, end)
	return j, off
}

// normIndex converts a Redis index (negative = from the tail).
func (l *List) normIndex(i int64) (int, bool) {
	if i < 0 {
		i += int64(l.count)
	}
	if i < 0 || i >= int64(l.count) {
		return 0, false
	}
	return int(i), true
}

// Index is LINDEX.
func (l *List) Index(i int64) ([]byte, bool) {
	k, ok := l.normIndex(i)
	if !ok {
		return nil, false
	}
	j, off := l.locate(k)
	v, _ := lpNext(l.segs()[j].b, off)
	return v, true
}

// Set is LSET; it returns false when the index is out of range.
func (l *List) Set(w W, i int64, v []byte, lm *Limits) bool {
	w.Check(l)
	lm = lim(lm)
	// Redis 7.2 converts before checking the index
	l.maybeConvert(lm, v)
	k, ok := l.normIndex(i)
	if !ok {
		return false
	}
	j, off := l.locate(k)
	nd := &l.segs()[j]
	_, end := lpNext(nd.b, off)
	nd.b = lpReplace(nd.b, off, end, v)
	l.fixNode(j, lm)
	l.recomputeRsz()
	return true
}

// fixNode splits node j of a quicklist while it exceeds the node limits.
func (l *List) fixNode(j int, lm *Limits) {
	if !l.big {
		return
	}
	nd := l.nodes[j]
	maxBytes, maxCount := nodeLimits(lm)
	if nd.n <= 1 || (len(nd.b) <= maxBytes && nd.n <= maxCount) {
		return
	}
	// split at about half of the bytes (at least one element each side)
	off, k := 0, 0
	for k < nd.n-1 {
		_, next := lpNext(nd.b, off)
		off = next
		k++
		if off*2 >= len(nd.b) {
			break
		}
	}
	left := qnode{b: slices.Clip(slices.Clone(nd.b[:off])), n: k}
	right := qnode{b: slices.Clip(slices.Clone(nd.b[off:])), n: nd.n - k}
	l.nodes[j] = left
	l.nodes = slices.Insert(l.nodes, j+1, right)
	l.fixNode(j+1, lm)
	l.fixNode(j, lm)
}

// mergeNodes joins adjacent quicklist nodes that fit together (after bulk
// removals) and drops empty ones.
func (l *List) mergeNodes(lm *Limits) {
	if !l.big {
		return
	}
	maxBytes, maxCount := nodeLimits(lm)
	out := l.nodes[:0]
	for _, nd := range l.nodes {
		if nd.n == 0 {
			continue
		}
		if k := len(out) - 1; k >= 0 && len(out[k].b)+len(nd.b) <= maxBytes && out[k].n+nd.n <= maxCount {
			out[k].b = append(nodeGrow(out[k].b, len(nd.b), maxBytes), nd.b...)
			out[k].n += nd.n
			continue
		}
		out = append(out, nd)
	}
	clear(l.nodes[len(out):])
	l.nodes = out
}

// Range is LRANGE: it calls fn for the elements start..stop (inclusive,
// negative = from the tail, clamped).
func (l *List) Range(start, stop int64, fn func(v []byte) bool) {
	lo, hi, ok := normRange(start, stop, l.count)
	if !ok {
		return
	}
	j, off := l.locate(lo)
	s := l.segs()
	for k := lo; k < hi; k++ {
		for off >= len(s[j].b) {
			j++
			off = 0
		}
		var v []byte
		v, off = lpNext(s[j].b, off)
		if !fn(v) {
			return
		}
	}
}

// RangeLen returns how many elements Range(start, stop, ...) visits.
func (l *List) RangeLen(start, stop int64) int {
	lo, hi, ok := normRange(start, stop, l.count)
	if !ok {
		return 0
	}
	return hi - lo
}

// RangeSlice returns LRANGE's result as views (valid until a mutation);
// the result length is bounded by Len.
func (l *List) RangeSlice(start, stop int64) [][]byte {
	lo, hi, ok := normRange(start, stop, l.count)
	if !ok {
		return nil
	}
	out := make([][]byte, 0, hi-lo)
	l.Range(start, stop, func(v []byte) bool { out = append(out, v); return true })
	return out
}

// Iterate calls fn for every element from the head until fn returns false.
func (l *List) Iterate(fn func(v []byte) bool) {
	for _, nd := range l.segs() {
		for off := 0; off < len(nd.b); {
			var v []byte
			v, off = lpNext(nd.b, off)
			if !fn(v) {
				return
			}
		}
	}
}

// IterateReverse calls fn for every element from the tail.
func (l *List) IterateReverse(fn func(v []byte) bool) {
	s := l.segs()
	for j := len(s) - 1; j >= 0; j-- {
		b := s[j].b
		for end := len(b); end > 0; {
			var v []byte
			v, end = lpPrev(b, end)
			if !fn(v) {
				return
			}
		}
	}
}

// Insert is LINSERT: it inserts v before or after the first pivot and
// returns the new length, or -1 when the pivot is absent.
func (l *List) Insert(w W, pivot, v []byte, before bool, lm *Limits) int {
	w.Check(l)
	lm = lim(lm)
	// Redis 7.2 converts before looking for the pivot
	l.maybeConvert(lm, v)
	found := false
	var fj, foff int
	s := l.segs()
	for j := range s {
		for off := 0; off < len(s[j].b); {
			e, next := lpNext(s[j].b, off)
			if bytes.Equal(e, pivot) {
				found, fj, foff = true, j, off
				if !before {
					foff = next
				}
				break
			}
			off = next
		}
		if found {
			break
		}
	}
	if !found {
		return -1
	}
	nd := &l.segs()[fj]
	nd.b = lpInsert(nd.b, foff, v)
	nd.n++
	l.count++
	l.fixNode(fj, lm)
	l.recomputeRsz()
	return l.count
}

// filter removes the elements for which drop returns true (with their
// index from the head) and returns how many were removed.
func (l *List) filter(lm *Limits, drop func(i int, v []byte) bool) int {
	removed, i := 0, 0
	s := l.segs()
	for j := range s {
		nd := &s[j]
		w := 0
		for off := 0; off < len(nd.b); i++ {
			v, next := lpNext(nd.b, off)
			if drop(i, v) {
				removed++
				nd.n--
			} else {
				if w != off {
					copy(nd.b[w:], nd.b[off:next])
				}
				w += next - off
			}
			off = next
		}
		nd.b = nd.b[:w]
	}
	l.count -= removed
	if removed > 0 {
		l.mergeNodes(lim(lm))
		l.recomputeRsz()
		l.afterRemoval(removed)
	}
	return removed
}

// Remove is LREM: count > 0 removes the first count occurrences of v,
// count < 0 the last -count, 0 all of them. It returns how many were
// removed.
func (l *List) Remove(w W, count int64, v []byte, lm *Limits) int {
	w.Check(l)
	lo, hi := 0, l.count // remove matches with index in [lo, hi)
	if count > 0 {
		seen := int64(0)
		i := 0
		l.Iterate(func(e []byte) bool {
			if bytes.Equal(e, v) {
				seen++
				if seen == count {
					hi = i + 1
					return false
				}
			}
			i++
			return true
		})
	} else if count < 0 {
		seen := int64(0)
		i := l.count - 1
		l.IterateReverse(func(e []byte) bool {
			if bytes.Equal(e, v) {
				seen--
				if seen == count {
					lo = i
					return false
				}
			}
			i--
			return true
		})
	}
	return l.filter(lm, func(i int, e []byte) bool { return i >= lo && i < hi && bytes.Equal(e, v) })
}

// Trim is LTRIM start stop.
func (l *List) Trim(w W, start, stop int64, lm *Limits) {
	w.Check(l)
	lo, hi, ok := normRange(start, stop, l.count)
	if !ok {
		lo, hi = 0, 0
	}
	if lo == 0 && hi == l.count {
		return
	}
	if hi-lo == 0 {
		l.small[0] = qnode{}
		l.nodes = nil
		if l.mem != nil {
			l.mem.forget()
		}
		l.count = 0
		l.recomputeRsz()
		return
	}
	if l.big {
		before := l.count
		defer func() { l.afterRemoval(before - l.count) }()
		// drop whole nodes first
		for len(l.nodes) > 0 && l.nodes[0].n <= lo {
			lo -= l.nodes[0].n
			hi -= l.nodes[0].n
			l.count -= l.nodes[0].n
			l.nodes = slices.Delete(l.nodes, 0, 1)
		}
		for k := len(l.nodes) - 1; k >= 0 && l.count-l.nodes[k].n >= hi; k-- {
			l.count -= l.nodes[k].n
			l.nodes[k] = qnode{}
			l.nodes = l.nodes[:k]
		}
	}
	l.filter(lm, func(i int, _ []byte) bool { return i < lo || i >= hi })
}

// Pos is LPOS element [RANK rank] [COUNT count] [MAXLEN maxlen]: it
// returns the indexes (from the head) of the matches. rank must not be 0
// (ErrRankZero); math.MinInt64 behaves as -1, as in Redis 7.0 (where
// negating it overflows and every match qualifies); count 0 means all
// matches, maxlen 0 means no limit; negative count/maxlen are the caller's
// errors and are treated as 0. Without COUNT the command replies with the
// first result (use count 1).
func (l *List) Pos(elem []byte, rank, count, maxlen int64) ([]int, error) {
	if rank == 0 {
		return nil, ErrRankZero
	}
	if rank == -1<<63 {
		rank = -1
	}
	count = max(count, 0)
	maxlen = max(maxlen, 0)
	var out []int
	skip := rank - 1
	if rank < 0 {
		skip = -rank - 1
	}
	var scanned int64
	visit := func(i int, e []byte) bool {
		if maxlen > 0 && scanned >= maxlen {
			return false
		}
		scanned++
		if bytes.Equal(e, elem) {
			if skip > 0 {
				skip--
			} else {
				out = append(out, i)
				if count > 0 && int64(len(out)) >= count {
					return false
				}
			}
		}
		return true
	}
	if rank > 0 {
		i := 0
		l.Iterate(func(e []byte) bool { r := visit(i, e); i++; return r })
	} else {
		i := l.count - 1
		l.IterateReverse(func(e []byte) bool { r := visit(i, e); i--; return r })
	}
	return out, nil
}

// Clone returns an independent deep copy.
func (l *List) Clone() *List {
	c := &List{count: l.count, rsz: l.rsz, big: l.big}
	if !l.big {
		c.small[0] = qnode{b: bytes.Clone(l.small[0].b), n: l.small[0].n}
		return c
	}
	c.mem = newNodeMem(l.mem != nil && l.mem.hugePages)
	c.nodes = make([]qnode, len(l.nodes))
	for i, nd := range l.nodes {
		c.nodes[i] = qnode{b: bytes.Clone(nd.b), n: nd.n}
	}
	return c
}

// MemoryUsage estimates the bytes used by the list.
func (l *List) MemoryUsage() int {
	m := 96 + cap(l.small[0].b) + 56*(cap(l.nodes)+headroom(l.nbase, l.nodes)) + l.mem.reserved()
	for _, nd := range l.nodes {
		m += cap(nd.b) + headroom(nd.base, nd.b)
	}
	return m
}

// Nodes calls fn with the packed bytes and element count of every node
// (one node for the listpack encoding); for serializers.
func (l *List) Nodes(fn func(b []byte, n int)) {
	for _, nd := range l.segs() {
		fn(nd.b, nd.n)
	}
}
