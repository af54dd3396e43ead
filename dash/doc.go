// Package dash implements a Dashtable: an extendible-hashing hash index, after
// Dragonfly's design, rebuilt for Go's garbage collector.
//
// The table stores, per entry, a 1-byte hash fingerprint and a 32-bit
// caller-owned reference (Ref). Keys and values live elsewhere (the caller's
// slab or append log); dash asks the caller for a key's bytes through the
// Keys interface when it must compare keys (Find) or re-hash them (a segment
// split). It knows nothing about Redis. It is not safe for concurrent use:
// the caller's shard lock protects it.
//
// # Layout
//
// A directory []*segment is indexed by the top globalDepth bits of the
// 64-bit hash. A segment is a single pointer-free allocation holding
//
//   - 64 regular buckets and 8 stash buckets of 8 slots each (576 slots),
//   - one uint64 version per bucket (kept apart from the buckets because only
//     mutations and snapshots read it),
//   - its local depth.
//
// A bucket is 48 bytes: the 8 fingerprints packed in one uint64 (matched
// with SWAR byte comparison, exact, no false positives), an occupancy mask, a
// "probe" mask (slot holds an entry whose home is another bucket), a stash
// overflow counter and a stash hint mask, then 8 uint32 refs. All a lookup
// reads is in its first 44 bytes. Because nothing in a segment is a pointer
// the GC never scans segments: marking cost is one pointer per segment, not
// per entry.
//
// Hash bits: segment = h >> (64-globalDepth) (top bits), home bucket =
// h & 63, fingerprint = byte (h>>8), preferred stash bucket = (h>>16) & 7.
// The global depth is limited to 32 (maxDepth), so directory bits never
// overlap the low 24 bits used inside a segment.
//
// # Placement and lookup
//
// An entry lives in its home bucket i, its neighbour bucket (i+1, or 62 for
// home 63) with its probe bit set, or a stash bucket; in the last case the
// home bucket's overflow counter counts it and the stash hint mask names the
// stash bucket. Find checks the home bucket (non-probe slots), the neighbour
// (probe slots), and the stash buckets named by the hint only if the home's
// overflow counter is non-zero, so most misses read one or two adjacent
// buckets and compare no key (fingerprints are exact 8-bit matches).
//
// Insert tries home, neighbour, then one displacement (an entry living in its
// own home bucket i+1 moves forward to i+2, freeing a slot in i+1), then the
// stash buckets starting at the preferred one. When all are full the segment
// splits and the insert is retried.
//
// # Splits
//
// Splitting a segment of local depth d re-hashes its entries (Keys.Key +
// hash) and moves those whose hash bit 63-d is set to a new segment, at the
// same bucket and slot. A subset of a valid placement is a valid placement,
// so a split never needs to find room and never moves an entry inside a
// segment. If d equals the global depth the directory doubles first (copying
// pointers only). Only that segment's entries move: there is never a
// whole-table rehash, so the longest insert is one split of 576 slots plus,
// rarely, a directory doubling.
//
// # Invariants
//
//   - Each directory range of 2^(globalDepth-d) entries aligned to that size
//     points to one segment of local depth d; every entry's hash maps to the
//     segment holding it.
//   - An entry is in its home bucket (probe bit clear), its neighbour (probe
//     bit set) or a stash bucket (counted by its home's ovf; its stash bucket
//     is in the home's hint mask; the mask may hold stale bits).
//   - Inside a segment, entries only ever move to a higher bucket index
//     (displacement goes forward; nothing moves out of the stash). Splits keep
//     (bucket, slot). Segments never merge (Clear replaces the table).
//
// # Reserve
//
// Reserve(n) splits segments ahead of time until every segment has the
// local depth d = floor(log2(n/288)): with n/2^d >= 288 (half a segment),
// half as many segments could not hold n entries even full, so growing one
// insert at a time reaches at least this table. A bulk load of n entries (an
// RDB file announcing its size with RESIZEDB) then skips re-hashing its
// entries in every wave of splits but the last, and uses no more memory
// than without Reserve. It uses the ordinary split, so all invariants above
// hold (the hook sees the splitting segments); it never shrinks the table.
//
// # Cursors (Scan, TraverseBuckets)
//
// A cursor is (p<<8 | b): p is a 48-bit position in hash space (the start of
// a segment's range) and b a bucket index (regular then stash). Resuming
// looks up the segment now covering p: since segments only split, p is still
// a segment start, and by the invariants above every entry that was in a
// bucket >= b of the old segment is in a bucket >= b of the segment now at p
// or in a later segment, which is visited whole. So entries present during
// the whole scan are returned at least once (some may be returned twice), and
// every bucket existing at the start (or the buckets its entries moved into)
// is handed to TraverseBuckets at least once, across splits and directory
// doublings. Garbage cursors are tolerated.
//
// # Versions and the snapshot hook
//
// OnBeforeChange registers a hook called with every bucket about to change
// (insert target, removal, replace, both buckets of a displacement, every
// bucket of a splitting segment before anything moves, every non-empty bucket
// on Clear). After the change the bucket's version becomes
// max(old, t.Version()); both halves of a split take the max version of the
// source buckets (read after the hook ran) and t.Version(). A forkless
// snapshot serializes a bucket in the hook when its version is below the
// snapshot version, then stamps it, exactly as docs/architecture.md describes.
//
// # Geometry
//
// 64+8 buckets x 8 slots: the segment is 4040 bytes, which fills Go's
// 4096-byte size class (64+4 would leave the same 4 KiB allocation 7% empty:
// more stash for free). 8 slots make the fingerprints exactly one uint64 for
// SWAR matching and the refs 32 bytes. Measured (TestLoadFactor,
// BenchmarkGrow): the table reaches a load factor of ~0.84 before segments
// split (7.0 bytes per slot), so the table costs 8.4 B/entry just before a
// wave of splits and ~17 just after, ~11 on average, against ~55 for
// map[string]uint32 (which also needs the key strings). 32+4 buckets
// (2 KiB segments) gave the same load factor (0.838) and lookup speed but
// twice the allocations and directory size; larger segments (8 KiB) would
// double the work of a single split (the latency bound) for no gain in fill.
package dash
