package rdb

import (
	"math"
	"strconv"
	"unsafe"

	"github.com/damselflydb/damselfly/listpack"
)

// Values in Redis's listpack encodings — hash, set and sorted set
// listpacks, a hash with field TTLs' listpack-ex (Redis 7.4) and a
// QUICKLIST_2 list of listpack (or plain) nodes — are read, checked and
// decoded here, once, with package listpack, and handed to fn as an Entry
// straight from the skimmer, as plain strings are: the value decoder
// (github.com/hdt3213/rdb) never sees them, so a listpack is neither
// decoded twice nor turned into a Go map on the way.
//
// Each listpack is first checked whole with listpack.Validate (structure,
// an element count that is a multiple of the group: 2 for a hash's
// field-value pairs or a sorted set's member-score pairs, 3 for a
// listpack-ex), so a corrupt dump or RESTORE payload is an *Error saying
// what is wrong at which offset and the trusted walk that follows cannot go
// out of bounds. Scores and field TTLs are checked as they are decoded.
//
// With Options.Listpacks, hash and set listpacks are handed over as they
// are (Entry.Listpack, validated) for the caller to decode once into its own
// structures; sorted sets (whose scores are checked here), hashes with field
// TTLs and lists are always decoded here.
//
// Decoded elements are copied (strings) or formatted (integers) into an
// elemArena: chunks that never move once an element views them, normally
// one allocation per value, so the Entry's collection fields are fresh
// memory the caller may keep.

// lpValue reads a value of listpack type typ and hands it to fn.
func (s *skimmer) lpValue(typ byte) error {
	e := &Entry{}
	var err error
	switch typ {
	case typeSetListpack:
		err = s.lpSet(e)
	case typeHashListpack:
		err = s.lpHash(e)
	case typeZSetListpack:
		err = s.lpZSet(e)
	case typeHashLpExPreGA, typeHashLpEx:
		err = s.lpHashEx(e, typ)
	case typeListQuicklist2:
		err = s.lpList(e)
	}
	if err != nil {
		return err
	}
	s.cut(0) // not for the decoder
	return s.emitValue(e)
}

// emitValue hands fn e, a value of the current key record the skimmer
// decoded itself, with the record's key, database, expiry and flags.
func (s *skimmer) emitValue(e *Entry) error {
	if s.opt.Reuse {
		e.Key = s.key
	} else {
		e.Key = append([]byte{}, s.key...)
	}
	e.DB, e.ExpireAtMs, e.MCFlags = s.db, s.expireMs, s.recMCFlags
	return s.emit(e)
}

// listpackValue reads the string at the current offset as a listpack and
// validates it (see above), returning it (valid until the next read) and
// its element count. what names the string in messages.
func (s *skimmer) listpackValue(what string, group int) (lp []byte, n int, off int64, err error) {
	off = s.off
	lp, err = s.strDec(what, &s.lpBuf)
	if err != nil {
		return nil, 0, off, err
	}
	n, err = listpack.Validate(lp)
	if err != nil {
		return nil, 0, off, s.errorf(off, "%s listpack: %v", what, err)
	}
	if n%group != 0 {
		return nil, 0, off, s.errorf(off, "%s listpack: %d elements, not a multiple of %d", what, n, group)
	}
	return lp, n, off, nil
}

// elemArena holds decoded elements. A chunk is never reallocated: when an
// element does not fit, a new chunk is started, so earlier elements stay
// valid.
type elemArena struct{ buf []byte }

// reserve starts a chunk of at least n free bytes unless there is room.
func (a *elemArena) reserve(n int) {
	if cap(a.buf)-len(a.buf) < n {
		a.buf = make([]byte, 0, n)
	}
}

// forListpack reserves room for a listpack's elements: its strings take
// less than the listpack, its integers at most about twice their size.
func (a *elemArena) forListpack(lp []byte) { a.reserve(len(lp) + len(lp)/4 + 24) }

// elem decodes the element at off of validated lp into the arena and
// returns it and the next offset.
func (a *elemArena) elem(lp []byte, off int) ([]byte, int) {
	str, v, isInt, next := listpack.Elem(lp, off)
	if isInt {
		if cap(a.buf)-len(a.buf) < 20 {
			a.reserve(20 + 2*(len(lp)-next))
		}
		start := len(a.buf)
		a.buf = strconv.AppendInt(a.buf, v, 10)
		return a.buf[start:len(a.buf):len(a.buf)], next
	}
	if cap(a.buf)-len(a.buf) < len(str) {
		a.reserve(len(str) + 2*(len(lp)-next))
	}
	start := len(a.buf)
	a.buf = append(a.buf, str...)
	return a.buf[start:len(a.buf):len(a.buf)], next
}

