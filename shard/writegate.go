package shard

import (
	"unsafe"

	"github.com/damselflydb/damselfly/shard/internal/writegate"
	"github.com/damselflydb/damselfly/shard/types"
)

// The snapshot invariant made structural: a stored collection object can be
// changed only with the types.W that DB.Modify (or ModifyUnwatched) returns
// after running the pre-change hook, because the types' mutating methods
// take one and check that it was granted for their receiver, and only this
// package (through the internal package writegate) grants it for stored
// objects. A command that forgets Modify does not compile; one that passes
// the W of another object panics at once (a test catches it; the server
// turns a command's panic into an error reply).

// grant is the right to change e's object, or a string entry's bytes; the
// pre-change hook has run.
func grant(e *Entry) types.W {
	if e.Type() == TypeString {
		return writegate.Grant(e.strID())
	}
	return writegate.Grant(e.Obj())
}

// In-place string edits (SETRANGE, SETBIT, BITFIELD, APPEND, PFADD and
// PFCOUNT on a dense HyperLogLog) pass the same gate: Entry.Str is the
// value for reading, and the only way to the bytes for writing is
// Entry.StrW, which takes the W that Modify (or GrowString, which runs the
// hook too) granted for that entry's value. A string's W names its value
// bytes (strID), not an object: the W of another key, of a collection, or
// the zero W panics at StrW.

// strID names e's value bytes: the address of the value in the entry's
// chunk (the chunk's start for an empty value: a zero-capacity slice keeps
// its base pointer), unique among live entries; a pointer in an interface
// costs no allocation.
func (e *Entry) strID() *byte { return unsafe.SliceData(e.hdr.val) }

// StrW is a string entry's value for writing in place, for the holder of
// w, the right to change it (from Modify, ModifyUnwatched or GrowString of
// this entry). The length cannot change here (GrowString lengthens).
func (e *Entry) StrW(w types.W) []byte {
	w.Check(e.strID())
	return e.hdr.val
}

// ModifyStr is Modify for an in-place string edit: it runs the pre-change
// hook and returns the value's bytes for writing (StrW).
func (d *DB) ModifyStr(e *Entry) []byte { return e.StrW(d.Modify(e)) }

// Hashes are the field expirers; a signature drift would silently stop
// field expiry (fieldsDue's type assertion would fail), so check it here.
var _ FieldExpirer = (*types.Hash)(nil)
