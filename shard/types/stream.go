package types

import (
	"encoding/binary"
	"errors"
	"slices"
	"strconv"

	"github.com/damselflydb/damselfly/listpack"
)

// Stream is a Redis stream.
//
// Entries live in nodes exactly like Redis's: each node is one listpack in
// Redis's own byte format (redislp.go), keyed by its master ID (the ID of the
// first entry ever added to it), holding a master entry (live count, deleted
// count, the first entry's field names) followed by delta-encoded entries:
//
//	master: count | deleted | num-fields | field_1 .. field_N | 0
//	entry:  flags | ms-diff | seq-diff | [num-fields | field_1] value_1 .. | lp-count
//
// (fields are omitted when the SAMEFIELDS flag says they are the master's).
// Deleted entries stay in their node flagged DELETED until the whole node is
// empty. Nodes are a slice ordered by master ID; IDs only grow, so appends go
// to the last node. Because node boundaries follow Redis's rules
// (stream-node-max-bytes / -entries against the listpack's real size),
// approximate trimming, XINFO's node counts and RDB files match Redis, and a
// node is serialized by copying its bytes. Memory is one pointer per node of
// up to ~100 entries: nothing per entry for the garbage collector.
//
// Invariants: every node holds at least one live entry; IDs are strictly
// increasing across the whole stream (deleted entries included) and are all
// <= lastID; length is the number of live entries.
type Stream struct {
	nodes        []streamNode
	length       uint64
	lastID       StreamID
	firstID      StreamID
	maxDeletedID StreamID
	entriesAdded uint64
	groups       []*StreamGroup // ordered by name (Redis's rax order)
}

type streamNode struct {
	master StreamID
	lp     []byte
}

// Entry flags (t_stream.c).
const (
	streamFlagDeleted    = 1
	streamFlagSameFields = 2
)

// streamListpackMaxSize caps a node's listpack (STREAM_LISTPACK_MAX_SIZE).
const streamListpackMaxSize = 1 << 30

// Stream errors.
var (
	// ErrStreamTooBig: an entry whose fields and values exceed what a node
	// can hold (Redis's ERANGE case of XADD).
	ErrStreamTooBig = errors.New("Elements are too large to be stored")
	// ErrStreamIDTooSmall: an explicit ID not greater than the last one.
	ErrStreamIDTooSmall = errors.New("The ID specified in XADD is equal or smaller than the target stream top item")
	errBadStream        = errors.New("malformed stream")
)

// StreamID is a stream entry ID.
type StreamID struct{ Ms, Seq uint64 }

// MaxStreamID is the largest ID.
var MaxStreamID = StreamID{^uint64(0), ^uint64(0)}

// Compare returns -1, 0 or 1.
func (a StreamID) Compare(b StreamID) int {
	switch {
	case a.Ms < b.Ms:
		return -1
	case a.Ms > b.Ms:
		return 1
	case a.Seq < b.Seq:
		return -1
	case a.Seq > b.Seq:
		return 1
	}
	return 0
}

// Less reports a < b.
func (a StreamID) Less(b StreamID) bool { return a.Compare(b) < 0 }

// IsZero reports whether the ID is 0-0.
func (a StreamID) IsZero() bool { return a.Ms == 0 && a.Seq == 0 }

// Append appends "ms-seq".
func (a StreamID) Append(b []byte) []byte {
	b = strconv.AppendUint(b, a.Ms, 10)
	b = append(b, '-')
	return strconv.AppendUint(b, a.Seq, 10)
}

// String returns "ms-seq".
func (a StreamID) String() string { return string(a.Append(nil)) }

// Incr returns the next ID; ok is false when a is the largest ID.
func (a StreamID) Incr() (StreamID, bool) {
	switch {
	case a.Seq != ^uint64(0):
		a.Seq++
	case a.Ms != ^uint64(0):
		a.Ms++
		a.Seq = 0
	default:
		return StreamID{}, false
	}
	return a, true
}

// Decr returns the previous ID; ok is false when a is 0-0.
func (a StreamID) Decr() (StreamID, bool) {
	switch {
	case a.Seq != 0:
		a.Seq--
	case a.Ms != 0:
		a.Ms--
		a.Seq = ^uint64(0)
	default:
		return MaxStreamID, false
	}
	return a, true
}

