package rdb

import (
	"bytes"
	"encoding/binary"
	"fmt"

	"github.com/damselflydb/damselfly/listpack"
)

// Streams (RDB_TYPE_STREAM_LISTPACKS 15, _2 19 and _3 21).
//
// The reader parses stream records itself rather than through
// github.com/hdt3213/rdb: that decoder turns every entry into a Go map
// (losing the order of fields and repeated field names) and drops nothing
// else we need, but costs a map per entry. The skimmer reads the record,
// keeps the node listpacks as they are (Redis's own bytes; the shard's stream
// type validates and adopts them) and hands the Entry to fn itself, as it
// does strings and listpack values (lpload.go): the decoder never sees it.

// StreamID is a stream entry ID.
type StreamID struct{ Ms, Seq uint64 }

// StreamNode is one node: its master ID and its listpack, in Redis's format.
type StreamNode struct {
	Master StreamID
	LP     []byte
}

// StreamNACK is an entry of a group's pending entries list.
type StreamNACK struct {
	ID            StreamID
	DeliveryTime  int64 // unix ms
	DeliveryCount uint64
}

// StreamConsumer is a consumer and the IDs it owns.
type StreamConsumer struct {
	Name       []byte
	SeenTime   int64
	ActiveTime int64 // type 21 only; SeenTime otherwise (as Redis 7.2 loads it)
	PEL        []StreamID
}

// StreamGroup is a consumer group.
type StreamGroup struct {
	Name        []byte
	LastID      StreamID
	EntriesRead int64 // -1: unknown; for type 15 files, call the stream's estimate
	// HasEntriesRead is false for type 15 (Redis < 7.0), which does not
	// store it.
	HasEntriesRead bool
	PEL            []StreamNACK
	Consumers      []StreamConsumer
}

// StreamValue is a stream as an RDB file stores it.
type StreamValue struct {
	Nodes        []StreamNode
	Length       uint64
	LastID       StreamID
	FirstID      StreamID // type 19+
	MaxDeletedID StreamID // type 19+
	EntriesAdded uint64   // type 19+
	HasV2        bool     // the type 19+ metadata is present
	Groups       []StreamGroup
}

// stream parses a stream value of type typ and hands it to fn.
func (s *skimmer) stream(typ byte) error {
	v := &StreamValue{HasV2: typ >= typeStreamListpacks2}
	if err := s.streamNodes(v); err != nil {
		return err
	}
	if err := s.streamMeta(v); err != nil {
		return err
	}
	groups, err := s.count("stream group count")
	if err != nil {
		return err
	}
	for range groups {
		g, err := s.streamGroup(typ, v.HasV2)
		if err != nil {
			return err
		}
		v.Groups = append(v.Groups, g)
	}
	s.cut(0) // not for the decoder
	return s.emitValue(&Entry{Type: Stream, Stream: v})
}

// streamNodes reads the stream's listpack nodes, each keyed by its master
// ID, checking each listpack's header.
func (s *skimmer) streamNodes(v *StreamValue) error {
	n, err := s.count("stream listpack count")
	if err != nil {
		return err
	}
	for range n {
		off := s.off
		key, err := s.str("stream node key", true)
		if err != nil {
			return err
		}
		if len(key) != 16 {
			return s.errorf(off, "stream node key is %d bytes, want 16", len(key))
		}
		master := StreamID{binary.BigEndian.Uint64(key), binary.BigEndian.Uint64(key[8:])}
		off = s.off
		lp, err := s.str("stream listpack", true)
		if err != nil {
			return err
		}
		if listpack.ValidateHeader(lp) != nil { // the shard validates it whole (Stream.LoadNode)
			return s.errorf(off, "corrupt stream listpack (bad header)")
		}
		if len(lp) == listpack.EmptySize {
			return s.errorf(off, "empty listpack inside stream")
		}
		v.Nodes = append(v.Nodes, StreamNode{Master: master, LP: bytes.Clone(lp)})
	}
	return nil
}

// streamMeta reads the length, last ID and (v2) first ID, max deleted ID
// and entries added, and checks the length against the nodes.
func (s *skimmer) streamMeta(v *StreamValue) error {
	var err error
	if v.Length, err = s.num("stream length"); err != nil {
		return err
	}
	if v.LastID, err = s.streamID(); err != nil {
		return err
	}
	if v.HasV2 {
		if v.FirstID, err = s.streamID(); err != nil {
			return err
		}
		if v.MaxDeletedID, err = s.streamID(); err != nil {
			return err
		}
		if v.EntriesAdded, err = s.num("stream entries added"); err != nil {
			return err
		}
	}
	if v.Length > 0 && len(v.Nodes) == 0 {
		return s.errorf(s.keyOff, "key %q: stream length inconsistent with its nodes", s.key)
	}
	return nil
}

