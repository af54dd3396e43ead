package rdb

import (
	"encoding/binary"
	"math"
)

// Plain lists (RDB_TYPE_LIST: a count and the elements as strings) and
// skiplist-encoded sorted sets (RDB_TYPE_ZSET_2: member strings, each with
// a binary double score) are decoded here by the skimmer, as listpack values
// are (lpload.go): each element once, into an elemArena, so the Entry's
// List or ZSet views a few chunks instead of a string per element and the
// value decoder (github.com/hdt3213/rdb) never sees the record. Slices are
// sized by what has been read, never by the count the file claims, and the
// record is cut as it goes so a big value is not held twice.

// recCut is how much of a collection's record the skimmer keeps before
// cutting it (after its elements have been copied out).
const recCut = 64 << 10

// copyElem copies b into the arena, starting a chunk of up to 64 KiB when
// it does not fit.
func (a *elemArena) copyElem(b []byte) []byte {
	if cap(a.buf)-len(a.buf) < len(b) {
		a.reserve(max(len(b), min(2*cap(a.buf), 64<<10), 256))
	}
	start := len(a.buf)
	a.buf = append(a.buf, b...)
	return a.buf[start:len(a.buf):len(a.buf)]
}

// plainList decodes an RDB_TYPE_LIST value and hands it to fn.
func (s *skimmer) plainList() error {
	n, err := s.count("element count")
	if err != nil {
		return err
	}
	e := &Entry{Type: List, List: make([][]byte, 0, min(n, 1024))}
	var a elemArena
	for range n {
		v, err := s.strDec("element", &s.valBuf)
		if err != nil {
			return err
		}
		e.List = append(e.List, a.copyElem(v))
		if len(s.rec) > recCut {
			s.cut(0)
		}
	}
	s.cut(0) // not for the decoder
	return s.emitValue(e)
}

// zset2 decodes an RDB_TYPE_ZSET_2 value and hands it to fn. A NaN score
// is corrupt (Redis refuses it too).
func (s *skimmer) zset2() error {
	n, err := s.count("member count")
	if err != nil {
		return err
	}
	e := &Entry{Type: ZSet, ZSet: make([]ZMember, 0, min(n, 1024))}
	var a elemArena
	for range n {
		m, err := s.strDec("member", &s.valBuf)
		if err != nil {
			return err
		}
		member := a.copyElem(m)
		off := s.off
		b, err := s.read(8, "score")
		if err != nil {
			return err
		}
		score := math.Float64frombits(binary.LittleEndian.Uint64(b))
		if math.IsNaN(score) {
			return s.errorf(off, "key %q: NaN score of member %q", s.key, member)
		}
		e.ZSet = append(e.ZSet, ZMember{Member: member, Score: score})
		if len(s.rec) > recCut {
			s.cut(0)
		}
	}
	s.cut(0) // not for the decoder
	return s.emitValue(e)
}