// newStream returns an empty stream.
func newStream() *Stream { return &Stream{} }

// Encoding returns "stream".
func (s *Stream) Encoding() string { return "stream" }

// Len is the number of entries.
func (s *Stream) Len() int { return int(s.length) }

// LastID is the last generated ID (the top ID even after deletions).
func (s *Stream) LastID() StreamID { return s.lastID }

// FirstID is the recorded ID of the first entry (0-0 when empty).
func (s *Stream) FirstID() StreamID { return s.firstID }

// MaxDeletedID is the largest ID ever deleted.
func (s *Stream) MaxDeletedID() StreamID { return s.maxDeletedID }

// EntriesAdded is the number of entries ever added.
func (s *Stream) EntriesAdded() uint64 { return s.entriesAdded }

// NodeCount is the number of nodes (XINFO's radix-tree-keys).
func (s *Stream) NodeCount() int { return len(s.nodes) }

// setLastID sets the last ID, entries-added and max-deleted-ID (XSETID;
// the caller checks Redis's rules).
func (s *Stream) setLastID(id StreamID, entriesAdded uint64, maxDeleted StreamID) {
	s.lastID, s.entriesAdded, s.maxDeletedID = id, entriesAdded, maxDeleted
}

// nodeMeta reads a node's master entry: live and deleted counts, the number
// of master fields, the offset of the first master field and of the first
// entry's flags.
func nodeMeta(lp []byte) (count, deleted int64, mfields int, mstart, first int) {
	off := listpack.HeaderSize
	count, off = listpack.Int(lp, off)
	deleted, off = listpack.Int(lp, off)
	var nf int64
	nf, off = listpack.Int(lp, off)
	mstart = off
	for i := int64(0); i < nf; i++ {
		off = listpack.Skip(lp, off)
	}
	off = listpack.Skip(lp, off) // the master's zero terminator
	return count, deleted, int(nf), mstart, off
}

// rawEntry is one entry of a node as found in its listpack.
type rawEntry struct {
	off   int // the flags element
	flags int64
	id    StreamID
	nf    int // field count
	body  int // first field (or first value with SAMEFIELDS)
	end   int // the lp-count element
}

func (e *rawEntry) deleted() bool { return e.flags&streamFlagDeleted != 0 }

// decodeEntry decodes the entry whose flags element is at off.
func decodeEntry(lp []byte, master StreamID, mfields, off int) rawEntry {
	e := rawEntry{off: off}
	p := off
	e.flags, p = listpack.Int(lp, p)
	var d int64
	d, p = listpack.Int(lp, p)
	e.id.Ms = master.Ms + uint64(d)
	d, p = listpack.Int(lp, p)
	e.id.Seq = master.Seq + uint64(d)
	if e.flags&streamFlagSameFields != 0 {
		e.nf = mfields
	} else {
		var nf int64
		nf, p = listpack.Int(lp, p)
		e.nf = int(nf)
	}
	e.body = p
	k := e.nf
	if e.flags&streamFlagSameFields == 0 {
		k *= 2
	}
	for i := 0; i < k; i++ {
		p = listpack.Skip(lp, p)
	}
	e.end = p
	return e
}

// fields appends the entry's field,value pairs to dst; integers are
// formatted into *scratch.
func (e *rawEntry) fields(lp []byte, mstart int, dst [][]byte, scratch *[]byte) [][]byte {
	p := e.body
	mp := mstart
	same := e.flags&streamFlagSameFields != 0
	for i := 0; i < e.nf; i++ {
		var f, v []byte
		if same {
			f, mp = listpack.Bytes(lp, mp, scratch)
		} else {
			f, p = listpack.Bytes(lp, p, scratch)
		}
		v, p = listpack.Bytes(lp, p, scratch)
		dst = append(dst, f, v)
	}
	return dst
}

