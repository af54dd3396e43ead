package server

import (
	"math"
	"strconv"

	"github.com/damselflydb/damselfly/shard"
	"github.com/damselflydb/damselfly/shard/types"
)

func registerSets(reg registrar) {
	reg("sadd", -3, "write|denyoom|fast|x-field", 1, 1, 1, "set", cmdSAdd)
	reg("srem", -3, "write|fast|x-field", 1, 1, 1, "set", cmdSRem)
	reg("scard", 2, "readonly|fast", 1, 1, 1, "set", collLen(shard.TypeSet))
	reg("sismember", 3, "readonly|fast|x-field", 1, 1, 1, "set", cmdSIsMember)
	reg("smismember", -3, "readonly|fast|x-field", 1, 1, 1, "set", cmdSMIsMember)
	reg("smembers", 2, "readonly", 1, 1, 1, "set", cmdSMembers)
	reg("spop", -2, "write|random|fast", 1, 1, 1, "set", cmdSPop)
	reg("srandmember", -2, "readonly|random|x-rand-count", 1, 1, 1, "set", cmdSRandMember)
	reg("smove", 4, "write|fast", 1, 2, 1, "set", cmdSMove)
	reg("sinter", -2, "readonly", 1, -1, 1, "set", func(c *Client, a [][]byte) { setOpGeneric(c, a[1:], nil, setOpInter) })
	reg("sinterstore", -3, "write|denyoom", 1, -1, 1, "set", func(c *Client, a [][]byte) { setOpGeneric(c, a[2:], a[1], setOpInter) })
	reg("sunion", -2, "readonly", 1, -1, 1, "set", func(c *Client, a [][]byte) { setOpGeneric(c, a[1:], nil, setOpUnion) })
	reg("sunionstore", -3, "write|denyoom", 1, -1, 1, "set", func(c *Client, a [][]byte) { setOpGeneric(c, a[2:], a[1], setOpUnion) })
	reg("sdiff", -2, "readonly", 1, -1, 1, "set", func(c *Client, a [][]byte) { setOpGeneric(c, a[1:], nil, setOpDiff) })
	reg("sdiffstore", -3, "write|denyoom", 1, -1, 1, "set", func(c *Client, a [][]byte) { setOpGeneric(c, a[2:], a[1], setOpDiff) })
	reg("sintercard", -3, "readonly", 0, 0, 0, "set", cmdSInterCard)
	reg("sscan", -3, "readonly", 1, 1, 1, "set", cmdSScan)
}

// readSet locks key's shard and finds its set (nil when missing; bad after
// a WRONGTYPE reply). The caller always unlocks sh.
func (c *Client) readSet(key []byte) (sh *shard.Shard, s *types.Set, bad bool) {
	sh, h := c.lockKey(key)
	e, found, bad := c.getColl(sh, h, key, shard.TypeSet)
	if found {
		s = e.Obj().(*types.Set)
	} else if !bad {
		c.keyMiss(key)
	}
	return sh, s, bad
}

func cmdSAdd(c *Client, args [][]byte) {
	sh, h := c.lockKey(args[1])
	defer c.unlockKey(sh)
	e, found, bad := c.getColl(sh, h, args[1], shard.TypeSet)
	if bad {
		return
	}
	lim := c.lim()
	var s *types.Set
	var w types.W
	if found {
		s = e.Obj().(*types.Set)
		w = sh.DB(c.db).Modify(&e)
	} else {
		s, w = types.NewSetSized(args[2], len(args)-2, lim)
	}
	n := 0
	for _, m := range args[2:] {
		if s.Add(w, m, lim) {
			n++
		}
	}
	if !found {
		c.putColl(sh, h, args[1], shard.TypeSet, s)
	}
	if n > 0 {
		c.notify(kseSet, "sadd", args[1])
	}
	c.int(int64(n))
}

func cmdSRem(c *Client, args [][]byte) {
	sh, h := c.lockKey(args[1])
	defer c.unlockKey(sh)
	e, found, bad := c.getColl(sh, h, args[1], shard.TypeSet)
	if bad {
		return
	}
	if !found {
		c.int(0)
		return
	}
	s := e.Obj().(*types.Set)
	n := 0
	var w types.W
	for _, m := range args[2:] {
		if s.Contains(m) {
			if n == 0 {
				w = sh.DB(c.db).Modify(&e)
			}
			s.Remove(w, m)
			n++
			if s.Len() == 0 {
				break
			}
		}
	}
	if n > 0 {
		c.notify(kseSet, "srem", args[1])
	}
	if s.Len() == 0 {
		sh.DB(c.db).Delete(&e)
		c.notify(kseGeneric, "del", args[1])
	}
	c.int(int64(n))
}

func cmdSIsMember(c *Client, args [][]byte) {
	sh, s, bad := c.readSet(args[1])
	defer c.unlockKey(sh)
	if !bad {
		c.boolInt(s != nil && s.Contains(args[2]))
	}
}

