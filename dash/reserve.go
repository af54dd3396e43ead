package dash

import "math/bits"

// reserveLoad is half a segment's slots. When n/2^d >= reserveLoad, 2^(d-1)
// segments could not hold n entries even if completely full, so a table
// grown one insert at a time to n entries has every segment at depth d or
// deeper: Reserve builds exactly that much and never more.
const reserveLoad = nBuckets * slotsPerBucket / 2

// maxReserveDepth bounds what Reserve builds (2^24 segments, 64 GiB of
// index): a size hint from a file must not be able to exhaust memory by
// itself. Callers should bound the hint by what the data can hold too.
const maxReserveDepth = 24

// Reserve prepares the table for n entries: it splits every segment until
// all have local depth d = floor(log2(n/288)) (at most maxReserveDepth), the
// depth growth to n entries reaches anyway (see reserveLoad). So it never
// costs memory that inserting n entries would not, and it saves re-hashing
// entries in every wave of splits but the last: when n/2^d is above about
// 430 (75% of 576 slots), segments still split while the n entries arrive,
// as they would have without Reserve.
//
// It is meant for bulk loading with a known size (RDB RESIZEDB). It never
// shrinks the table and works whether or not the table is empty (existing
// entries move as a split moves them; the hook sees every splitting segment).
func (t *Table) Reserve(n int) {
	if n < 2*reserveLoad {
		return
	}
	d := uint(bits.Len64(uint64(n/reserveLoad))) - 1
	d = min(d, maxReserveDepth)
	for t.depth < d {
		t.grow()
	}
	for i := 0; i < len(t.dir); {
		s := t.dir[i]
		if uint(s.depth) < d {
			t.split(uint64(i)) // both halves are visited again from i
			continue
		}
		i += 1 << (t.depth - uint(s.depth))
	}
}