// scan calls fn for every entry of node n (deleted ones included) from
// the first, or from the last when rev, until fn returns false.
func (n *streamNode) scan(rev bool, fn func(e *rawEntry, mstart int) bool) bool {
	lp := n.lp
	_, _, mfields, mstart, first := nodeMeta(lp)
	if !rev {
		end := len(lp) - 1
		for off := first; off < end; {
			e := decodeEntry(lp, n.master, mfields, off)
			if !fn(&e, mstart) {
				return false
			}
			off = listpack.Skip(lp, e.end)
		}
		return true
	}
	for pos := len(lp) - 1; ; {
		lc := listpack.Prev(lp, pos)
		cnt, _ := listpack.Int(lp, lc)
		if cnt == 0 || lc < first {
			return true
		}
		off := lc
		for ; cnt > 0; cnt-- {
			off = listpack.Prev(lp, off)
		}
		e := decodeEntry(lp, n.master, mfields, off)
		if !fn(&e, mstart) {
			return false
		}
		pos = off
	}
}

// seek returns the index of the last node whose master ID is <= id, or 0.
func (s *Stream) seek(id StreamID) int {
	i, _ := slices.BinarySearchFunc(s.nodes, id, func(n streamNode, t StreamID) int { return n.master.Compare(t) })
	// i is the first node with master >= id
	if i < len(s.nodes) && s.nodes[i].master == id {
		return i
	}
	return max(i-1, 0)
}

// StreamIter is a position in a range iteration; see Range.
type StreamIter struct {
	fv      [][]byte
	scratch []byte
}

// Range calls fn for the live entries with start <= ID <= end in ascending
// order (descending when rev) until fn returns false. fv holds field,value
// pairs; it and its slices are valid only during the call.
func (s *Stream) Range(start, end StreamID, rev bool, fn func(id StreamID, fv [][]byte) bool) {
	if len(s.nodes) == 0 || end.Less(start) {
		return
	}
	var it StreamIter
	emit := func(n *streamNode, e *rawEntry, mstart int) bool {
		it.scratch = it.scratch[:0]
		it.fv = e.fields(n.lp, mstart, it.fv[:0], &it.scratch)
		return fn(e.id, it.fv)
	}
	if !rev {
		for i := s.seek(start); i < len(s.nodes); i++ {
			n := &s.nodes[i]
			if end.Less(n.master) {
				return
			}
			done := false
			if !n.scan(false, func(e *rawEntry, mstart int) bool {
				if e.id.Less(start) || e.deleted() {
					return true
				}
				if end.Less(e.id) {
					done = true
					return false
				}
				return emit(n, e, mstart)
			}) || done {
				return
			}
		}
		return
	}
	for i := s.seek(end); i >= 0; i-- {
		n := &s.nodes[i]
		done := false
		if !n.scan(true, func(e *rawEntry, mstart int) bool {
			if end.Less(e.id) || e.deleted() {
				return true
			}
			if e.id.Less(start) {
				done = true
				return false
			}
			return emit(n, e, mstart)
		}) || done {
			return
		}
	}
}

// Exists reports whether a live entry has ID id.
func (s *Stream) Exists(id StreamID) bool {
	found := false
	s.Range(id, id, false, func(StreamID, [][]byte) bool { found = true; return false })
	return found
}

// First returns the first live entry's ID (ok false when empty).
func (s *Stream) First() (id StreamID, ok bool) {
	s.Range(StreamID{}, MaxStreamID, false, func(x StreamID, _ [][]byte) bool { id, ok = x, true; return false })
	return
}

// Last returns the last live entry's ID (ok false when empty).
func (s *Stream) Last() (id StreamID, ok bool) {
	s.Range(StreamID{}, MaxStreamID, true, func(x StreamID, _ [][]byte) bool { id, ok = x, true; return false })
	return
}

// NextID is the ID XADD * generates at time nowMs (Redis's streamNextID);
// ok is false when the last ID is the largest one.
func (s *Stream) NextID(nowMs uint64) (StreamID, bool) {
	if nowMs > s.lastID.Ms {
		return StreamID{nowMs, 0}, true
	}
	return s.lastID.Incr()
}

func streamLimits(l *Limits) (maxBytes, maxEntries int) {
	lm := lim(l)
	maxBytes, maxEntries = lm.StreamNodeMaxBytes, lm.StreamNodeMaxEntries
	if maxBytes <= 0 || maxBytes > streamListpackMaxSize {
		maxBytes = streamListpackMaxSize
	}
	return maxBytes, maxEntries
}

