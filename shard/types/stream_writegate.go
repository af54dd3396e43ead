package types

import "github.com/damselflydb/damselfly/shard/internal/writegate"

// The write gate (writegate.go) for streams: every change to a stream, its
// consumer groups, their consumers and pending entries takes the W of the
// stream. A group knows its stream (StreamGroup.s), so a group change
// checks the W of the stream that holds the group: a group of another
// stream, or a stream changed without DB.Modify, panics at the change.
// Fields that commands used to assign (a group's last ID and entries-read,
// a consumer's seen and active times, a pending entry's delivery time and
// count) are read through methods and written only through the setters
// here.

// NewStream returns an empty stream and the right to change it.
func NewStream() (*Stream, W) {
	s := newStream()
	return s, writegate.Grant(s)
}

// CloneW is Clone with the right to change the copy (a new object, stored
// nowhere yet).
func (s *Stream) CloneW() (*Stream, W) {
	c := s.Clone()
	return c, writegate.Grant(c)
}

// Add is add for the holder of w, the right to change s (see W).
func (s *Stream) Add(w W, id StreamID, fv [][]byte, l *Limits) error {
	w.Check(s)
	return s.add(id, fv, l)
}

// Delete is delete for the holder of w, the right to change s (see W).
func (s *Stream) Delete(w W, id StreamID) bool {
	w.Check(s)
	return s.delete(id)
}

// Trim is trim for the holder of w, the right to change s (see W).
func (s *Stream) Trim(w W, a TrimArgs) int64 {
	w.Check(s)
	return s.trim(a)
}

// SetLastID is setLastID for the holder of w, the right to change s (see W).
func (s *Stream) SetLastID(w W, id StreamID, entriesAdded uint64, maxDeleted StreamID) {
	w.Check(s)
	s.setLastID(id, entriesAdded, maxDeleted)
}

// LoadNode is loadNode for the holder of w, the right to change s (see W).
func (s *Stream) LoadNode(w W, master StreamID, lp []byte) error {
	w.Check(s)
	return s.loadNode(master, lp)
}

// SetMeta is setMeta for the holder of w, the right to change s (see W).
func (s *Stream) SetMeta(w W, m StreamMeta) error {
	w.Check(s)
	return s.setMeta(m)
}

// NoteDelivered is noteDelivered for the holder of w, the right to change s (see W).
func (s *Stream) NoteDelivered(w W, g *StreamGroup, id StreamID) {
	w.Check(s)
	g.check(w)
	s.noteDelivered(g, id)
}

// CreateGroup is createGroup for the holder of w, the right to change s (see W).
func (s *Stream) CreateGroup(w W, name []byte, lastID StreamID, entriesRead int64) *StreamGroup {
	w.Check(s)
	return s.createGroup(name, lastID, entriesRead)
}

// DeleteGroup is deleteGroup for the holder of w, the right to change s (see W).
func (s *Stream) DeleteGroup(w W, name []byte) bool {
	w.Check(s)
	return s.deleteGroup(name)
}

// check panics unless w is the right to change g's stream.
func (g *StreamGroup) check(w W) { w.Check(g.s) }

// LastID is the group's last delivered ID.
func (g *StreamGroup) LastID() StreamID { return g.lastID }

// EntriesRead is the group's logical read counter (SCGInvalidEntriesRead
// when unknown).
func (g *StreamGroup) EntriesRead() int64 { return g.entriesRead }

// SetLastID sets the group's last ID, for the holder of w (XGROUP SETID,
// XCLAIM LASTID).
func (g *StreamGroup) SetLastID(w W, id StreamID) {
	g.check(w)
	g.lastID = id
}

// SetEntriesRead sets the group's entries-read counter, for the holder of w.
func (g *StreamGroup) SetEntriesRead(w W, n int64) {
	g.check(w)
	g.entriesRead = n
}

// CreateConsumer is createConsumer for the holder of w (see W).
func (g *StreamGroup) CreateConsumer(w W, name []byte, seen, active int64) (*StreamConsumer, bool) {
	g.check(w)
	return g.createConsumer(name, seen, active)
}

// DeleteConsumer is deleteConsumer for the holder of w (see W).
func (g *StreamGroup) DeleteConsumer(w W, name []byte) (int, bool) {
	g.check(w)
	return g.deleteConsumer(name)
}

// AddPending is addPending for the holder of w (see W).
func (g *StreamGroup) AddPending(w W, id StreamID, deliveryTime int64, count uint64) bool {
	g.check(w)
	return g.addPending(id, deliveryTime, count)
}

// AssignPending is assignPending for the holder of w (see W).
func (g *StreamGroup) AssignPending(w W, c *StreamConsumer, id StreamID) bool {
	g.check(w)
	return g.assignPending(c, id)
}

// Deliver is deliver for the holder of w (see W).
func (g *StreamGroup) Deliver(w W, c *StreamConsumer, id StreamID, nowMs int64, incr bool) {
	g.check(w)
	g.deliver(c, id, nowMs, incr)
}

// Ack is ack for the holder of w (see W).
func (g *StreamGroup) Ack(w W, id StreamID) bool {
	g.check(w)
	return g.ack(id)
}

// SetDelivery sets a pending entry's delivery time and count (p from
// g.Pending or g.PendingAscend), for the holder of w.
func (g *StreamGroup) SetDelivery(w W, p *PendingEntry, deliveryTime int64, count uint64) {
	g.check(w)
	p.deliveryTime, p.deliveryCount = deliveryTime, count
}

// SetSeen sets consumer c's seen time (a consumer of g), for the holder of w.
func (g *StreamGroup) SetSeen(w W, c *StreamConsumer, t int64) {
	g.check(w)
	c.seenTime = t
}

// ID is the pending entry's ID.
func (p *PendingEntry) ID() StreamID { return p.id }

// DeliveryTime is the unix ms of the entry's last delivery.
func (p *PendingEntry) DeliveryTime() int64 { return p.deliveryTime }

// DeliveryCount is how many times the entry was delivered.
func (p *PendingEntry) DeliveryCount() uint64 { return p.deliveryCount }

// SeenTime is the unix ms of the consumer's last attempted interaction.
func (c *StreamConsumer) SeenTime() int64 { return c.seenTime }

// ActiveTime is the unix ms of the consumer's last successful interaction
// (Redis 7.2).
func (c *StreamConsumer) ActiveTime() int64 { return c.activeTime }
