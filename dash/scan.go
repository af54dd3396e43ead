package dash

import "math/bits"

// Bucket is a handle on one bucket, handed to OnBeforeChange hooks and
// TraverseBuckets callbacks. It is valid only during the call that hands it
// out.
type Bucket struct {
	s *segment
	i uint8
}

// Version returns the bucket's version.
func (b Bucket) Version() uint64 { return b.s.versions[b.i] }

// SetVersion sets the bucket's version.
func (b Bucket) SetVersion(v uint64) { b.s.versions[b.i] = v }

// Len returns the number of entries in the bucket.
func (b Bucket) Len() int { return bits.OnesCount8(b.s.buckets[b.i].occ) }

// Refs calls fn with every entry currently in the bucket.
func (b Bucket) Refs(fn func(ref Ref)) {
	bk := &b.s.buckets[b.i]
	for m := bk.occ; m != 0; m &= m - 1 {
		fn(bk.refs[bits.TrailingZeros8(m)])
	}
}

// OnBeforeChange registers (nil unregisters) a hook called with every bucket
// an operation is about to change, before the change: the bucket an entry is
// inserted into, removed from or replaced in, both buckets of a displacement,
// every bucket of a splitting segment before anything moves, and every
// non-empty bucket on Clear. After the operation each changed bucket's
// version is max(old, t.Version()); the buckets of both halves of a split
// take the maximum version of the source segment's buckets (read after the
// hook ran) and t.Version().
//
// The hook must not modify the table.
func (t *Table) OnBeforeChange(hook func(b Bucket)) { t.hook = hook }

// SetVersion sets the table version used to stamp changed buckets.
func (t *Table) SetVersion(v uint64) { t.version = v }

// Version returns the table version.
func (t *Table) Version() uint64 { return t.version }

// Cursors. A cursor is (p << 8) | b where p is a 48-bit position in hash
// space (the top 48 bits of a hash; the directory never gets deeper than 32
// bits) identifying the segment that covers it
// and b is a bucket index inside that segment (regular buckets, then stash
// buckets). Segments only ever split, so a segment's start stays a segment
// boundary forever, and a split keeps every entry at the same bucket index
// (in one of the halves). Entries only move to higher bucket indexes inside
// a segment. Hence resuming at (start of the segment now covering p, b)
// visits every entry that was at an index >= b, and later segments are
// visited whole. See doc.go.
const (
	cursorBits = 48 // cursors stay below 2^56, leaving callers 8 bits (the server's SCAN keeps its shard there)
	scanBatch  = 16 // Scan stops after at least this many entries
	travBatch  = 8  // TraverseBuckets hands out this many buckets per call
)

// locate decodes a cursor into the segment covering it, the segment's number
// at its local depth, and the bucket index to resume at.
func (t *Table) locate(cursor uint64) (s *segment, q uint64, b int) {
	p := cursor >> 8 & (1<<cursorBits - 1) // bits above are not ours: ignore them
	b = min(int(cursor&0xff), nBuckets)
	s = t.dir[p>>(cursorBits-t.depth)]
	q = p >> (cursorBits - uint(s.depth))
	return s, q, b
}

func cursorAt(q uint64, d uint8, b int) uint64 {
	if b < nBuckets {
		return (q<<(cursorBits-uint(d)))<<8 | uint64(b)
	}
	next := (q + 1) << (cursorBits - uint(d))
	if next >= 1<<cursorBits {
		return 0
	}
	return next << 8
}

// Scan visits the entries of the next group of buckets starting at cursor
// (0 to start) and returns the cursor to continue from, 0 when done. An entry
// present during the whole scan is visited at least once, whatever splits or
// directory doublings happen between calls; entries may be visited more than
// once. fn must not modify the table.
func (t *Table) Scan(cursor uint64, fn func(ref Ref)) uint64 {
	s, q, b := t.locate(cursor)
	n := 0
	for b < nBuckets {
		bk := &s.buckets[b]
		b++
		for m := bk.occ; m != 0; m &= m - 1 {
			fn(bk.refs[bits.TrailingZeros8(m)])
			n++
		}
		if n >= scanBatch {
			break
		}
	}
	return cursorAt(q, s.depth, b)
}

// TraverseBuckets hands a small batch of buckets starting at cursor (0 to
// start) to fn and returns the cursor to continue from, 0 when done. Like
// Scan it is robust to splits between calls: every bucket existing at the
// first call, or the buckets its entries moved into, is handed to fn at least
// once. fn may change bucket versions but must not modify the table.
func (t *Table) TraverseBuckets(cursor uint64, fn func(b Bucket)) uint64 {
	s, q, b := t.locate(cursor)
	for end := min(b+travBatch, nBuckets); b < end; b++ {
		fn(Bucket{s, uint8(b)})
	}
	return cursorAt(q, s.depth, b)
}

// Sample visits entries starting at a position derived from rnd, wrapping
// around the table, until fn returns false or every entry was visited once.
// fn must not modify the table (collect refs, then remove).
func (t *Table) Sample(rnd uint64, fn func(ref Ref) bool) {
	if t.count == 0 {
		return
	}
	n := uint64(len(t.dir))
	first := rnd % n
	first &^= (uint64(1) << (t.depth - uint(t.dir[first].depth))) - 1
	startB := int((rnd >> 32) % nBuckets)
	i, b := first, startB
	for {
		s := t.dir[i]
		end := nBuckets
		wrapped := false
		if i == first && b == 0 && startB != 0 {
			end, wrapped = startB, true
		}
		for ; b < end; b++ {
			bk := &s.buckets[b]
			for m := bk.occ; m != 0; m &= m - 1 {
				if !fn(bk.refs[bits.TrailingZeros8(m)]) {
					return
				}
			}
		}
		if wrapped {
			return
		}
		i += uint64(1) << (t.depth - uint(s.depth))
		if i >= n {
			i = 0
		}
		b = 0
		if i == first && startB == 0 {
			return
		}
	}
}