// add appends an entry with ID id (which must be greater than LastID) and
// the field,value pairs fv (an even, non-zero number of slices), as Redis's
// streamAppendItem does, and updates the length, last ID and counters.
func (s *Stream) add(id StreamID, fv [][]byte, l *Limits) error {
	if !s.lastID.Less(id) {
		return ErrStreamIDTooSmall
	}
	tot := 0
	for _, b := range fv {
		tot += len(b)
	}
	if tot > streamListpackMaxSize {
		return ErrStreamTooBig
	}
	nf := len(fv) / 2
	maxBytes, maxEntries := streamLimits(l)
	n := s.tailWithRoom(tot, maxBytes, maxEntries)
	flags := int64(0)
	if n == nil {
		n = s.appendNode(id, fv, maxBytes)
		flags = streamFlagSameFields
	} else {
		cnt, _ := listpack.Int(n.lp, listpack.HeaderSize)
		n.lp = listpack.ReplaceInt(n.lp, listpack.HeaderSize, cnt+1)
		if n.hasMasterFields(fv) {
			flags = streamFlagSameFields
		}
	}
	lp := n.lp
	lp = listpack.PushInt(lp, flags)
	lp = listpack.PushInt(lp, int64(id.Ms-n.master.Ms))
	lp = listpack.PushInt(lp, int64(id.Seq-n.master.Seq))
	same := flags&streamFlagSameFields != 0
	if !same {
		lp = listpack.PushInt(lp, int64(nf))
	}
	for i := 0; i < nf; i++ {
		if !same {
			lp = listpack.Push(lp, fv[2*i])
		}
		lp = listpack.Push(lp, fv[2*i+1])
	}
	lc := int64(nf) + 3
	if !same {
		lc += int64(nf) + 1
	}
	n.lp = listpack.PushInt(lp, lc)
	s.length++
	s.entriesAdded++
	s.lastID = id
	if s.length == 1 {
		s.firstID = id
	}
	return nil
}

// tailWithRoom is the last node when an entry of tot bytes still fits it
// (by the node limits), else nil; a node found full is shrunk to fit, as
// Redis does, unless its allocation is already close to its size.
func (s *Stream) tailWithRoom(tot, maxBytes, maxEntries int) *streamNode {
	k := len(s.nodes)
	if k == 0 {
		return nil
	}
	n := &s.nodes[k-1]
	full := len(n.lp)+tot >= maxBytes
	if !full && maxEntries > 0 {
		cnt, p := listpack.Int(n.lp, listpack.HeaderSize)
		del, _ := listpack.Int(n.lp, p)
		full = cnt+del >= int64(maxEntries)
	}
	if !full {
		return n
	}
	if cap(n.lp)-len(n.lp) > len(n.lp)/8 {
		n.lp = append([]byte(nil), n.lp...)
	}
	return nil
}

// appendNode starts a node whose master entry is id with the fields of fv
// (the entry itself is appended by the caller).
func (s *Stream) appendNode(id StreamID, fv [][]byte, maxBytes int) *streamNode {
	nf := len(fv) / 2
	need := listpack.HeaderSize + 1 + 3*2 + 2
	for i := 0; i < nf; i++ {
		need += listpack.EntrySize(fv[2*i])
	}
	// Size the node like the previous one: a stream's nodes tend to be
	// alike, and a node allocated once makes no garbage as it fills.
	capHint := need + 64
	if k := len(s.nodes); k > 0 {
		prev := len(s.nodes[k-1].lp)
		capHint = max(capHint, min(prev, maxBytes+need))
	}
	lp := listpack.New(capHint)
	lp = listpack.PushInt(lp, 1)
	lp = listpack.PushInt(lp, 0)
	lp = listpack.PushInt(lp, int64(nf))
	for i := 0; i < nf; i++ {
		lp = listpack.Push(lp, fv[2*i])
	}
	lp = listpack.PushInt(lp, 0)
	s.nodes = append(s.nodes, streamNode{master: id, lp: lp})
	return &s.nodes[len(s.nodes)-1]
}

