package shard

import (
	"encoding/binary"

	"github.com/damselflydb/damselfly/shard/types"
)

// GrowString lengthens the string value of e in place to n bytes (the new
// bytes zero), for commands that extend a string (SETBIT, BITFIELD,
// SETRANGE past the end): a big string grows with spare capacity instead of
// being copied whole on every extension. It works when the entry lives in a
// large slab chunk and the value length keeps the size of its encoding;
// otherwise it changes nothing and returns false (then Put a grown copy).
// e must come from Lookup or Find under the same lock hold, unchanged
// since. Like Modify, it lets a running snapshot capture the old value
// first, counts as a write, and returns the right to change the grown
// value's bytes (the returned Entry's StrW).
func (d *DB) GrowString(e *Entry, n int) (Entry, types.W, bool) {
	vlen := len(e.hdr.val)
	if Type(e.hdr.flags&typeMask) != TypeString || n < vlen || uvarintLen(uint64(n)) != uvarintLen(uint64(vlen)) {
		return *e, types.W{}, false
	}
	oldSize := encodedSize(e.hdr.flags, len(e.hdr.key), vlen)
	if !d.slab.IsLarge(e.ref) || d.slab.Size(e.ref) != oldSize {
		return *e, types.W{}, false
	}
	newSize := oldSize + n - vlen
	*d.dirty++
	if d.watch != nil && d.watch.active() {
		d.touchWatched(e.hdr.key, false)
	}
	d.main.Replace(e.pos, e.ref) // the pre-change hook sees the old value
	d.unshare(e.ref)
	mem, _ := d.slab.GrowLarge(e.ref, newSize)
	binary.PutUvarint(mem[1+atimeSize+uvarintLen(uint64(len(e.hdr.key))):], uint64(n))
	d.slab.AdjustRequested(newSize - oldSize)
	d.valBytes += int64(n - vlen)
	g := Entry{db: d, pos: e.pos, ref: e.ref, h: e.h, hdr: decodeHeader(mem)}
	return g, grant(&g), true
}