func cmdSMIsMember(c *Client, args [][]byte) {
	sh, s, bad := c.readSet(args[1])
	defer c.unlockKey(sh)
	if bad {
		return
	}
	c.array(len(args) - 2)
	for _, m := range args[2:] {
		c.boolInt(s != nil && s.Contains(m))
	}
}

func cmdSMembers(c *Client, args [][]byte) {
	sh, s, bad := c.readSet(args[1])
	defer c.unlockKey(sh)
	if bad {
		return
	}
	if s == nil {
		c.setHeader(0)
		return
	}
	c.setHeader(s.Len())
	s.Iterate(func(m []byte) bool { c.bulk(m); return true })
}

var argSRem = []byte("SREM")

func cmdSPop(c *Client, args [][]byte) {
	if len(args) > 3 {
		c.errSyntax()
		return
	}
	hasCount := len(args) == 3
	count := int64(1)
	if hasCount {
		var ok bool
		if count, ok = parseCount(c, args[2]); !ok {
			return
		}
	}
	sh, h := c.lockKey(args[1])
	defer c.unlockKey(sh)
	e, found, bad := c.getColl(sh, h, args[1], shard.TypeSet)
	if bad {
		return
	}
	if !found {
		if hasCount {
			c.setHeader(0)
		} else {
			c.null()
		}
		return
	}
	if count == 0 {
		c.setHeader(0)
		return
	}
	s := e.Obj().(*types.Set)
	w := sh.DB(c.db).Modify(&e)
	ms := s.Pop(w, c.rand(), count)
	c.notify(kseSet, "spop", args[1])
	emptied := s.Len() == 0
	if emptied {
		sh.DB(c.db).Delete(&e)
	}
	if hasCount {
		c.setHeader(len(ms))
	}
	for _, m := range ms {
		c.bulk(m)
	}
	if emptied {
		c.notify(kseGeneric, "del", args[1]) // after the reply, as Redis's spop
	}
	// Replicas remove exactly the members popped here.
	c.rewrite(append([][]byte{argSRem, args[1]}, ms...)...)
}

func cmdSRandMember(c *Client, args [][]byte) {
	if len(args) > 3 {
		c.errSyntax()
		return
	}
	if len(args) == 2 {
		sh, s, bad := c.readSet(args[1])
		defer c.unlockKey(sh)
		if bad {
			return
		}
		if s == nil {
			c.null()
			return
		}
		s.RandomMembers(c.rand(), 1, func(m []byte) { c.bulk(m) })
		return
	}
	count, ok := parseInt(args[2])
	if !ok {
		c.errNotInteger()
		return
	}
	if count == math.MinInt64 {
		c.err("ERR value is out of range, value must between -9223372036854775807 and 9223372036854775807")
		return
	}
	if pool := c.sRandMemberLocked(args[1], count); pool != nil {
		c.replyRepeats(pool, -count, false) // shard released: see randrepeat.go
	}
}

// sRandMemberLocked answers SRANDMEMBER key count under the shard lock, or
// returns a copy of the set for replyRepeats when the picks are too many.
func (c *Client) sRandMemberLocked(key []byte, count int64) *randPool {
	sh, s, bad := c.readSet(key)
	defer c.unlockKey(sh)
	if bad {
		return nil
	}
	if s == nil || count == 0 {
		c.array(0)
		return nil
	}
	if copyForRepeats(count, s.Len()) {
		return &randPool{members: s.Members()}
	}
	n := count
	if n < 0 {
		n = -n
	} else {
		n = min(n, int64(s.Len()))
	}
	c.array(int(n))
	s.RandomMembers(c.rand(), count, func(m []byte) { c.bulk(m) })
	return nil
}

func cmdSMove(c *Client, args [][]byte) {
	src, dst, m := args[1], args[2], args[3]
	set := c.lockKeys(args[1:3])
	defer c.unlock(set)
	ssh, _, se, sfound, sbad := c.getCollAt(src, shard.TypeSet)
	if sbad {
		return
	}
	dsh, dh, de, dfound, dwrong := func() (*shard.Shard, uint64, shard.Entry, bool, bool) {
		sh, h := c.srv.store.ShardOf(dst)
		e, found, wrong := c.peekType(dst, shard.TypeSet)
		return sh, h, e, found, wrong
	}()
	if !sfound {
		c.int(0)
		return
	}
	if dwrong {
		c.errWrongType()
		return
	}
	ss := se.Obj().(*types.Set)
	if string(src) == string(dst) {
		c.boolInt(ss.Contains(m))
		return
	}
	if !ss.Contains(m) {
		c.int(0)
		return
	}
	sw := ssh.DB(c.db).Modify(&se)
	ss.Remove(sw, m)
	c.notify(kseSet, "srem", src)
	if ss.Len() == 0 {
		ssh.DB(c.db).Delete(&se)
		c.notify(kseGeneric, "del", src)
	}
	lim := c.lim()
	added := true
	if dfound {
		// The source entry may have moved (a delete on the same shard).
		de, _, _ = c.peekType(dst, shard.TypeSet)
		dw := dsh.DB(c.db).Modify(&de)
		added = de.Obj().(*types.Set).Add(dw, m, lim)
	} else {
		ds, dw := types.NewSetSized(m, 1, lim)
		ds.Add(dw, m, lim)
		c.putColl(dsh, dh, dst, shard.TypeSet, ds)
	}
	if added {
		c.notify(kseSet, "sadd", dst)
	}
	c.int(1)
}