// hasMasterFields reports whether the fields of fv are the master entry's,
// in order (the entry is then stored without them).
func (n *streamNode) hasMasterFields(fv [][]byte) bool {
	nf := len(fv) / 2
	_, _, mfields, mstart, _ := nodeMeta(n.lp)
	if mfields != nf {
		return false
	}
	p := mstart
	var scratch [24]byte
	for i := 0; i < nf; i++ {
		sc := scratch[:0]
		var f []byte
		f, p = listpack.Bytes(n.lp, p, &sc)
		if string(f) != string(fv[2*i]) {
			return false
		}
	}
	return true
}

// removeNode drops node i.
func (s *Stream) removeNode(i int) {
	s.nodes[i] = streamNode{}
	if i == 0 {
		s.nodes = s.nodes[1:]
		if len(s.nodes) == 0 {
			s.nodes = nil
		}
		return
	}
	s.nodes = slices.Delete(s.nodes, i, i+1)
}

// markDeleted flags entry e of node i deleted and fixes the node's counts
// (removing the node when it has no live entry left). It does not touch
// the stream's length or IDs.
func (s *Stream) markDeleted(i int, e *rawEntry) {
	n := &s.nodes[i]
	cnt, p := listpack.Int(n.lp, listpack.HeaderSize)
	if cnt == 1 {
		s.removeNode(i)
		return
	}
	n.lp = listpack.ReplaceInt(n.lp, e.off, e.flags|streamFlagDeleted) // same size: flags < 128
	n.lp = listpack.ReplaceInt(n.lp, listpack.HeaderSize, cnt-1)
	p = listpack.Skip(n.lp, listpack.HeaderSize)
	del, _ := listpack.Int(n.lp, p)
	n.lp = listpack.ReplaceInt(n.lp, p, del+1)
}

// delete removes the entry id (XDEL) and reports whether it existed. Like
// Redis it records the largest deleted ID and, when the first entry goes,
// the new first ID.
func (s *Stream) delete(id StreamID) bool {
	if len(s.nodes) == 0 {
		return false
	}
	i := s.seek(id)
	var found rawEntry
	ok := false
	s.nodes[i].scan(false, func(e *rawEntry, _ int) bool {
		if e.id == id {
			found, ok = *e, !e.deleted()
			return false
		}
		return e.id.Less(id)
	})
	if !ok {
		return false
	}
	s.markDeleted(i, &found)
	s.length--
	if s.maxDeletedID.Less(id) {
		s.maxDeletedID = id
	}
	if s.length == 0 {
		s.firstID = StreamID{}
	} else if id == s.firstID {
		s.firstID, _ = s.First()
	}
	return true
}

// TrimArgs are XADD/XTRIM's trimming options.
type TrimArgs struct {
	MaxLen  bool     // MAXLEN (else MINID)
	N       uint64   // MAXLEN's count
	MinID   StreamID // MINID's ID
	Approx  bool     // "~": only whole nodes
	Limit   int64    // at most this many entries (0 = no limit)
	Enabled bool
}

// trim removes entries from the head as Redis's streamTrim does and returns
// how many it removed.
func (s *Stream) trim(a TrimArgs) int64 {
	if !a.Enabled {
		return 0
	}
	var deleted int64
	for len(s.nodes) > 0 {
		if a.MaxLen && s.length <= a.N {
			break
		}
		n := &s.nodes[0]
		entries, _ := listpack.Int(n.lp, listpack.HeaderSize)
		if a.Limit > 0 && deleted+entries > a.Limit {
			break
		}
		var remove bool
		if a.MaxLen {
			remove = s.length-uint64(entries) >= a.N
		} else {
			var last StreamID
			n.scan(true, func(e *rawEntry, _ int) bool { last = e.id; return false })
			remove = last.Less(a.MinID)
		}
		if remove {
			s.removeNode(0)
			s.length -= uint64(entries)
			deleted += entries
			continue
		}
		if a.Approx {
			break
		}
		// Flag entries of the head node one by one.
		var fromLP int64
		var marks []int
		n.scan(false, func(e *rawEntry, _ int) bool {
			var stop bool
			if a.MaxLen {
				stop = s.length <= a.N
			} else {
				stop = !e.id.Less(a.MinID)
			}
			if stop {
				return false
			}
			if !e.deleted() {
				marks = append(marks, e.off)
				fromLP++
				s.length--
			}
			return true
		})
		for _, off := range marks {
			f, _ := listpack.Int(n.lp, off)
			n.lp = listpack.ReplaceInt(n.lp, off, f|streamFlagDeleted)
		}
		deleted += fromLP
		n.lp = listpack.ReplaceInt(n.lp, listpack.HeaderSize, entries-fromLP)
		p := listpack.Skip(n.lp, listpack.HeaderSize)
		del, _ := listpack.Int(n.lp, p)
		n.lp = listpack.ReplaceInt(n.lp, p, del+fromLP)
		break
	}
	if s.length == 0 {
		s.firstID = StreamID{}
	} else if deleted > 0 {
		s.firstID, _ = s.First()
	}
	return deleted
}

