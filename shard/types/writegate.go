package types

import (
	"math/rand/v2"

	"github.com/damselflydb/damselfly/shard/internal/writegate"
)

// W is the right to change one object: the mutating methods of the
// collection types take it and check it was granted for their receiver.
// Stored objects get theirs from shard.DB.Modify, which runs the snapshot
// pre-change hook first; new objects come with one from their constructor.
// See package shard/internal/writegate and docs/architecture.md.
type W = writegate.W

// NewSet returns an empty set and the right to change it (see newSet).
func NewSet() (*Set, W) {
	s := newSet()
	return s, writegate.Grant(s)
}

// NewSetSized returns an empty set sized as newSetSized does and the right
// to change it.
func NewSetSized(first []byte, hint int, l *Limits) (*Set, W) {
	s := newSetSized(first, hint, l)
	return s, writegate.Grant(s)
}

// Add is add for the holder of w, the right to change s (see W).
func (s *Set) Add(w W, m []byte, l *Limits) bool {
	w.Check(s)
	return s.add(m, l)
}

// Remove is remove for the holder of w, the right to change s (see W).
func (s *Set) Remove(w W, m []byte) bool {
	w.Check(s)
	return s.remove(m)
}

// Pop is pop for the holder of w, the right to change s (see W).
func (s *Set) Pop(w W, r *rand.Rand, count int64) [][]byte {
	w.Check(s)
	return s.pop(r, count)
}
