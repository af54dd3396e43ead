// Package writegate is the proof of the snapshot invariant (docs/
// architecture.md, "Forkless snapshots"): a value stored in a shard may be
// changed only after the pre-change hook of its index ran, so that a
// running snapshot captures it as it was at the cut.
//
// A W grants the right to change one object. The collection types' mutating
// methods take a W and check that it was granted for their receiver. Only
// package shard grants Ws for stored objects (shard.DB.Modify, which runs
// the hook first); package types grants one with each object it creates
// (an object nobody stored yet needs no hook). The package is internal to
// shard, so no command can grant itself one: a write command cannot compile
// without calling Modify, and a W for another object (or the zero W) panics
// at the first change it is used for.
package writegate

// W is the right to change one object (see the package doc).
type W struct{ obj any }

// Grant returns the right to change obj. Callers: package shard after the
// pre-change hook, package types for objects it has just created.
func Grant(obj any) W { return W{obj} }

// Check panics unless w was granted for obj.
func (w W) Check(obj any) {
	if w.obj != obj {
		panic("shard: a stored value changed without DB.Modify (the snapshot pre-change hook)")
	}
}
