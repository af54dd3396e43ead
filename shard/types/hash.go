package types

import (
	"bytes"
	"math"
	"math/rand/v2"
)

// Hash is a Redis hash: a listpack of field,value pairs while small, then a
// hashtable (a pointer-free table over an arena).
type Hash struct {
	lp []byte // listpack: field, value, field, value ...
	n  int    // pairs in lp
	t  *table // hashtable encoding when not nil

	ttl *fieldTTL // field deadlines; nil unless a field has one (hash_ttl.go)
}

// newHash returns an empty hash in the listpack encoding.
func newHash() *Hash { return &Hash{} }

// newHashSized returns an empty hash sized for hint fields, in the
// hashtable encoding when hint exceeds the listpack limit (as Redis does for
// RESTORE or HRANDFIELD-sized results).
func newHashSized(hint int, l *Limits) *Hash {
	if hint > lim(l).HashMaxListpackEntries {
		return &Hash{t: newTable(kindHash, hint)}
	}
	return &Hash{}
}

// Encoding returns "listpack", "listpackex" (a small hash with field
// deadlines, Redis 7.4's name) or "hashtable".
func (h *Hash) Encoding() string {
	if h.t != nil {
		return "hashtable"
	}
	if h.ttl != nil {
		return "listpackex"
	}
	return "listpack"
}

// Len returns the number of fields.
func (h *Hash) Len() int {
	if h.t != nil {
		return h.t.n
	}
	return h.n
}

// lpFind returns the offsets of the field entry and of the value entry end.
func (h *Hash) lpFind(field []byte) (off, voff, end int, ok bool) {
	for off = 0; off < len(h.lp); {
		f, vo := lpNext(h.lp, off)
		_, e := lpNext(h.lp, vo)
		if bytes.Equal(f, field) {
			return off, vo, e, true
		}
		off = e
	}
	return 0, 0, 0, false
}

// Get returns the value of field.
func (h *Hash) Get(field []byte) ([]byte, bool) {
	if h.t != nil {
		ref, ok := h.t.lookup(field)
		if !ok {
			return nil, false
		}
		return h.t.valueAt(ref), true
	}
	_, vo, _, ok := h.lpFind(field)
	if !ok {
		return nil, false
	}
	v, _ := lpNext(h.lp, vo)
	return v, true
}

// Exists reports whether field exists.
func (h *Hash) Exists(field []byte) bool {
	_, ok := h.Get(field)
	return ok
}

// StrLen returns the length of field's value (0 when absent).
func (h *Hash) StrLen(field []byte) int {
	v, _ := h.Get(field)
	return len(v)
}

func (h *Hash) convert() {
	t := newTable(kindHash, h.n+1)
	for off := 0; off < len(h.lp); {
		var f, v []byte
		f, off = lpNext(h.lp, off)
		v, off = lpNext(h.lp, off)
		t.setHash(f, v)
	}
	h.t, h.lp, h.n = t, nil, 0
}

// set sets field to value and reports whether the field is new. An
// overwritten field loses its deadline, as HSET does in Redis.
func (h *Hash) set(field, value []byte, l *Limits) bool {
	if h.ttl != nil {
		h.forgetTTL(field)
	}
	return h.setKeepTTL(field, value, l)
}

// setKeepTTL is Set keeping an existing field's deadline (HINCRBY).
func (h *Hash) setKeepTTL(field, value []byte, l *Limits) bool {
	lm := lim(l)
	if h.t == nil && (len(field) > lm.HashMaxListpackValue || len(value) > lm.HashMaxListpackValue) {
		h.convert()
	}
	if h.t != nil {
		return h.t.setHash(field, value)
	}
	if _, vo, end, ok := h.lpFind(field); ok {
		h.lp = lpReplace(h.lp, vo, end, value)
		return false
	}
	h.lp = lpAppend(h.lp, field, value)
	h.n++
	if h.n > lm.HashMaxListpackEntries {
		h.convert()
	}
	return true
}

// setNX sets field only if it does not exist; it reports whether it did.
func (h *Hash) setNX(field, value []byte, l *Limits) bool {
	if h.Exists(field) {
		return false
	}
	return h.set(field, value, l)
}

// delete removes field and reports whether it existed.
func (h *Hash) delete(field []byte) bool {
	if h.ttl != nil {
		h.forgetTTL(field)
	}
	if h.t != nil {
		return h.t.remove(field)
	}
	off, _, end, ok := h.lpFind(field)
	if ok {
		h.lp = lpDelete(h.lp, off, end)
		h.n--
	}
	return ok
}

// Iterate calls fn for every field and value until fn returns false.
func (h *Hash) Iterate(fn func(field, value []byte) bool) {
	if h.t != nil {
		h.t.each(func(ref uint64) bool { return fn(h.t.keyAt(ref), h.t.valueAt(ref)) })
		return
	}
	for off := 0; off < len(h.lp); {
		var f, v []byte
		f, off = lpNext(h.lp, off)
		v, off = lpNext(h.lp, off)
		if !fn(f, v) {
			return
		}
	}
}

