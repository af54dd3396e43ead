package types

import (
	"errors"
	"slices"
	"strings"
)

// Consumer groups of a stream.
//
// A group has a pending entries list (PEL): the IDs delivered and not yet
// acknowledged, each with its delivery time, delivery count and owning
// consumer; every consumer has its own PEL holding the IDs it owns. Both are
// ordered by ID. They are chunked sorted arrays (idList): no pointer per
// pending entry, O(log n) lookups and cheap appends of the increasing IDs
// that deliveries add; consumers are referenced by a small number, not a
// pointer. Groups and consumers are ordered by name, like Redis's rax.
//
// Invariant: an ID is in a consumer's PEL exactly when it is in the group's
// PEL with that consumer as owner.

// SCGInvalidEntriesRead is the entries-read value of a group whose logical
// read counter is unknown (Redis's SCG_INVALID_ENTRIES_READ).
const SCGInvalidEntriesRead = -1

// StreamGroup is a consumer group.
type StreamGroup struct {
	name        string
	s           *Stream // the stream the group belongs to (the W checked)
	lastID      StreamID
	entriesRead int64 // SCGInvalidEntriesRead when unknown
	pel         idList[PendingEntry]
	consumers   []*StreamConsumer // ordered by name
	byNum       map[uint32]*StreamConsumer
	nextNum     uint32
}

// PendingEntry is an entry of a group's PEL.
type PendingEntry struct {
	id            StreamID
	deliveryTime  int64 // unix ms
	deliveryCount uint64
	owner         uint32 // consumer number; 0 = none (only while loading)
}

func (p PendingEntry) key() StreamID { return p.id }

// StreamConsumer is a consumer of a group.
type StreamConsumer struct {
	name       string
	num        uint32
	seenTime   int64 // unix ms of the last attempted interaction
	activeTime int64 // unix ms of the last successful interaction (Redis 7.2)
	pel        idList[StreamID]
}

func (id StreamID) key() StreamID { return id }

// Name is the consumer's name.
func (c *StreamConsumer) Name() string { return c.name }

// PendingLen is the number of entries the consumer owns.
func (c *StreamConsumer) PendingLen() int { return c.pel.Len() }

// Pending calls fn for the consumer's pending IDs >= from, ascending.
func (c *StreamConsumer) Pending(from StreamID, fn func(id StreamID) bool) {
	c.pel.Ascend(from, func(id *StreamID) bool { return fn(*id) })
}

// Name is the group's name.
func (g *StreamGroup) Name() string { return g.name }

// PendingLen is the size of the group's PEL.
func (g *StreamGroup) PendingLen() int { return g.pel.Len() }

// Pending returns the PEL entry of id (nil when not pending). The pointer is
// valid until the next change of the group's PEL.
func (g *StreamGroup) Pending(id StreamID) *PendingEntry {
	p, _ := g.pel.Get(id)
	return p
}

// PendingAscend calls fn for the PEL entries >= from in ID order with their
// owners, until fn returns false. fn must not change the PEL.
func (g *StreamGroup) PendingAscend(from StreamID, fn func(p *PendingEntry, owner *StreamConsumer) bool) {
	g.pel.Ascend(from, func(p *PendingEntry) bool { return fn(p, g.byNum[p.owner]) })
}

// Consumers calls fn for every consumer in name order.
func (g *StreamGroup) Consumers(fn func(c *StreamConsumer) bool) {
	for _, c := range g.consumers {
		if !fn(c) {
			return
		}
	}
}

// ConsumerCount is the number of consumers.
func (g *StreamGroup) ConsumerCount() int { return len(g.consumers) }

func (g *StreamGroup) consumerIdx(name string) (int, bool) {
	return slices.BinarySearchFunc(g.consumers, name, func(c *StreamConsumer, n string) int { return strings.Compare(c.name, n) })
}

// Consumer returns the consumer called name, or nil.
func (g *StreamGroup) Consumer(name []byte) *StreamConsumer {
	if i, ok := g.consumerIdx(string(name)); ok {
		return g.consumers[i]
	}
	return nil
}

// createConsumer adds a consumer; ok is false when it exists already.
func (g *StreamGroup) createConsumer(name []byte, seen, active int64) (*StreamConsumer, bool) {
	i, ok := g.consumerIdx(string(name))
	if ok {
		return g.consumers[i], false
	}
	g.nextNum++
	c := &StreamConsumer{name: string(name), num: g.nextNum, seenTime: seen, activeTime: active}
	g.consumers = slices.Insert(g.consumers, i, c)
	if g.byNum == nil {
		g.byNum = map[uint32]*StreamConsumer{}
	}
	g.byNum[c.num] = c
	return c, true
}