// Nodes calls fn with every node's master ID and listpack (Redis's format),
// in order; for serializers. The bytes must not be modified.
func (s *Stream) Nodes(fn func(master StreamID, lp []byte) bool) {
	for i := range s.nodes {
		if !fn(s.nodes[i].master, s.nodes[i].lp) {
			return
		}
	}
}

// Clone returns an independent deep copy (COPY).
func (s *Stream) Clone() *Stream {
	c := *s
	c.nodes = make([]streamNode, len(s.nodes))
	for i, n := range s.nodes {
		c.nodes[i] = streamNode{master: n.master, lp: slices.Clip(append([]byte(nil), n.lp...))}
	}
	c.groups = make([]*StreamGroup, len(s.groups))
	for i, g := range s.groups {
		c.groups[i] = g.clone(&c)
	}
	if len(c.groups) == 0 {
		c.groups = nil
	}
	return &c
}

// MemoryUsage estimates the bytes used by the stream.
func (s *Stream) MemoryUsage() int {
	m := 128 + 40*cap(s.nodes)
	for _, n := range s.nodes {
		m += cap(n.lp)
	}
	for _, g := range s.groups {
		m += g.memoryUsage()
	}
	return m
}

// --- loading ---------------------------------------------------------------

// StreamMeta is the stream metadata an RDB file stores after the nodes.
type StreamMeta struct {
	Length       uint64
	LastID       StreamID
	FirstID      StreamID
	MaxDeletedID StreamID
	EntriesAdded uint64
	// HasV2 is false for RDB_TYPE_STREAM_LISTPACKS (Redis < 7): FirstID,
	// MaxDeletedID and EntriesAdded are then derived as Redis does.
	HasV2 bool
}

// loadNode appends a node read from a file or payload after checking it
// completely (listpack structure, master entry, every entry, the counts,
// IDs increasing from the previous node), so that no later operation can
// trip over it. lp is kept (not copied).
func (s *Stream) loadNode(master StreamID, lp []byte) error {
	if _, err := listpack.Validate(lp); err != nil {
		return err
	}
	if len(s.nodes) > 0 && !s.nodes[len(s.nodes)-1].master.Less(master) {
		return errors.New("stream nodes out of order")
	}
	var prev StreamID
	hasPrev := false
	if k := len(s.nodes); k > 0 {
		s.nodes[k-1].scan(true, func(e *rawEntry, _ int) bool { prev, hasPrev = e.id, true; return false })
	}
	end := len(lp) - 1
	meta, p, ok := checkMasterEntry(lp, end)
	if !ok {
		return errBadStream
	}
	var live, dead int64
	for p < end {
		id, flags, next, ok := checkNodeEntry(lp, p, end, master, meta[2])
		if !ok {
			return errBadStream
		}
		if hasPrev && !prev.Less(id) || !hasPrev && id.Less(master) {
			return errBadStream
		}
		prev, hasPrev = id, true
		p = next
		if flags&streamFlagDeleted != 0 {
			dead++
		} else {
			live++
		}
	}
	if live != meta[0] || dead != meta[1] || live == 0 {
		return errBadStream
	}
	s.nodes = append(s.nodes, streamNode{master: master, lp: lp})
	return nil
}

