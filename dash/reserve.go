package dash

import "math/bits"

// reserveLoad is the number of entries per segment Reserve plans for: 75%
// of the 576 slots. Segments split at about 84% full (TestLoadFactor), and
// with a good hash the fullest of 2^d equally deep segments holding n/2^d
// entries each sits a few standard deviations (sqrt(432) ~ 21) above the
// mean, so filling a reserved table to n rarely splits anything
// (TestReserve measures it).
const reserveLoad = nBuckets * slotsPerBucket * 3 / 4

// maxReserveDepth bounds what Reserve builds (2^24 segments, 64 GiB of
// index): a size hint from a file must not be able to exhaust memory by
// itself. Callers should bound the hint by what the data can hold too.
const maxReserveDepth = 24

// Reserve prepares the table to hold n entries without splitting segments:
// it splits every segment until all have the local depth d for which
// n/2^d <= reserveLoad (at most maxReserveDepth). It is meant for bulk
// loading with a known size (RDB RESIZEDB); it never shrinks the table and
// works whether or not the table is empty (existing entries are moved as a
// split moves them, the hook sees every splitting segment).
//
// Memory: the table ends up at its size right after a wave of splits, 2^d
// segments of 4 KiB, i.e. 9.5-19 bytes per reserved entry; growing one
// insert at a time reaches the same sizes at the same n, just later.
func (t *Table) Reserve(n int) {
	if n <= reserveLoad {
		return
	}
	d := uint(bits.Len64(uint64((n - 1) / reserveLoad)))
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
