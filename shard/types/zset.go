package types

import (
	"bytes"
	"encoding/binary"
	"errors"
	"math"
	"math/rand/v2"
	"strings"
)

// ZSet is a Redis sorted set: a listpack of member,score pairs sorted by
// (score, member) while small, then "skiplist": a member→score table plus an
// order-statistic B+tree (O(log n) rank operations).
type ZSet struct {
	lp []byte // member, score(8 bytes little-endian float64 bits) pairs
	n  int
	t  *table
	tr *ztree
}

// ZMember is a member with its score (copies, owned by the caller).
type ZMember struct {
	Member []byte
	Score  float64
}

// ZAddFlags are ZADD's options.
type ZAddFlags uint8

const (
	ZAddNX ZAddFlags = 1 << iota
	ZAddXX
	ZAddGT
	ZAddLT
	ZAddIncr
)

// ZAddResult says what Add did.
type ZAddResult uint8

const (
	ZNop     ZAddResult = iota // nothing changed (NX/XX/GT/LT refused, or same score)
	ZAdded                     // new member
	ZUpdated                   // score changed
)

// ErrGTLTNX is ZADD's error for GT/LT combined with NX (or GT with LT).
var ErrGTLTNX = errors.New("GT, LT, and/or NX options at the same time are not compatible")

// newZSet returns an empty sorted set in the listpack encoding.
func newZSet() *ZSet { return &ZSet{} }

// newZSetSized mirrors Redis's zsetTypeCreate: skiplist when hint elements
// or a member of maxLen bytes exceed the listpack limits.
func newZSetSized(hint, maxLen int, l *Limits) *ZSet {
	lm := lim(l)
	if lm.ZSetMaxListpackEntries == 0 || hint > lm.ZSetMaxListpackEntries || maxLen > lm.ZSetMaxListpackValue {
		z := &ZSet{t: newTable(kindZSet, hint)}
		z.tr = newZTree(z.t)
		return z
	}
	return &ZSet{}
}

// Encoding returns "listpack" or "skiplist".
func (z *ZSet) Encoding() string {
	if z.t != nil {
		return "skiplist"
	}
	return "listpack"
}

// Len returns the number of members.
func (z *ZSet) Len() int {
	if z.t != nil {
		return z.t.n
	}
	return z.n
}

func getScore(v []byte) float64 { return math.Float64frombits(binary.LittleEndian.Uint64(v)) }

func putScore(s float64) [8]byte {
	var b [8]byte
	binary.LittleEndian.PutUint64(b[:], math.Float64bits(s))
	return b
}

func zless(s1 float64, m1 []byte, s2 float64, m2 []byte) bool {
	if s1 != s2 {
		return s1 < s2
	}
	return bytes.Compare(m1, m2) < 0
}

// lpPair reads the pair at off.
func (z *ZSet) lpPair(off int) (m []byte, s float64, next int) {
	m, off = lpNext(z.lp, off)
	v, next := lpNext(z.lp, off)
	return m, getScore(v), next
}

func (z *ZSet) lpPairPrev(end int) (m []byte, s float64, start int) {
	v, off := lpPrev(z.lp, end)
	m, start = lpPrev(z.lp, off)
	return m, getScore(v), start
}

func (z *ZSet) lpFind(member []byte) (off, end int, score float64, ok bool) {
	for off = 0; off < len(z.lp); {
		m, s, e := z.lpPair(off)
		if bytes.Equal(m, member) {
			return off, e, s, true
		}
		off = e
	}
	return 0, 0, 0, false
}

func (z *ZSet) lpInsert(member []byte, score float64) {
	if score == 0 {
		// Redis's listpack holds a score as the text "-0", which it stores
		// as the integer 0: -0 reads back as 0 in this encoding (only).
		score = 0
	}
	off := 0
	for off < len(z.lp) {
		m, s, e := z.lpPair(off)
		if zless(score, member, s, m) {
			break
		}
		off = e
	}
	sb := putScore(score)
	z.lp = lpInsert(z.lp, off, member, sb[:])
	z.n++
}

func (z *ZSet) convert(extra int) {
	t := newTable(kindZSet, z.n+extra)
	tr := newZTree(t)
	for off := 0; off < len(z.lp); {
		var m []byte
		var s float64
		m, s, off = z.lpPair(off)
		ref := t.newEntry(m, nil, s)
		t.put(thash(m), ref)
		tr.insert(zitem{s, ref}, m)
	}
	z.t, z.tr, z.lp, z.n = t, tr, nil, 0
}

