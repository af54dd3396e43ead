package types

import "github.com/damselflydb/damselfly/shard/internal/writegate"

// W is the right to change one object: the mutating methods of the
// collection types take it and check it was granted for their receiver.
// Stored objects get theirs from shard.DB.Modify, which runs the snapshot
// pre-change hook first; new objects come with one from their constructor.
// See package shard/internal/writegate and docs/architecture.md.
type W = writegate.W