func (s *skimmer) lpSet(e *Entry) error {
	lp, n, _, err := s.listpackValue("value", 1)
	if err != nil {
		return err
	}
	if s.opt.Listpacks {
		e.Type, e.Listpack, e.ListpackLen = Set, append([]byte(nil), lp...), n
		return nil
	}
	var a elemArena
	a.forListpack(lp)
	e.Type, e.Set = Set, make([][]byte, n)
	for i, off := 0, listpack.First; i < n; i++ {
		e.Set[i], off = a.elem(lp, off)
	}
	return nil
}

func (s *skimmer) lpHash(e *Entry) error {
	lp, n, _, err := s.listpackValue("value", 2)
	if err != nil {
		return err
	}
	if s.opt.Listpacks {
		e.Type, e.Listpack, e.ListpackLen = Hash, append([]byte(nil), lp...), n
		return nil
	}
	var a elemArena
	a.forListpack(lp)
	e.Type, e.Hash = Hash, make([][2][]byte, n/2)
	for i, off := 0, listpack.First; i < n/2; i++ {
		e.Hash[i][0], off = a.elem(lp, off)
		e.Hash[i][1], off = a.elem(lp, off)
	}
	return nil
}

// lpZSet decodes a sorted set listpack: member, score (an integer, or a
// string strtod reads; NaN or an unreadable score is corrupt).
func (s *skimmer) lpZSet(e *Entry) error {
	lp, n, off0, err := s.listpackValue("value", 2)
	if err != nil {
		return err
	}
	var a elemArena
	a.forListpack(lp)
	e.Type, e.ZSet = ZSet, make([]ZMember, n/2)
	for i, off := 0, listpack.First; i < n/2; i++ {
		e.ZSet[i].Member, off = a.elem(lp, off)
		str, v, isInt, next := listpack.Elem(lp, off)
		score := float64(v)
		if !isInt {
			f, perr := strconv.ParseFloat(unsafe.String(unsafe.SliceData(str), len(str)), 64)
			if perr != nil && !isRange(perr) || math.IsNaN(f) {
				return s.errorf(off0, "value listpack: bad score %q (listpack offset %d)", str, off)
			}
			score = f
		}
		e.ZSet[i].Score, off = score, next
	}
	return nil
}

// isRange reports a ParseFloat range error (the value is ±Inf or 0, as
// strtod reads it).
func isRange(err error) bool {
	ne, ok := err.(*strconv.NumError)
	return ok && ne.Err == strconv.ErrRange
}

// lpHashEx decodes a hash with field TTLs in a listpack-ex: field, value,
// deadline (an integer, Unix ms; 0 = none). RDB_TYPE_HASH_LISTPACK_EX
// stores the earliest deadline first; its pre-GA form does not.
func (s *skimmer) lpHashEx(e *Entry, typ byte) error {
	if typ == typeHashLpEx {
		if _, err := s.read(8, "hash min expire"); err != nil {
			return err
		}
	}
	lp, n, off0, err := s.listpackValue("value", 3)
	if err != nil {
		return err
	}
	var a elemArena
	a.forListpack(lp)
	e.Type, e.Hash = Hash, make([][2][]byte, n/3)
	e.HashFieldExpireAtMs = make(map[string]int64, n/3)
	for i, off := 0, listpack.First; i < n/3; i++ {
		e.Hash[i][0], off = a.elem(lp, off)
		e.Hash[i][1], off = a.elem(lp, off)
		_, at, isInt, next := listpack.Elem(lp, off)
		if !isInt || at < 0 {
			return s.errorf(off0, "value listpack: bad field deadline (listpack offset %d)", off)
		}
		e.HashFieldExpireAtMs[string(e.Hash[i][0])] = at
		off = next
	}
	return nil
}

// lpList decodes a QUICKLIST_2 list: packed nodes (listpacks) and plain
// nodes (one element each, stored as a string).
func (s *skimmer) lpList(e *Entry) error {
	nodes, err := s.count("quicklist node count")
	if err != nil {
		return err
	}
	e.Type = List
	var a elemArena
	for range nodes {
		off := s.off
		c, err := s.count("quicklist container")
		if err != nil {
			return err
		}
		switch c {
		case quicklistNodePacked:
			lp, n, _, err := s.listpackValue("quicklist node", 1)
			if err != nil {
				return err
			}
			if e.List == nil {
				// Sized by what has been read, never by the node count
				// the file claims.
				e.List = make([][]byte, 0, n)
			}
			a.forListpack(lp)
			for i, off := 0, listpack.First; i < n; i++ {
				var v []byte
				v, off = a.elem(lp, off)
				e.List = append(e.List, v)
			}
		case quicklistNodePlain:
			elem, err := s.str("quicklist plain node", true)
			if err != nil {
				return err
			}
			e.List = append(e.List, append([]byte{}, elem...)) // elem may view rec
		default:
			return s.errorf(off, "bad quicklist container %d", c)
		}
		s.cut(0) // a long list's record need not stay in memory
	}
	return nil
}