// streamGroup reads one consumer group: name, last ID, (v2) entries
// read, its PEL and its consumers.
func (s *skimmer) streamGroup(typ byte, v2 bool) (StreamGroup, error) {
	var g StreamGroup
	name, err := s.str("group name", true)
	if err != nil {
		return g, err
	}
	g.Name = bytes.Clone(name)
	if g.LastID, err = s.streamID(); err != nil {
		return g, err
	}
	g.EntriesRead = -1
	if v2 {
		er, err := s.num("group entries read")
		if err != nil {
			return g, err
		}
		g.EntriesRead, g.HasEntriesRead = int64(er), true
	}
	pel, err := s.count("group PEL size")
	if err != nil {
		return g, err
	}
	for range pel {
		b, err := s.read(24, "PEL entry")
		if err != nil {
			return g, err
		}
		na := StreamNACK{ID: rawID(b), DeliveryTime: int64(binary.LittleEndian.Uint64(b[16:]))}
		if na.DeliveryCount, err = s.num("PEL delivery count"); err != nil {
			return g, err
		}
		g.PEL = append(g.PEL, na)
	}
	consumers, err := s.count("consumer count")
	if err != nil {
		return g, err
	}
	for range consumers {
		c, err := s.streamConsumer(typ)
		if err != nil {
			return g, err
		}
		g.Consumers = append(g.Consumers, c)
	}
	return g, nil
}

// streamConsumer reads one consumer: name, seen time, (v3) active time
// and the IDs of its PEL.
func (s *skimmer) streamConsumer(typ byte) (StreamConsumer, error) {
	var c StreamConsumer
	name, err := s.str("consumer name", true)
	if err != nil {
		return c, err
	}
	c.Name = bytes.Clone(name)
	b, err := s.read(8, "consumer seen time")
	if err != nil {
		return c, err
	}
	c.SeenTime = int64(binary.LittleEndian.Uint64(b))
	c.ActiveTime = c.SeenTime
	if typ >= typeStreamListpacks3 {
		b, err := s.read(8, "consumer active time")
		if err != nil {
			return c, err
		}
		c.ActiveTime = int64(binary.LittleEndian.Uint64(b))
	}
	cp, err := s.count("consumer PEL size")
	if err != nil {
		return c, err
	}
	for range cp {
		b, err := s.read(16, "consumer PEL entry")
		if err != nil {
			return c, err
		}
		c.PEL = append(c.PEL, rawID(b))
	}
	return c, nil
}

func rawID(b []byte) StreamID {
	return StreamID{binary.BigEndian.Uint64(b), binary.BigEndian.Uint64(b[8:])}
}

func (s *skimmer) streamID() (StreamID, error) {
	ms, err := s.num("stream ID")
	if err != nil {
		return StreamID{}, err
	}
	seq, err := s.num("stream ID")
	return StreamID{ms, seq}, err
}

// --- writing ---------------------------------------------------------------

func appendRawID(b []byte, id StreamID) []byte {
	b = binary.BigEndian.AppendUint64(b, id.Ms)
	return binary.BigEndian.AppendUint64(b, id.Seq)
}

// Stream writes a stream key the way Redis does: RDB_TYPE_STREAM_LISTPACKS_2
// for RDB 10 (Redis 7.0), RDB_TYPE_STREAM_LISTPACKS_3 (with the consumers'
// active times) for RDB 11 and 12. Node listpacks are written as they are
// (LZF-compressed like any string); v.HasV2 is ignored (the metadata is
// always written). Groups and consumers must be in name order and PELs in
// ID order, as Redis writes them.
func (w *Writer) Stream(key []byte, expireAtMs int64, v *StreamValue) error {
	if w.err != nil {
		return w.err
	}
	typ := byte(typeStreamListpacks2)
	if w.version >= 11 {
		typ = typeStreamListpacks3
	}
	w.begin(typ, key, expireAtMs)
	w.writeLength(uint64(len(v.Nodes)))
	var idb [16]byte
	for _, n := range v.Nodes {
		w.writeBlob(appendRawID(idb[:0], n.Master))
		w.writeBlob(n.LP)
	}
	w.writeLength(v.Length)
	w.writeID(v.LastID)
	w.writeID(v.FirstID)
	w.writeID(v.MaxDeletedID)
	w.writeLength(v.EntriesAdded)
	w.writeLength(uint64(len(v.Groups)))
	for _, g := range v.Groups {
		w.writeString(g.Name)
		w.writeID(g.LastID)
		w.writeLength(uint64(g.EntriesRead))
		w.writeLength(uint64(len(g.PEL)))
		for _, na := range g.PEL {
			b := appendRawID(w.scratch[:0], na.ID)
			b = binary.LittleEndian.AppendUint64(b, uint64(na.DeliveryTime))
			w.scratch = b
			w.write(b)
			w.writeLength(na.DeliveryCount)
		}
		w.writeLength(uint64(len(g.Consumers)))
		for _, c := range g.Consumers {
			w.writeString(c.Name)
			b := binary.LittleEndian.AppendUint64(w.scratch[:0], uint64(c.SeenTime))
			if typ == typeStreamListpacks3 {
				b = binary.LittleEndian.AppendUint64(b, uint64(c.ActiveTime))
			}
			w.scratch = b
			w.write(b)
			w.writeLength(uint64(len(c.PEL)))
			for _, id := range c.PEL {
				w.scratch = appendRawID(w.scratch[:0], id)
				w.write(w.scratch)
			}
		}
	}
	return w.err
}

func (w *Writer) writeID(id StreamID) {
	w.writeLength(id.Ms)
	w.writeLength(id.Seq)
}

// Stream returns the DUMP payload of a stream.
func (d Dumper) Stream(v *StreamValue) ([]byte, error) {
	if v == nil {
		return nil, fmt.Errorf("rdb: nil stream")
	}
	return d.run(func(w *Writer) error { return w.Stream(nil, 0, v) })
}