// Score returns member's score.
func (z *ZSet) Score(member []byte) (float64, bool) {
	if z.t != nil {
		ref, ok := z.t.lookup(member)
		if !ok {
			return 0, false
		}
		return z.t.scoreAt(ref), true
	}
	_, _, s, ok := z.lpFind(member)
	return s, ok
}

// add implements ZADD/ZINCRBY for one member with Redis's rules and returns
// the member's resulting score and what happened. With ZAddIncr, score is
// the increment; a NaN result returns ErrNaN and changes nothing. The
// caller counts ZAdded (and ZUpdated with CH) for the reply; with INCR a
// ZNop result means a nil reply.
func (z *ZSet) add(member []byte, score float64, flags ZAddFlags, l *Limits) (float64, ZAddResult, error) {
	nx, xx := flags&ZAddNX != 0, flags&ZAddXX != 0
	gt, lt := flags&ZAddGT != 0, flags&ZAddLT != 0
	if nx && xx {
		return 0, ZNop, ErrIncompatibleFlags
	}
	if (gt && nx) || (lt && nx) || (gt && lt) {
		return 0, ZNop, ErrGTLTNX
	}
	if math.IsNaN(score) {
		return 0, ZNop, ErrNaN
	}
	cur, exists := z.Score(member)
	if exists {
		if nx {
			return cur, ZNop, nil
		}
		if flags&ZAddIncr != 0 {
			score += cur
			if math.IsNaN(score) {
				return 0, ZNop, ErrNaN
			}
		}
		if (lt && score >= cur) || (gt && score <= cur) {
			return cur, ZNop, nil
		}
		if score == cur {
			return cur, ZNop, nil
		}
		z.update(member, cur, score)
		return score, ZUpdated, nil
	}
	if xx {
		return 0, ZNop, nil
	}
	lm := lim(l)
	if z.t == nil && (z.n+1 > lm.ZSetMaxListpackEntries || len(member) > lm.ZSetMaxListpackValue) {
		z.convert(1)
	}
	if z.t == nil {
		z.lpInsert(member, score)
		return score, ZAdded, nil
	}
	ref := z.t.newEntry(member, nil, score)
	z.t.put(thash(member), ref)
	z.tr.insert(zitem{score, ref}, member)
	return score, ZAdded, nil
}

// Plan returns what Add would return for these arguments without changing
// the set: a write command that finds nothing to change answers from it and
// needs no W (so no snapshot capture and no WATCH touch).
func (z *ZSet) Plan(member []byte, score float64, flags ZAddFlags) (float64, ZAddResult, error) {
	nx, xx := flags&ZAddNX != 0, flags&ZAddXX != 0
	gt, lt := flags&ZAddGT != 0, flags&ZAddLT != 0
	if nx && xx {
		return 0, ZNop, ErrIncompatibleFlags
	}
	if (gt && nx) || (lt && nx) || (gt && lt) {
		return 0, ZNop, ErrGTLTNX
	}
	if math.IsNaN(score) {
		return 0, ZNop, ErrNaN
	}
	cur, exists := z.Score(member)
	if !exists {
		if xx {
			return 0, ZNop, nil
		}
		return score, ZAdded, nil
	}
	if nx {
		return cur, ZNop, nil
	}
	if flags&ZAddIncr != 0 {
		score += cur
		if math.IsNaN(score) {
			return 0, ZNop, ErrNaN
		}
	}
	if (lt && score >= cur) || (gt && score <= cur) || score == cur {
		return cur, ZNop, nil
	}
	return score, ZUpdated, nil
}

func (z *ZSet) update(member []byte, old, score float64) {
	if z.t == nil {
		off, end, _, _ := z.lpFind(member)
		m := bytes.Clone(member)
		z.lp = lpDelete(z.lp, off, end)
		z.n--
		z.lpInsert(m, score)
		return
	}
	ref, _ := z.t.lookup(member)
	key := z.t.keyAt(ref)
	z.tr.delete(old, key)
	z.t.setScoreAt(ref, score)
	z.tr.insert(zitem{score, ref}, key)
}

// remove deletes member and reports whether it existed.
func (z *ZSet) remove(member []byte) bool {
	if z.t == nil {
		off, end, _, ok := z.lpFind(member)
		if ok {
			z.lp = lpDelete(z.lp, off, end)
			z.n--
		}
		return ok
	}
	i, ok := z.t.find(member, thash(member))
	if !ok {
		return false
	}
	z.removeSlot(i)
	z.afterRemove()
	return true
}