// deleteConsumer removes a consumer and its pending entries (from the
// group's PEL too); it returns how many it had, and false when missing.
func (g *StreamGroup) deleteConsumer(name []byte) (int, bool) {
	i, ok := g.consumerIdx(string(name))
	if !ok {
		return 0, false
	}
	c := g.consumers[i]
	n := c.pel.Len()
	c.pel.Ascend(StreamID{}, func(id *StreamID) bool { g.pel.Remove(*id); return true })
	g.consumers = slices.Delete(g.consumers, i, i+1)
	delete(g.byNum, c.num)
	return n, true
}

// Owner returns the consumer owning a PEL entry.
func (g *StreamGroup) Owner(p *PendingEntry) *StreamConsumer { return g.byNum[p.owner] }

// addPending adds an unowned PEL entry (loading: AssignPending must give it
// an owner); false when id is already pending.
func (g *StreamGroup) addPending(id StreamID, deliveryTime int64, count uint64) bool {
	return g.pel.Insert(PendingEntry{id: id, deliveryTime: deliveryTime, deliveryCount: count})
}

// assignPending makes c the owner of the pending entry id (loading); false
// when id is not pending or already owned.
func (g *StreamGroup) assignPending(c *StreamConsumer, id StreamID) bool {
	p, ok := g.pel.Get(id)
	if !ok || p.owner != 0 {
		return false
	}
	p.owner = c.num
	return c.pel.Insert(id)
}

// checkOwned reports whether every PEL entry has an owner.
func (g *StreamGroup) checkOwned() bool {
	ok := true
	g.pel.Ascend(StreamID{}, func(p *PendingEntry) bool { ok = p.owner != 0; return ok })
	return ok
}

// deliver records that id was delivered to c at nowMs: a new PEL entry
// with delivery count 1, or, when id is already pending, a transfer to c
// with the given count update (XREADGROUP, XCLAIM).
func (g *StreamGroup) deliver(c *StreamConsumer, id StreamID, nowMs int64, incr bool) {
	if p, ok := g.pel.Get(id); ok {
		if p.owner != c.num {
			if old := g.byNum[p.owner]; old != nil {
				old.pel.Remove(id)
			}
			p.owner = c.num
			c.pel.Insert(id)
		}
		p.deliveryTime = nowMs
		if incr {
			p.deliveryCount++
		}
		return
	}
	g.pel.Insert(PendingEntry{id: id, deliveryTime: nowMs, deliveryCount: 1, owner: c.num})
	c.pel.Insert(id)
}

// ack removes id from the PEL (XACK) and reports whether it was pending.
func (g *StreamGroup) ack(id StreamID) bool {
	p, ok := g.pel.Get(id)
	if !ok {
		return false
	}
	if c := g.byNum[p.owner]; c != nil {
		c.pel.Remove(id)
	}
	g.pel.Remove(id)
	return true
}

func (g *StreamGroup) clone(owner *Stream) *StreamGroup {
	c := &StreamGroup{s: owner, name: g.name, lastID: g.lastID, entriesRead: g.entriesRead, pel: g.pel.clone(), nextNum: g.nextNum}
	if len(g.consumers) > 0 {
		c.consumers = make([]*StreamConsumer, len(g.consumers))
		c.byNum = make(map[uint32]*StreamConsumer, len(g.consumers))
		for i, x := range g.consumers {
			y := *x
			y.pel = x.pel.clone()
			c.consumers[i] = &y
			c.byNum[y.num] = &y
		}
	}
	return c
}

func (g *StreamGroup) memoryUsage() int {
	m := 96 + len(g.name) + g.pel.memoryUsage()
	for _, c := range g.consumers {
		m += 96 + len(c.name) + c.pel.memoryUsage()
	}
	return m
}

// --- groups of a stream ------------------------------------------------------

func (s *Stream) groupIdx(name string) (int, bool) {
	return slices.BinarySearchFunc(s.groups, name, func(g *StreamGroup, n string) int { return strings.Compare(g.name, n) })
}

// Group returns the group called name, or nil.
func (s *Stream) Group(name []byte) *StreamGroup {
	if i, ok := s.groupIdx(string(name)); ok {
		return s.groups[i]
	}
	return nil
}

// createGroup adds a group; nil when it exists already.
func (s *Stream) createGroup(name []byte, lastID StreamID, entriesRead int64) *StreamGroup {
	i, ok := s.groupIdx(string(name))
	if ok {
		return nil
	}
	g := &StreamGroup{s: s, name: string(name), lastID: lastID, entriesRead: entriesRead}
	s.groups = slices.Insert(s.groups, i, g)
	return g
}