// Scan is HSCAN: it calls fn for a batch of fields and returns the next
// cursor (0 when the iteration is complete). The listpack encoding returns
// everything in one call, as Redis does. Fields present during the whole
// iteration are returned at least once even if the hash grows or shrinks.
func (h *Hash) Scan(cursor uint64, count int, fn func(field, value []byte)) uint64 {
	if h.t != nil {
		return h.t.scan(cursor, count, func(ref uint64) { fn(h.t.keyAt(ref), h.t.valueAt(ref)) })
	}
	h.Iterate(func(f, v []byte) bool { fn(f, v); return true })
	return 0
}

// RandomFields implements HRANDFIELD's count semantics: count > 0 returns
// min(count, Len) distinct fields, count < 0 returns -count fields that may
// repeat, 0 returns nothing. math.MinInt64 returns ErrOutOfRange (Redis
// accepts -LONG_MAX..LONG_MAX). The structure allocates nothing
// proportional to count: the caller streams the fn calls and must itself
// bound huge negative counts (Redis would try to reply with them all).
func (h *Hash) RandomFields(r *rand.Rand, count int64, fn func(field, value []byte)) error {
	if count == math.MinInt64 {
		return ErrOutOfRange
	}
	n := h.Len()
	if n == 0 || count == 0 {
		return nil
	}
	if h.t != nil {
		t := h.t
		randomRefs(r, t, count, func(ref uint64) { fn(t.keyAt(ref), t.valueAt(ref)) })
		return nil
	}
	offs := lpOffsets(h.lp, 2)
	randomIdx(r, n, count, func(i int) {
		f, vo := lpNext(h.lp, offs[i])
		v, _ := lpNext(h.lp, vo)
		fn(f, v)
	})
	return nil
}

// lpOffsets returns the offsets of every stride-th entry of lp.
func lpOffsets(lp []byte, stride int) []int {
	var offs []int
	for off, i := 0, 0; off < len(lp); i++ {
		if i%stride == 0 {
			offs = append(offs, off)
		}
		_, off = lpNext(lp, off)
	}
	return offs
}

// randomIdx picks indices in [0,n) with SRANDMEMBER/HRANDFIELD count rules.
func randomIdx(r *rand.Rand, n int, count int64, fn func(i int)) {
	if count < 0 {
		for c := -count; c > 0; c-- {
			fn(r.IntN(n))
		}
		return
	}
	if count >= int64(n) {
		for i := 0; i < n; i++ {
			fn(i)
		}
		return
	}
	// selection sampling: k distinct indices in ascending order
	k := int(count)
	for i := 0; i < n && k > 0; i++ {
		if r.IntN(n-i) < k {
			fn(i)
			k--
		}
	}
}

// randomRefs picks refs of a table with the same count rules.
func randomRefs(r *rand.Rand, t *table, count int64, fn func(ref uint64)) {
	n := t.n
	if count < 0 {
		for c := -count; c > 0; c-- {
			fn(t.slots[t.randomSlot(r)] & refMask)
		}
		return
	}
	if count >= int64(n) {
		t.each(func(ref uint64) bool { fn(ref); return true })
		return
	}
	k := int(count)
	if k*3 > n {
		left := n
		t.each(func(ref uint64) bool {
			if r.IntN(left) < k {
				fn(ref)
				k--
			}
			left--
			return k > 0
		})
		return
	}
	seen := make(map[int]struct{}, k)
	for len(seen) < k {
		i := t.randomSlot(r)
		if _, ok := seen[i]; ok {
			continue
		}
		seen[i] = struct{}{}
		fn(t.slots[i] & refMask)
	}
}

// Clone returns an independent deep copy (used for copy-on-write snapshots).
func (h *Hash) Clone() *Hash {
	c := &Hash{n: h.n, ttl: h.ttl.clone()}
	if h.t != nil {
		c.t = h.t.clone()
	} else if h.lp != nil {
		c.lp = append([]byte(nil), h.lp...)
	}
	return c
}

// MemoryUsage estimates the bytes used by the hash.
func (h *Hash) MemoryUsage() int {
	if h.t != nil {
		return 48 + h.t.memoryUsage() + h.ttl.memoryUsage()
	}
	return 48 + cap(h.lp) + h.ttl.memoryUsage()
}

// ListpackBytes returns the listpack encoding (nil for hashtable); used by
// serializers. The slice must not be modified.
func (h *Hash) ListpackBytes() []byte { return h.lp }

// PrefetchFields reads into the CPU caches what setting or getting fields
// will read: in the hashtable encoding their index slots and entries (a
// field's value lies after its name in the entry). It changes nothing and
// returns a byte of what it read, for the caller to keep. Pipelined hash
// commands on a big hash otherwise wait for these misses one after the
// other (issue 20).
func (h *Hash) PrefetchFields(fields [][]byte) byte {
	if h.t == nil {
		return 0
	}
	return h.t.prefetch(fields, 512)
}