// removeSlot removes the element of table slot i from the tree and table
// without compacting.
func (z *ZSet) removeSlot(i int) {
	ref := z.t.slots[i] & refMask
	z.tr.delete(z.t.scoreAt(ref), z.t.keyAt(ref))
	z.t.free(ref)
	z.t.removeSlot(i)
}

func (z *ZSet) afterRemove() {
	z.t.maybeShrink()
	z.t.maybeCompact(z.tr.walkRefs)
}

// rankWhere returns how many leading elements satisfy pred (a prefix).
func (z *ZSet) rankWhere(pred func(m []byte, s float64) bool) int {
	if z.t != nil {
		return z.tr.rankWhere(func(it zitem) bool { return pred(z.t.keyAt(it.ref), it.score) })
	}
	r := 0
	for off := 0; off < len(z.lp); r++ {
		m, s, e := z.lpPair(off)
		if !pred(m, s) {
			break
		}
		off = e
	}
	return r
}

// iter calls fn for ranks [lo, hi), ascending or descending.
func (z *ZSet) iter(lo, hi int, reverse bool, fn func(m []byte, s float64) bool) {
	if lo >= hi {
		return
	}
	if z.t != nil {
		f := func(it zitem) bool { return fn(z.t.keyAt(it.ref), it.score) }
		if reverse {
			descend(z.tr.root, lo, hi, f)
		} else {
			ascend(z.tr.root, lo, hi, f)
		}
		return
	}
	if !reverse {
		off := 0
		for i := 0; i < lo; i++ {
			_, _, off = z.lpPair(off)
		}
		for i := lo; i < hi; i++ {
			m, s, e := z.lpPair(off)
			if !fn(m, s) {
				return
			}
			off = e
		}
		return
	}
	end := len(z.lp)
	for i := z.n; i > hi; i-- {
		_, _, end = z.lpPairPrev(end)
	}
	for i := hi; i > lo; i-- {
		m, s, st := z.lpPairPrev(end)
		if !fn(m, s) {
			return
		}
		end = st
	}
}

// Rank returns member's 0-based rank (from the highest score when reverse)
// and its score.
func (z *ZSet) Rank(member []byte, reverse bool) (int, float64, bool) {
	score, ok := z.Score(member)
	if !ok {
		return 0, 0, false
	}
	r := z.rankWhere(func(m []byte, s float64) bool { return zless(s, m, score, member) })
	if reverse {
		r = z.Len() - 1 - r
	}
	return r, score, true
}

// Iterate calls fn in ascending order until fn returns false.
func (z *ZSet) Iterate(fn func(member []byte, score float64) bool) {
	z.iter(0, z.Len(), false, fn)
}

// RangeByRank is ZRANGE start stop [REV] with Redis's negative-index rules
// (with reverse, index 0 is the highest score).
func (z *ZSet) RangeByRank(start, stop int64, reverse bool, fn func(member []byte, score float64) bool) {
	lo, hi, ok := normRange(start, stop, z.Len())
	if !ok {
		return
	}
	if reverse {
		n := z.Len()
		lo, hi = n-hi, n-lo
	}
	z.iter(lo, hi, reverse, fn)
}

// ScoreBound is one end of a score range; Excl is the "(" prefix.
type ScoreBound struct {
	Value float64
	Excl  bool
}

// ErrNotFloatRange is Redis's error for a bad score range bound.
var ErrNotFloatRange = errors.New("min or max is not a float")

// ParseScoreBound parses "1.5", "(1.5", "-inf", "+inf", "inf".
func ParseScoreBound(b []byte) (ScoreBound, error) {
	var sb ScoreBound
	s := string(b)
	if strings.HasPrefix(s, "(") {
		sb.Excl = true
		s = s[1:]
	}
	v, err := parseRedisFloat(s)
	if err != nil {
		return sb, ErrNotFloatRange
	}
	sb.Value = v
	return sb, nil
}

// parseRedisFloat parses a range bound as Redis's zslParseRange: strtod
// must consume everything ("" reads as 0, leading space is skipped,
// 1e400 is inf) and the value must not be NaN.
func parseRedisFloat(s string) (float64, error) {
	v, n, _ := Strtod(s)
	if n != len(s) || math.IsNaN(v) {
		return 0, ErrNotFloatRange
	}
	return v, nil
}

func (b ScoreBound) belowMin(s float64) bool {
	if b.Excl {
		return s <= b.Value
	}
	return s < b.Value
}

func (b ScoreBound) notAboveMax(s float64) bool {
	if b.Excl {
		return s < b.Value
	}
	return s <= b.Value
}