// checkMasterEntry checks a node's master entry (count, deleted,
// num-fields, the fields, 0) and returns its three counts and where the
// first entry starts. end is the listpack's terminator.
func checkMasterEntry(lp []byte, end int) (meta [3]int64, p int, ok bool) {
	p = listpack.HeaderSize
	for i := range meta {
		if p >= end {
			return meta, 0, false
		}
		_, v, isInt, next := listpack.Elem(lp, p)
		if !isInt || v < 0 {
			return meta, 0, false
		}
		meta[i], p = v, next
	}
	for i := int64(0); i < meta[2]; i++ {
		if p >= end {
			return meta, 0, false
		}
		p = listpack.Skip(lp, p)
	}
	if p >= end {
		return meta, 0, false
	}
	if _, v, isInt, next := listpack.Elem(lp, p); !isInt || v != 0 {
		return meta, 0, false
	} else {
		p = next
	}
	return meta, p, true
}

// checkNodeEntry checks the entry at p of a node whose master entry has
// masterFields fields: flags, ID deltas, its fields (unless it has the
// master's) and values, and a lp-count through which the backward walk
// lands on its flags. It returns the entry's ID and flags and where the
// next entry starts.
func checkNodeEntry(lp []byte, p, end int, master StreamID, masterFields int64) (id StreamID, flags int64, next int, ok bool) {
	start := p
	var f [3]int64
	for i := range f {
		if p >= end {
			return id, 0, 0, false
		}
		_, v, isInt, next := listpack.Elem(lp, p)
		if !isInt {
			return id, 0, 0, false
		}
		f[i], p = v, next
	}
	flags = f[0]
	if flags&^3 != 0 {
		return id, 0, 0, false
	}
	id = StreamID{master.Ms + uint64(f[1]), master.Seq + uint64(f[2])}
	nf := masterFields
	k := nf
	if flags&streamFlagSameFields == 0 {
		if p >= end {
			return id, 0, 0, false
		}
		_, v, isInt, next := listpack.Elem(lp, p)
		if !isInt || v < 0 {
			return id, 0, 0, false
		}
		nf, p = v, next
		k = 2 * nf
	}
	if k > int64(len(lp)) {
		return id, 0, 0, false
	}
	for i := int64(0); i < k; i++ {
		if p >= end {
			return id, 0, 0, false
		}
		p = listpack.Skip(lp, p)
	}
	if p >= end {
		return id, 0, 0, false
	}
	_, lc, isInt, next := listpack.Elem(lp, p)
	want := nf + 3
	if flags&streamFlagSameFields == 0 {
		want += nf + 1
	}
	if !isInt || lc != want {
		return id, 0, 0, false
	}
	// the backward walk must land on this entry's flags
	q := p
	for j := lc; j > 0; j-- {
		q = listpack.Prev(lp, q)
	}
	if q != start {
		return id, 0, 0, false
	}
	return id, flags, next, true
}

// setMeta completes a loaded stream with its metadata, checking it against
// the nodes.
func (s *Stream) setMeta(m StreamMeta) error {
	var live uint64
	for i := range s.nodes {
		c, _ := listpack.Int(s.nodes[i].lp, listpack.HeaderSize)
		live += uint64(c)
	}
	if live != m.Length {
		return errors.New("stream length does not match its entries")
	}
	var last StreamID
	if k := len(s.nodes); k > 0 {
		s.nodes[k-1].scan(true, func(e *rawEntry, _ int) bool { last = e.id; return false })
		if m.LastID.Less(last) {
			return errors.New("stream last ID is below its last entry")
		}
	}
	s.length, s.lastID = m.Length, m.LastID
	if m.HasV2 {
		s.firstID, s.maxDeletedID, s.entriesAdded = m.FirstID, m.MaxDeletedID, m.EntriesAdded
	} else {
		s.entriesAdded = m.Length
		s.firstID, _ = s.First()
	}
	return nil
}