// deleteGroup removes a group and reports whether it existed.
func (s *Stream) deleteGroup(name []byte) bool {
	i, ok := s.groupIdx(string(name))
	if ok {
		s.groups[i] = nil
		s.groups = slices.Delete(s.groups, i, i+1)
	}
	return ok
}

// Groups calls fn for every group in name order.
func (s *Stream) Groups(fn func(g *StreamGroup) bool) {
	for _, g := range s.groups {
		if !fn(g) {
			return
		}
	}
}

// GroupCount is the number of groups.
func (s *Stream) GroupCount() int { return len(s.groups) }

// CheckGroups verifies, after loading, that every pending entry has an
// owner.
func (s *Stream) CheckGroups() error {
	for _, g := range s.groups {
		if !g.checkOwned() {
			return errors.New("stream group PEL entry without consumer")
		}
	}
	return nil
}

// --- idList ----------------------------------------------------------------

type idKeyed interface{ key() StreamID }

// idList is a set of values ordered by their StreamID key, kept in chunks
// of at most 2*idChunk values: inserts and removals move at most a chunk.
type idList[T idKeyed] struct {
	chunks [][]T
	n      int
}

const idChunk = 64

func (l *idList[T]) Len() int { return l.n }

// locate finds the chunk and position where id is or would be inserted.
func (l *idList[T]) locate(id StreamID) (ci, i int, found bool) {
	if len(l.chunks) == 0 {
		return 0, 0, false
	}
	ci, _ = slices.BinarySearchFunc(l.chunks, id, func(c []T, t StreamID) int { return c[len(c)-1].key().Compare(t) })
	if ci == len(l.chunks) {
		ci--
		return ci, len(l.chunks[ci]), false
	}
	i, found = slices.BinarySearchFunc(l.chunks[ci], id, func(v T, t StreamID) int { return v.key().Compare(t) })
	return ci, i, found
}

// Get returns a pointer to the value with key id (valid until the next
// change).
func (l *idList[T]) Get(id StreamID) (*T, bool) {
	ci, i, ok := l.locate(id)
	if !ok {
		return nil, false
	}
	return &l.chunks[ci][i], true
}

// Insert adds v; false (and no change) when its key is present.
func (l *idList[T]) Insert(v T) bool {
	if len(l.chunks) == 0 {
		l.chunks = [][]T{append(make([]T, 0, 4), v)}
		l.n++
		return true
	}
	ci, i, found := l.locate(v.key())
	if found {
		return false
	}
	c := l.chunks[ci]
	if len(c) >= 2*idChunk {
		if i == len(c) && ci == len(l.chunks)-1 {
			// appending (deliveries come in ID order): start a new chunk
			l.chunks = append(l.chunks, append(make([]T, 0, 8), v))
			l.n++
			return true
		}
		half := len(c) / 2
		right := append(make([]T, 0, 2*idChunk), c[half:]...)
		l.chunks[ci] = append(make([]T, 0, 2*idChunk), c[:half]...)
		l.chunks = slices.Insert(l.chunks, ci+1, right)
		if i > half {
			ci, i = ci+1, i-half
		}
		c = l.chunks[ci]
	}
	l.chunks[ci] = slices.Insert(c, i, v)
	l.n++
	return true
}

// Remove deletes the value with key id and reports whether it was there.
func (l *idList[T]) Remove(id StreamID) bool {
	ci, i, found := l.locate(id)
	if !found {
		return false
	}
	c := slices.Delete(l.chunks[ci], i, i+1)
	if len(c) == 0 {
		l.chunks = slices.Delete(l.chunks, ci, ci+1)
		if len(l.chunks) == 0 {
			l.chunks = nil
		}
	} else {
		l.chunks[ci] = c
	}
	l.n--
	return true
}

// Ascend calls fn for the values with key >= from in order until it
// returns false. fn must not change the list.
func (l *idList[T]) Ascend(from StreamID, fn func(v *T) bool) {
	ci, i, _ := l.locate(from)
	for ; ci < len(l.chunks); ci, i = ci+1, 0 {
		c := l.chunks[ci]
		for ; i < len(c); i++ {
			if !fn(&c[i]) {
				return
			}
		}
	}
}

func (l *idList[T]) clone() idList[T] {
	c := idList[T]{n: l.n}
	if len(l.chunks) > 0 {
		c.chunks = make([][]T, len(l.chunks))
		for i, ch := range l.chunks {
			c.chunks[i] = slices.Clone(ch)
		}
	}
	return c
}

func (l *idList[T]) memoryUsage() int {
	var zero T
	sz := 16
	if _, ok := any(zero).(PendingEntry); ok {
		sz = 48
	}
	m := 24 * cap(l.chunks)
	for _, c := range l.chunks {
		m += sz * cap(c)
	}
	return m
}
