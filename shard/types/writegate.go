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

// NewZSet returns an empty sorted set and the right to change it.
func NewZSet() (*ZSet, W) {
	z := newZSet()
	return z, writegate.Grant(z)
}

// NewZSetSized returns an empty sorted set sized as newZSetSized does and
// the right to change it.
func NewZSetSized(hint, maxLen int, l *Limits) (*ZSet, W) {
	z := newZSetSized(hint, maxLen, l)
	return z, writegate.Grant(z)
}

// Add is add for the holder of w, the right to change z (see W).
func (z *ZSet) Add(w W, member []byte, score float64, flags ZAddFlags, l *Limits) (float64, ZAddResult, error) {
	w.Check(z)
	return z.add(member, score, flags, l)
}

// Remove is remove for the holder of w, the right to change z (see W).
func (z *ZSet) Remove(w W, member []byte) bool {
	w.Check(z)
	return z.remove(member)
}

// RemoveRangeByRank is removeRangeByRank for the holder of w, the right to change z (see W).
func (z *ZSet) RemoveRangeByRank(w W, start, stop int64) int {
	w.Check(z)
	return z.removeRangeByRank(start, stop)
}

// RemoveRangeByScore is removeRangeByScore for the holder of w, the right to change z (see W).
func (z *ZSet) RemoveRangeByScore(w W, min, max ScoreBound) int {
	w.Check(z)
	return z.removeRangeByScore(min, max)
}

// RemoveRangeByLex is removeRangeByLex for the holder of w, the right to change z (see W).
func (z *ZSet) RemoveRangeByLex(w W, min, max LexBound) int {
	w.Check(z)
	return z.removeRangeByLex(min, max)
}

// PopMin is popMin for the holder of w, the right to change z (see W).
func (z *ZSet) PopMin(w W, count int64) []ZMember {
	w.Check(z)
	return z.popMin(count)
}

// PopMax is popMax for the holder of w, the right to change z (see W).
func (z *ZSet) PopMax(w W, count int64) []ZMember {
	w.Check(z)
	return z.popMax(count)
}

// NewHash returns an empty hash and the right to change it.
func NewHash() (*Hash, W) {
	h := newHash()
	return h, writegate.Grant(h)
}

// NewHashSized returns an empty hash sized as newHashSized does and the
// right to change it.
func NewHashSized(hint int, l *Limits) (*Hash, W) {
	h := newHashSized(hint, l)
	return h, writegate.Grant(h)
}

// Set is set for the holder of w, the right to change h (see W).
func (h *Hash) Set(w W, field, value []byte, l *Limits) bool {
	w.Check(h)
	return h.set(field, value, l)
}

// SetKeepTTL is setKeepTTL for the holder of w, the right to change h (see W).
func (h *Hash) SetKeepTTL(w W, field, value []byte, l *Limits) bool {
	w.Check(h)
	return h.setKeepTTL(field, value, l)
}

// SetNX is setNX for the holder of w, the right to change h (see W).
func (h *Hash) SetNX(w W, field, value []byte, l *Limits) bool {
	w.Check(h)
	return h.setNX(field, value, l)
}

// Delete is delete for the holder of w, the right to change h (see W).
func (h *Hash) Delete(w W, field []byte) bool {
	w.Check(h)
	return h.delete(field)
}

// SetFieldExpireAt is setFieldExpireAt for the holder of w, the right to change h (see W).
func (h *Hash) SetFieldExpireAt(w W, field []byte, at int64) {
	w.Check(h)
	h.setFieldExpireAt(field, at)
}

// PersistField is persistField for the holder of w, the right to change h (see W).
func (h *Hash) PersistField(w W, field []byte) bool {
	w.Check(h)
	return h.persistField(field)
}

// ExpireFields is expireFields for the holder of w, the right to change h (see W).
func (h *Hash) ExpireFields(w W, now int64, fn func(field []byte)) int {
	w.Check(h)
	return h.expireFields(now, fn)
}

// CloneW is Clone with the right to change the copy (a new object, stored
// nowhere yet).
func (h *Hash) CloneW() (*Hash, W) {
	c := h.Clone()
	return c, writegate.Grant(c)
}