const (
	setOpInter = iota
	setOpUnion
	setOpDiff
)

// lockedSets finds the sets of keys (locked); missing keys are nil. It
// replies WRONGTYPE and returns false when a key holds another type.
func (c *Client) lockedSets(keys [][]byte) ([]*types.Set, bool) {
	sets := make([]*types.Set, len(keys))
	for i, k := range keys {
		e, found, wrong := c.peekType(k, shard.TypeSet)
		if wrong {
			c.errWrongType()
			return nil, false
		}
		if found {
			sets[i] = e.Obj().(*types.Set)
		} else {
			c.keyMiss(k)
		}
	}
	return sets, true
}

// setOpGeneric is SINTER/SUNION/SDIFF and their STORE forms (dst != nil).
func setOpGeneric(c *Client, keys [][]byte, dst []byte, op int) {
	var set *shard.Set
	if dst != nil {
		set = c.lockKeys(keys, [][]byte{dst})
	} else {
		set = c.lockKeys(keys)
	}
	defer c.unlock(set)
	sets, ok := c.lockedSets(keys)
	if !ok {
		return
	}
	lim := c.lim()
	if dst == nil && op == setOpInter {
		var out [][]byte
		types.SetInter(sets, func(m []byte) bool { out = append(out, append([]byte(nil), m...)); return true })
		c.setHeader(len(out))
		for _, m := range out {
			c.bulk(m)
		}
		return
	}
	var res *types.Set
	switch op {
	case setOpInter:
		res = types.SetInterNew(sets, lim)
	case setOpUnion:
		res = types.SetUnion(sets, lim)
	default:
		res = types.SetDiff(sets, lim)
	}
	if dst != nil {
		ev := c.storeColl(dst, shard.TypeSet, res, res.Len(), kseSet, [...]string{setOpInter: "sinterstore", setOpUnion: "sunionstore", setOpDiff: "sdiffstore"}[op])
		// Redis's order: a stored result's event after the reply, a
		// deleted destination's before.
		if res.Len() == 0 {
			ev.raise(c)
		}
		c.int(int64(res.Len()))
		if res.Len() > 0 {
			ev.raise(c)
		}
		return
	}
	c.setHeader(res.Len())
	res.Iterate(func(m []byte) bool { c.bulk(m); return true })
}

func cmdSInterCard(c *Client, args [][]byte) {
	n, ok := parseInt(args[1])
	if !ok || n <= 0 {
		c.err("ERR numkeys should be greater than 0")
		return
	}
	if n > int64(len(args)-2) {
		c.err("ERR Number of keys can't be greater than number of args")
		return
	}
	keys := args[2 : 2+n]
	limit := int64(0)
	for j := 2 + int(n); j < len(args); j++ {
		if eq(args[j], "limit") && j+1 < len(args) {
			j++
			v, ok := parseInt(args[j])
			if !ok || v < 0 {
				c.err("ERR LIMIT can't be negative")
				return
			}
			limit = v
			continue
		}
		c.errSyntax()
		return
	}
	set := c.lockKeys(keys)
	defer c.unlock(set)
	sets, ok := c.lockedSets(keys)
	if !ok {
		return
	}
	c.int(int64(types.SetInterCard(sets, int(min(limit, math.MaxInt32)))))
}

func cmdSScan(c *Client, args [][]byte) {
	cursor, ok := parseCursor(c, args[2])
	if !ok {
		return
	}
	sh, s, bad := c.readSet(args[1])
	defer c.unlockKey(sh)
	if bad {
		return
	}
	if s == nil { // Redis answers a missing key before it reads the options
		c.emptyScan()
		return
	}
	pattern, count, ok := scanOpts(c, args[3:])
	if !ok {
		return
	}
	var out [][]byte
	next := uint64(0)
	if s != nil {
		next = s.Scan(cursor, count, func(m []byte) {
			if pattern == nil || globMatch(pattern, m, false) {
				out = append(out, append([]byte(nil), m...))
			}
		})
	}
	c.array(2)
	c.bulkString(strconv.FormatUint(next, 10))
	c.array(len(out))
	for _, b := range out {
		c.bulk(b)
	}
}

// emptyScan is the reply of SSCAN, HSCAN and ZSCAN on a missing key.
func (c *Client) emptyScan() {
	c.array(2)
	c.bulkString("0")
	c.array(0)
}
