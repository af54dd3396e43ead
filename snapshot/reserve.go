package snapshot

import (
	"cmp"
	"slices"
	"time"

	"github.com/damselflydb/damselfly/shard"
)

// The warm reserve. The first overwrite of a big string that the save has
// not written yet cannot reuse its chunk (the save reads it), so it needs
// a new one, and a new chunk's pages fault on first touch: about 2 µs per
// 4 KiB page on the VMs we measure, 5.5 ms for a 10 MB value against
// 0.45 ms into a warm chunk. Later overwrites take spares (chunks the save
// has written, budget.go), but the first ones come within milliseconds of
// the cut, before anything is written. So before the cut a save prepares
// warm chunks of the lengths the store's big strings have and puts them
// among the spares, where those first overwrites find them
// (shard.ChunkRecycler.Spare).
//
// Invariants:
//   - Only chunks of at least reserveMinChunk bytes: a smaller fresh chunk
//     faults in well under a millisecond, and touching hundreds of them
//     ahead would cost every save for nothing.
//   - At most half the budget (the other half stays for records in
//     flight), never more chunks of a length than live values have it.
//   - It is prepared before the cut with no lock held (the shards are
//     locked one at a time, briefly, to read their counts), and like every
//     spare it is dropped at the save's end if no overwrite took it.

// reserveMinChunk is the smallest chunk worth preparing.
const reserveMinChunk = 1 << 20

// prepareReserve reads the big strings' lengths from every shard, then
// allocates and touches the chunks reserveSizes picks, as spares.
func (r *run) prepareReserve(st *shard.Store) {
	start := time.Now()
	counts := map[int]int{}
	for _, sh := range st.Shards() {
		sh.Lock()
		sh.LargeSizes(func(n, c int) {
			if n >= reserveMinChunk {
				counts[n] += c
			}
		})
		sh.Unlock()
	}
	if len(counts) == 0 {
		return
	}
	for _, n := range reserveSizes(counts, r.mem.limit/2) {
		c := make([]byte, n)
		for i := 0; i < len(c); i += 4096 {
			c[i] = 1 // fault the page in now, not in a writer's copy
		}
		r.mem.addReserve(c)
		r.reserved++
	}
	r.reserveTime = time.Since(start)
}

// reserveSizes picks the lengths of the chunks to prepare, at most room
// bytes in all: one of each length in turn, the most common lengths
// first, until room runs out or each length has as many as live values.
func reserveSizes(counts map[int]int, room int64) []int {
	type size struct{ n, left int }
	var sizes []size
	for n, c := range counts {
		sizes = append(sizes, size{n, c})
	}
	slices.SortFunc(sizes, func(a, b size) int {
		return cmp.Or(cmp.Compare(b.left, a.left), cmp.Compare(a.n, b.n))
	})
	var out []int
	for more := true; more; {
		more = false
		for i := range sizes {
			s := &sizes[i]
			if s.left == 0 || int64(s.n) > room {
				continue
			}
			out = append(out, s.n)
			room -= int64(s.n)
			s.left--
			more = true
		}
	}
	return out
}