// EstimateDistance is Redis's streamEstimateDistanceFromFirstEverEntry: the
// logical read counter of id, or SCGInvalidEntriesRead when it cannot be
// known.
func (s *Stream) EstimateDistance(id StreamID) int64 {
	if s.entriesAdded == 0 {
		return 0
	}
	if s.length == 0 && id.Compare(s.lastID) < 1 {
		return int64(s.entriesAdded)
	}
	switch id.Compare(s.lastID) {
	case 0:
		return int64(s.entriesAdded)
	case 1:
		return SCGInvalidEntriesRead
	}
	cmpFirst := id.Compare(s.firstID)
	if s.maxDeletedID.IsZero() || s.maxDeletedID.Less(s.firstID) {
		if cmpFirst < 0 {
			return int64(s.entriesAdded - s.length)
		} else if cmpFirst == 0 {
			return int64(s.entriesAdded - s.length + 1)
		}
	}
	return SCGInvalidEntriesRead
}

// FirstEntryID returns the ID of the first entry, deleted or not (Redis's
// streamGetEdgeID without skipping tombstones); ok is false when the stream
// has no node.
func (s *Stream) FirstEntryID() (id StreamID, ok bool) {
	if len(s.nodes) == 0 {
		return MaxStreamID, false
	}
	s.nodes[0].scan(false, func(e *rawEntry, _ int) bool { id, ok = e.id, true; return false })
	return id, ok
}

// RaxNodes is the number of nodes Redis's radix tree would have for this
// stream's node keys (XINFO STREAM's radix-tree-nodes): the tree of the
// 16-byte big-endian master IDs, with single-child chains compressed.
func (s *Stream) RaxNodes() int {
	if len(s.nodes) == 0 {
		return 1
	}
	keys := make([][16]byte, len(s.nodes))
	for i, n := range s.nodes {
		binary.BigEndian.PutUint64(keys[i][:], n.master.Ms)
		binary.BigEndian.PutUint64(keys[i][8:], n.master.Seq)
	}
	return 1 + raxCount(keys, 0)
}

// raxCount counts the nodes below the node at depth d shared by keys
// (sorted, distinct, all with the same first d bytes).
func raxCount(keys [][16]byte, d int) int {
	if d == 16 {
		return 0
	}
	first, last := &keys[0], &keys[len(keys)-1]
	l := d
	for l < 16 && first[l] == last[l] {
		l++
	}
	if l == 16 {
		return 1 // a compressed chain down to the key
	}
	n := 0
	if l > d {
		n++ // the branching node at the end of a compressed chain
	}
	for i := 0; i < len(keys); {
		j := i + 1
		for j < len(keys) && keys[j][l] == keys[i][l] {
			j++
		}
		n += 1 + raxCount(keys[i:j], l+1)
		i = j
	}
	return n
}

// hasTombstones is Redis's streamRangeHasTombstones for [start, +].
func (s *Stream) hasTombstones(start StreamID) bool {
	if s.length == 0 || s.maxDeletedID.IsZero() {
		return false
	}
	if s.maxDeletedID.Less(s.firstID) {
		return false
	}
	return !s.maxDeletedID.Less(start)
}

// Lag is a group's lag (XINFO's "lag"); ok is false when it cannot be
// known (Redis replies null).
func (s *Stream) Lag(g *StreamGroup) (lag int64, ok bool) {
	if s.entriesAdded == 0 {
		return 0, true
	}
	if g.entriesRead != SCGInvalidEntriesRead && !s.hasTombstones(g.lastID) {
		return int64(s.entriesAdded) - g.entriesRead, true
	}
	if er := s.EstimateDistance(g.lastID); er != SCGInvalidEntriesRead {
		return int64(s.entriesAdded) - er, true
	}
	return 0, false
}

// noteDelivered advances a group past id as XREADGROUP does for each entry
// it delivers beyond the group's last ID (entries-read bookkeeping).
func (s *Stream) noteDelivered(g *StreamGroup, id StreamID) {
	if !g.lastID.Less(id) {
		return
	}
	if g.entriesRead != SCGInvalidEntriesRead && !s.hasTombstones(id) {
		g.entriesRead++
	} else if s.entriesAdded != 0 {
		g.entriesRead = s.EstimateDistance(id)
	}
	g.lastID = id
}