func (z *ZSet) scoreRanks(min, max ScoreBound) (int, int) {
	lo := z.rankWhere(func(_ []byte, s float64) bool { return min.belowMin(s) })
	hi := z.rankWhere(func(_ []byte, s float64) bool { return max.notAboveMax(s) })
	return lo, hi
}

// limitRanks applies LIMIT offset count to the ranks [lo, hi); count < 0
// means no limit, offset < 0 gives nothing (as Redis).
func limitRanks(lo, hi int, reverse bool, offset, count int64) (int, int) {
	if lo >= hi || offset < 0 || offset >= int64(hi-lo) || count == 0 {
		return 0, 0
	}
	n := int64(hi-lo) - offset
	if count >= 0 && count < n {
		n = count
	}
	if reverse {
		e := hi - int(offset)
		return e - int(n), e
	}
	s := lo + int(offset)
	return s, s + int(n)
}

// RangeByScore is ZRANGEBYSCORE/ZREVRANGEBYSCORE: members with min <= score
// <= max (honouring exclusive bounds), ascending or (reverse) descending,
// after skipping offset and returning at most count (count < 0: all).
func (z *ZSet) RangeByScore(min, max ScoreBound, reverse bool, offset, count int64, fn func(member []byte, score float64) bool) {
	lo, hi := z.scoreRanks(min, max)
	lo, hi = limitRanks(lo, hi, reverse, offset, count)
	z.iter(lo, hi, reverse, fn)
}

// CountByScore is ZCOUNT.
func (z *ZSet) CountByScore(min, max ScoreBound) int {
	lo, hi := z.scoreRanks(min, max)
	return max0(hi - lo)
}

func max0(x int) int {
	if x < 0 {
		return 0
	}
	return x
}

// LexBound is one end of a lex range: "-" (NegInf), "+" (PosInf), "[v" or
// "(v" (Excl).
type LexBound struct {
	Value  []byte
	Excl   bool
	NegInf bool
	PosInf bool
}

// ErrLexRange is Redis's error for a bad lex range bound.
var ErrLexRange = errors.New("min or max not valid string range item")

// ParseLexBound parses a ZRANGEBYLEX bound.
func ParseLexBound(b []byte) (LexBound, error) {
	if len(b) == 0 {
		return LexBound{}, ErrLexRange
	}
	switch b[0] {
	case '+':
		if len(b) == 1 {
			return LexBound{PosInf: true}, nil
		}
	case '-':
		if len(b) == 1 {
			return LexBound{NegInf: true}, nil
		}
	case '[':
		return LexBound{Value: b[1:]}, nil
	case '(':
		return LexBound{Value: b[1:], Excl: true}, nil
	}
	return LexBound{}, ErrLexRange
}

func (b LexBound) belowMin(m []byte) bool {
	switch {
	case b.NegInf:
		return false
	case b.PosInf:
		return true
	case b.Excl:
		return bytes.Compare(m, b.Value) <= 0
	}
	return bytes.Compare(m, b.Value) < 0
}

func (b LexBound) notAboveMax(m []byte) bool {
	switch {
	case b.NegInf:
		return false
	case b.PosInf:
		return true
	case b.Excl:
		return bytes.Compare(m, b.Value) < 0
	}
	return bytes.Compare(m, b.Value) <= 0
}

func (z *ZSet) lexRanks(min, max LexBound) (int, int) {
	lo := z.rankWhere(func(m []byte, _ float64) bool { return min.belowMin(m) })
	hi := z.rankWhere(func(m []byte, _ float64) bool { return max.notAboveMax(m) })
	return lo, hi
}

// RangeByLex is ZRANGEBYLEX/ZREVRANGEBYLEX (all members are expected to share
// one score, as Redis requires).
func (z *ZSet) RangeByLex(min, max LexBound, reverse bool, offset, count int64, fn func(member []byte, score float64) bool) {
	lo, hi := z.lexRanks(min, max)
	lo, hi = limitRanks(lo, hi, reverse, offset, count)
	z.iter(lo, hi, reverse, fn)
}

// CountByLex is ZLEXCOUNT.
func (z *ZSet) CountByLex(min, max LexBound) int {
	lo, hi := z.lexRanks(min, max)
	return max0(hi - lo)
}

