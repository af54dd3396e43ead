package shard

import (
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

// grant is the right to change e's object; the pre-change hook has run.
func grant(e *Entry) types.W {
	if e.Type() == TypeString {
		return writegate.Grant(nil)
	}
	return writegate.Grant(e.Obj())
}

// Hashes are the field expirers; a signature drift would silently stop
// field expiry (fieldsDue's type assertion would fail), so check it here.
var _ FieldExpirer = (*types.Hash)(nil)