// removeRanks deletes ranks [lo, hi) and returns how many were removed.
func (z *ZSet) removeRanks(lo, hi int) int {
	if lo >= hi {
		return 0
	}
	if z.t == nil {
		off := 0
		for i := 0; i < lo; i++ {
			_, _, off = z.lpPair(off)
		}
		end := off
		for i := lo; i < hi; i++ {
			_, _, end = z.lpPair(end)
		}
		z.lp = lpDelete(z.lp, off, end)
		z.n -= hi - lo
		return hi - lo
	}
	refs := make([]uint64, 0, hi-lo)
	ascend(z.tr.root, lo, hi, func(it zitem) bool { refs = append(refs, it.ref); return true })
	for _, ref := range refs {
		i, _ := z.t.find(z.t.keyAt(ref), thash(z.t.keyAt(ref)))
		z.removeSlot(i)
	}
	z.afterRemove()
	return hi - lo
}

// removeRangeByRank is ZREMRANGEBYRANK.
func (z *ZSet) removeRangeByRank(start, stop int64) int {
	lo, hi, ok := normRange(start, stop, z.Len())
	if !ok {
		return 0
	}
	return z.removeRanks(lo, hi)
}

// removeRangeByScore is ZREMRANGEBYSCORE.
func (z *ZSet) removeRangeByScore(min, max ScoreBound) int {
	return z.removeRanks(z.scoreRanks(min, max))
}

// removeRangeByLex is ZREMRANGEBYLEX.
func (z *ZSet) removeRangeByLex(min, max LexBound) int {
	return z.removeRanks(z.lexRanks(min, max))
}

// popMin removes and returns up to count lowest members (ZPOPMIN), lowest
// first. count <= 0 returns nil.
func (z *ZSet) popMin(count int64) []ZMember { return z.pop(count, false) }

// popMax removes and returns up to count highest members, highest first.
func (z *ZSet) popMax(count int64) []ZMember { return z.pop(count, true) }

func (z *ZSet) pop(count int64, highest bool) []ZMember {
	n := z.Len()
	if count <= 0 || n == 0 {
		return nil
	}
	k := n
	if count < int64(n) {
		k = int(count)
	}
	lo, hi := 0, k
	if highest {
		lo, hi = n-k, n
	}
	out := make([]ZMember, 0, k)
	z.iter(lo, hi, highest, func(m []byte, s float64) bool {
		out = append(out, ZMember{bytes.Clone(m), s})
		return true
	})
	z.removeRanks(lo, hi)
	return out
}

// Scan is ZSCAN; the listpack encoding returns everything with cursor 0.
func (z *ZSet) Scan(cursor uint64, count int, fn func(member []byte, score float64)) uint64 {
	if z.t != nil {
		return z.t.scan(cursor, count, func(ref uint64) { fn(z.t.keyAt(ref), z.t.scoreAt(ref)) })
	}
	z.Iterate(func(m []byte, s float64) bool { fn(m, s); return true })
	return 0
}

// RandomMembers is ZRANDMEMBER's count semantics (see Hash.RandomFields).
func (z *ZSet) RandomMembers(r *rand.Rand, count int64, fn func(member []byte, score float64)) error {
	if count == math.MinInt64 {
		return ErrOutOfRange
	}
	n := z.Len()
	if n == 0 || count == 0 {
		return nil
	}
	if z.t != nil {
		randomRefs(r, z.t, count, func(ref uint64) { fn(z.t.keyAt(ref), z.t.scoreAt(ref)) })
		return nil
	}
	offs := lpOffsets(z.lp, 2)
	randomIdx(r, n, count, func(i int) {
		m, s, _ := z.lpPair(offs[i])
		fn(m, s)
	})
	return nil
}

// Clone returns an independent deep copy.
func (z *ZSet) Clone() *ZSet {
	c := &ZSet{n: z.n}
	if z.lp != nil {
		c.lp = bytes.Clone(z.lp)
	}
	if z.t != nil {
		c.t = z.t.clone()
		c.tr = &ztree{root: cloneZNode(z.tr.root), t: c.t}
	}
	return c
}

// PrefetchFields reads into the CPU caches what ZSCORE, ZREM or ZRANK of
// members will read first: in the skiplist encoding their index slots and
// entries (a member's score lies in its entry). It changes nothing and
// returns a byte of what it read, as Hash.PrefetchFields.
func (z *ZSet) PrefetchFields(members [][]byte) byte {
	if z.t == nil {
		return 0
	}
	return z.t.prefetch(members, 512)
}

// MemoryUsage estimates the bytes used by the sorted set.
func (z *ZSet) MemoryUsage() int {
	if z.t != nil {
		return 64 + z.t.memoryUsage() + zNodeMem(z.tr.root)
	}
	return 64 + cap(z.lp)
}
