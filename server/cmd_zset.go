package server

import (
	"bytes"
	"math"
	"slices"
	"strconv"

	"github.com/damselflydb/damselfly/shard"
	"github.com/damselflydb/damselfly/shard/types"
)

func registerZSets(reg registrar) {
	reg("zadd", -4, "write|denyoom|fast", 1, 1, 1, "sorted_set", cmdZAdd)
	reg("zincrby", 4, "write|denyoom|fast", 1, 1, 1, "sorted_set", cmdZIncrBy)
	reg("zrem", -3, "write|fast|x-field", 1, 1, 1, "sorted_set", cmdZRem)
	reg("zcard", 2, "readonly|fast", 1, 1, 1, "sorted_set", collLen(shard.TypeZSet))
	reg("zscore", 3, "readonly|fast|x-field", 1, 1, 1, "sorted_set", cmdZScore)
	reg("zmscore", -3, "readonly|fast|x-field", 1, 1, 1, "sorted_set", cmdZMScore)
	reg("zrank", 3, "readonly|fast|x-field", 1, 1, 1, "sorted_set", func(c *Client, a [][]byte) { zrankGeneric(c, a, false) })
	reg("zrevrank", 3, "readonly|fast|x-field", 1, 1, 1, "sorted_set", func(c *Client, a [][]byte) { zrankGeneric(c, a, true) })
	reg("zcount", 4, "readonly|fast", 1, 1, 1, "sorted_set", cmdZCount)
	reg("zlexcount", 4, "readonly|fast", 1, 1, 1, "sorted_set", cmdZLexCount)
	reg("zrange", -4, "readonly", 1, 1, 1, "sorted_set", func(c *Client, a [][]byte) { zrangeGeneric(c, a, 1, nil, zrAuto, false, false) })
	reg("zrangestore", -5, "write|denyoom", 1, 2, 1, "sorted_set", func(c *Client, a [][]byte) { zrangeGeneric(c, a, 2, a[1], zrAuto, false, false) })
	reg("zrevrange", -4, "readonly", 1, 1, 1, "sorted_set", func(c *Client, a [][]byte) { zrangeGeneric(c, a, 1, nil, zrRank, true, true) })
	reg("zrangebyscore", -4, "readonly", 1, 1, 1, "sorted_set", func(c *Client, a [][]byte) { zrangeGeneric(c, a, 1, nil, zrScore, false, true) })
	reg("zrevrangebyscore", -4, "readonly", 1, 1, 1, "sorted_set", func(c *Client, a [][]byte) { zrangeGeneric(c, a, 1, nil, zrScore, true, true) })
	reg("zrangebylex", -4, "readonly", 1, 1, 1, "sorted_set", func(c *Client, a [][]byte) { zrangeGeneric(c, a, 1, nil, zrLex, false, true) })
	reg("zrevrangebylex", -4, "readonly", 1, 1, 1, "sorted_set", func(c *Client, a [][]byte) { zrangeGeneric(c, a, 1, nil, zrLex, true, true) })
	reg("zremrangebyrank", 4, "write", 1, 1, 1, "sorted_set", func(c *Client, a [][]byte) { zremrangeGeneric(c, a, zrRank) })
	reg("zremrangebyscore", 4, "write", 1, 1, 1, "sorted_set", func(c *Client, a [][]byte) { zremrangeGeneric(c, a, zrScore) })
	reg("zremrangebylex", 4, "write", 1, 1, 1, "sorted_set", func(c *Client, a [][]byte) { zremrangeGeneric(c, a, zrLex) })
	reg("zpopmin", -2, "write|fast", 1, 1, 1, "sorted_set", func(c *Client, a [][]byte) { zpopGeneric(c, a, true) })
	reg("zpopmax", -2, "write|fast", 1, 1, 1, "sorted_set", func(c *Client, a [][]byte) { zpopGeneric(c, a, false) })
	reg("zmpop", -4, "write", 0, 0, 0, "sorted_set", cmdZMPop)
	reg("bzpopmin", -3, "write|blocking|fast", 1, -2, 1, "sorted_set", func(c *Client, a [][]byte) { bzpopGeneric(c, a, true) })
	reg("bzpopmax", -3, "write|blocking|fast", 1, -2, 1, "sorted_set", func(c *Client, a [][]byte) { bzpopGeneric(c, a, false) })
	reg("bzmpop", -5, "write|blocking", 0, 0, 0, "sorted_set", cmdBZMPop)
	reg("zrandmember", -2, "readonly|random|x-rand-count", 1, 1, 1, "sorted_set", cmdZRandMember)
	reg("zunion", -3, "readonly", 0, 0, 0, "sorted_set", func(c *Client, a [][]byte) { zsetOpGeneric(c, a, 1, nil, zopUnion, false) })
	reg("zinter", -3, "readonly", 0, 0, 0, "sorted_set", func(c *Client, a [][]byte) { zsetOpGeneric(c, a, 1, nil, zopInter, false) })
	reg("zdiff", -3, "readonly", 0, 0, 0, "sorted_set", func(c *Client, a [][]byte) { zsetOpGeneric(c, a, 1, nil, zopDiff, false) })
	reg("zunionstore", -4, "write|denyoom", 1, 1, 1, "sorted_set", func(c *Client, a [][]byte) { zsetOpGeneric(c, a, 2, a[1], zopUnion, false) })
	reg("zinterstore", -4, "write|denyoom", 1, 1, 1, "sorted_set", func(c *Client, a [][]byte) { zsetOpGeneric(c, a, 2, a[1], zopInter, false) })
	reg("zdiffstore", -4, "write|denyoom", 1, 1, 1, "sorted_set", func(c *Client, a [][]byte) { zsetOpGeneric(c, a, 2, a[1], zopDiff, false) })
	reg("zintercard", -3, "readonly", 0, 0, 0, "sorted_set", func(c *Client, a [][]byte) { zsetOpGeneric(c, a, 1, nil, zopInter, true) })
	reg("zscan", -3, "readonly", 1, 1, 1, "sorted_set", cmdZScan)
}

// readZSet locks key's shard and finds its sorted set (nil when missing;
// bad after a WRONGTYPE reply). The caller always unlocks sh.
func (c *Client) readZSet(key []byte) (sh *shard.Shard, z *types.ZSet, bad bool) {
	sh, h := c.lockKey(key)
	e, found, bad := c.getColl(sh, h, key, shard.TypeZSet)
	if found {
		z = e.Obj().(*types.ZSet)
	} else if !bad {
		c.keyMiss(key)
	}
	return sh, z, bad
}

// parseScore parses a score as Redis's getDoubleFromObject does.
func parseScore(b []byte) (float64, bool) { return types.ParseDouble(b) }

func cmdZAdd(c *Client, args [][]byte) {
	var flags types.ZAddFlags
	ch := false
	i := 2
	for ; i < len(args); i++ {
		a := args[i]
		switch {
		case eq(a, "nx"):
			flags |= types.ZAddNX
		case eq(a, "xx"):
			flags |= types.ZAddXX
		case eq(a, "gt"):
			flags |= types.ZAddGT
		case eq(a, "lt"):
			flags |= types.ZAddLT
		case eq(a, "ch"):
			ch = true
		case eq(a, "incr"):
			flags |= types.ZAddIncr
		default:
			goto done
		}
	}
done:
	zaddGeneric(c, args[1], args[i:], flags, ch)
}

// zaddGeneric is ZADD (and ZINCRBY, as ZADD INCR) with parsed options;
// pairs are the score-member arguments.
func zaddGeneric(c *Client, key []byte, pairs [][]byte, flags types.ZAddFlags, ch bool) {
	incr := flags&types.ZAddIncr != 0
	scores, ok := parseZAddScores(c, pairs, flags)
	if !ok {
		return
	}
	sh, h := c.lockKey(key)
	defer c.unlockKey(sh)
	e, found, bad := c.getColl(sh, h, key, shard.TypeZSet)
	if bad {
		return
	}
	var z *types.ZSet
	var w types.W
	if found {
		z = e.Obj().(*types.ZSet)
	} else {
		if flags&types.ZAddXX != 0 {
			if incr {
				c.null()
			} else {
				c.int(0)
			}
			return
		}
		// Redis 7.0 sizes a new sorted set from its first member only
		// and converts as it grows, so -0 scores pass through the
		// listpack (and read back 0) even in a ZADD of 200 members.
		z, w = types.NewZSetSized(1, len(pairs[1]), c.lim())
	}
	t, err := c.zaddMembers(sh, &e, z, w, !found, pairs, scores, flags)
	if !found && z.Len() > 0 {
		c.putColl(sh, h, key, shard.TypeZSet, z)
	}
	if err != nil {
		c.err("ERR " + err.Error())
		return
	}
	switch {
	case incr && t.processed > 0:
		c.double(t.score)
	case incr:
		c.null()
	case ch:
		c.int(int64(t.added + t.updated))
	default:
		c.int(int64(t.added))
	}
	if t.added+t.updated > 0 { // after the reply, as Redis's zaddGenericCommand
		ev := "zadd"
		if incr {
			ev = "zincr"
		}
		c.notify(kseZSet, ev, key)
	}
}

// parseZAddScores checks ZADD's flags and pairs and parses the scores.
func parseZAddScores(c *Client, pairs [][]byte, flags types.ZAddFlags) ([]float64, bool) {
	if len(pairs) == 0 || len(pairs)%2 != 0 {
		c.errSyntax()
		return nil, false
	}
	nx, xx, gt, lt := flags&types.ZAddNX != 0, flags&types.ZAddXX != 0, flags&types.ZAddGT != 0, flags&types.ZAddLT != 0
	if nx && xx {
		c.err("ERR " + types.ErrIncompatibleFlags.Error())
		return nil, false
	}
	if (gt && nx) || (lt && nx) || (gt && lt) {
		c.err("ERR " + types.ErrGTLTNX.Error())
		return nil, false
	}
	if flags&types.ZAddIncr != 0 && len(pairs) > 2 {
		c.err("ERR INCR option supports a single increment-element pair")
		return nil, false
	}
	scores := make([]float64, len(pairs)/2)
	for j := range scores {
		f, ok := parseScore(pairs[2*j])
		if !ok {
			c.errNotFloat()
			return nil, false
		}
		scores[j] = f
	}
	return scores, true
}

// zaddTally counts what a ZADD did; score is the last processed member's
// new score (ZADD INCR's reply).
type zaddTally struct {
	added, updated, processed int
	score                     float64
}

// zaddMembers adds the members of pairs with their scores to z, the value
// of e in the locked shard sh. modified: w already allows changes (a new
// set); otherwise Modify is called before the first change.
func (c *Client) zaddMembers(sh *shard.Shard, e *shard.Entry, z *types.ZSet, w types.W, modified bool,
	pairs [][]byte, scores []float64, flags types.ZAddFlags) (t zaddTally, err error) {
	nx, xx, gt, lt := flags&types.ZAddNX != 0, flags&types.ZAddXX != 0, flags&types.ZAddGT != 0, flags&types.ZAddLT != 0
	incr := flags&types.ZAddIncr != 0
	lim := c.lim()
	for j, sc := range scores {
		m := pairs[2*j+1]
		cur, existed := z.Score(m)
		if !modified && zaddChanges(existed, cur, sc, nx, xx, gt, lt, incr) {
			// Modify before the first change (a snapshot keeps the old set).
			w = sh.DB(c.db).Modify(e)
			modified = true
		}
		var newScore float64
		var res types.ZAddResult
		if modified {
			newScore, res, err = z.Add(w, m, sc, flags, lim)
		} else { // nothing changes: answer without the right to change
			newScore, res, err = z.Plan(m, sc, flags)
		}
		if err != nil {
			return t, err
		}
		switch {
		case res == types.ZAdded:
			t.added++
		case res == types.ZUpdated:
			t.updated++
		}
		// Redis counts as processed everything but NX/XX/GT/LT refusals.
		if res != types.ZNop || (existed && !nx && !gt && !lt) {
			t.processed++
			t.score = newScore
		}
	}
	return t, nil
}

// zaddChanges predicts whether ZADD changes member whose current score is
// cur (when existed) to score (an increment with incr).
func zaddChanges(existed bool, cur, score float64, nx, xx, gt, lt, incr bool) bool {
	if !existed {
		return !xx
	}
	if nx {
		return false
	}
	next := score
	if incr {
		next = cur + score
	}
	if math.IsNaN(next) || next == cur {
		return false
	}
	return !(gt && next < cur) && !(lt && next > cur)
}

func cmdZIncrBy(c *Client, args [][]byte) {
	zaddGeneric(c, args[1], args[2:], types.ZAddIncr, false)
}

func cmdZRem(c *Client, args [][]byte) {
	sh, h := c.lockKey(args[1])
	defer c.unlockKey(sh)
	e, found, bad := c.getColl(sh, h, args[1], shard.TypeZSet)
	if bad {
		return
	}
	if !found {
		c.int(0)
		return
	}
	z := e.Obj().(*types.ZSet)
	n := 0
	var w types.W
	for _, m := range args[2:] {
		if _, ok := z.Score(m); ok {
			if n == 0 {
				w = sh.DB(c.db).Modify(&e)
			}
			z.Remove(w, m)
			n++
		}
	}
	if n > 0 {
		c.notify(kseZSet, "zrem", args[1])
	}
	if z.Len() == 0 {
		sh.DB(c.db).Delete(&e)
		c.notify(kseGeneric, "del", args[1])
	}
	c.int(int64(n))
}

func cmdZScore(c *Client, args [][]byte) {
	sh, z, bad := c.readZSet(args[1])
	defer c.unlockKey(sh)
	if bad {
		return
	}
	if z != nil {
		if s, ok := z.Score(args[2]); ok {
			c.double(s)
			return
		}
	}
	c.null()
}

func cmdZMScore(c *Client, args [][]byte) {
	sh, z, bad := c.readZSet(args[1])
	defer c.unlockKey(sh)
	if bad {
		return
	}
	c.array(len(args) - 2)
	for _, m := range args[2:] {
		if z != nil {
			if s, ok := z.Score(m); ok {
				c.double(s)
				continue
			}
		}
		c.null()
	}
}

func zrankGeneric(c *Client, args [][]byte, reverse bool) {
	sh, z, bad := c.readZSet(args[1])
	defer c.unlockKey(sh)
	if bad {
		return
	}
	if z != nil {
		if r, _, ok := z.Rank(args[2], reverse); ok {
			c.int(int64(r))
			return
		}
	}
	c.null()
}

func cmdZCount(c *Client, args [][]byte) {
	min, err1 := types.ParseScoreBound(args[2])
	max, err2 := types.ParseScoreBound(args[3])
	if err1 != nil || err2 != nil {
		c.err("ERR min or max is not a float")
		return
	}
	sh, z, bad := c.readZSet(args[1])
	defer c.unlockKey(sh)
	switch {
	case bad:
	case z == nil:
		c.int(0)
	default:
		c.int(int64(z.CountByScore(min, max)))
	}
}

func cmdZLexCount(c *Client, args [][]byte) {
	min, err1 := types.ParseLexBound(args[2])
	max, err2 := types.ParseLexBound(args[3])
	if err1 != nil || err2 != nil {
		c.err("ERR min or max not valid string range item")
		return
	}
	sh, z, bad := c.readZSet(args[1])
	defer c.unlockKey(sh)
	switch {
	case bad:
	case z == nil:
		c.int(0)
	default:
		c.int(int64(z.CountByLex(min, max)))
	}
}

// Range types of ZRANGE and friends.
const (
	zrAuto = iota
	zrRank
	zrScore
	zrLex
)

// zrange is a parsed range request.
type zrange struct {
	kind       int
	reverse    bool
	start, end int64
	smin, smax types.ScoreBound
	lmin, lmax types.LexBound
	offset     int64
	limit      int64 // -1: no limit
}

// collect returns the members of z in the range (copies).
func (r *zrange) collect(z *types.ZSet) []types.ZMember {
	var out []types.ZMember
	fn := func(m []byte, s float64) bool {
		out = append(out, types.ZMember{Member: append([]byte(nil), m...), Score: s})
		return true
	}
	switch r.kind {
	case zrRank:
		z.RangeByRank(r.start, r.end, r.reverse, fn)
	case zrScore:
		if r.offset >= 0 {
			z.RangeByScore(r.smin, r.smax, r.reverse, r.offset, r.limit, fn)
		}
	case zrLex:
		if r.offset >= 0 {
			z.RangeByLex(r.lmin, r.lmax, r.reverse, r.offset, r.limit, fn)
		}
	}
	return out
}

// zrangeGeneric implements ZRANGE, ZRANGESTORE (dst != nil) and the
// legacy ZREVRANGE/ZRANGEBYSCORE/ZRANGEBYLEX forms (fixed kind/direction).
// keyIdx is the index of the source key.
func zrangeGeneric(c *Client, args [][]byte, keyIdx int, dst []byte, kind int, reverse, fixedDir bool) {
	r, withScores, ok := parseZRangeOptions(c, args, keyIdx, dst != nil, kind, reverse, fixedDir)
	if !ok || !r.parseBounds(c, args[keyIdx+1], args[keyIdx+2]) {
		return
	}
	key := args[keyIdx]
	if dst != nil {
		zrangeStore(c, key, dst, &r)
		return
	}
	sh, z, bad := c.readZSet(key)
	defer c.unlockKey(sh)
	if bad {
		return
	}
	if z == nil {
		c.array(0)
		return
	}
	c.replyZMembers(r.collect(z), withScores)
}

// parseZRangeOptions parses the options after min and max (store: the
// ZRANGESTORE form, without WITHSCORES) and checks their combination.
func parseZRangeOptions(c *Client, args [][]byte, keyIdx int, store bool, kind int, reverse, fixedDir bool) (r zrange, withScores, ok bool) {
	r = zrange{kind: kind, reverse: reverse, limit: -1}
	dirSet := fixedDir
	for j := keyIdx + 3; j < len(args); j++ {
		left := len(args) - j - 1
		a := args[j]
		switch {
		case !store && eq(a, "withscores"):
			withScores = true
		case eq(a, "limit") && left >= 2:
			off, ok1 := parseInt(args[j+1])
			lim, ok2 := parseInt(args[j+2])
			if !ok1 || !ok2 {
				c.errNotInteger()
				return r, false, false
			}
			r.offset, r.limit = off, lim
			j += 2
		case !dirSet && eq(a, "rev"):
			r.reverse, dirSet = true, true
		case r.kind == zrAuto && eq(a, "bylex"):
			r.kind = zrLex
		case r.kind == zrAuto && eq(a, "byscore"):
			r.kind = zrScore
		default:
			c.errSyntax()
			return r, false, false
		}
	}
	if r.kind == zrAuto {
		r.kind = zrRank
	}
	if r.limit != -1 && r.kind == zrRank {
		c.err("ERR syntax error, LIMIT is only supported in combination with either BYSCORE or BYLEX")
		return r, false, false
	}
	if withScores && r.kind == zrLex {
		c.err("ERR syntax error, WITHSCORES not supported in combination with BYLEX")
		return r, false, false
	}
	return r, withScores, true
}

// parseBounds parses the range's min and max as ranks, scores or lex
// bounds (swapped for a reversed score or lex range).
func (r *zrange) parseBounds(c *Client, minArg, maxArg []byte) bool {
	if r.reverse && r.kind != zrRank {
		minArg, maxArg = maxArg, minArg
	}
	var err1, err2 error
	switch r.kind {
	case zrRank:
		var ok1, ok2 bool
		r.start, ok1 = parseInt(minArg)
		r.end, ok2 = parseInt(maxArg)
		if !ok1 || !ok2 {
			c.errNotInteger()
			return false
		}
	case zrScore:
		r.smin, err1 = types.ParseScoreBound(minArg)
		r.smax, err2 = types.ParseScoreBound(maxArg)
		if err1 != nil || err2 != nil {
			c.err("ERR min or max is not a float")
			return false
		}
	case zrLex:
		r.lmin, err1 = types.ParseLexBound(minArg)
		r.lmax, err2 = types.ParseLexBound(maxArg)
		if err1 != nil || err2 != nil {
			c.err("ERR min or max not valid string range item")
			return false
		}
	}
	return true
}

// zrangeStore is ZRANGESTORE: the range of key stored at dst.
func zrangeStore(c *Client, key, dst []byte, r *zrange) {
	set := c.lockKeys([][]byte{key, dst})
	defer c.unlock(set)
	e, found, wrong := c.peekType(key, shard.TypeZSet)
	if wrong {
		c.errWrongType()
		return
	}
	if !found {
		c.keyMiss(key)
	}
	var res []types.ZMember
	if found {
		res = r.collect(e.Obj().(*types.ZSet))
	}
	ev := c.storeZMembers(dst, res, "zrangestore")
	c.int(int64(len(res)))
	ev.raise(c) // after the reply, as Redis
}

// replyZMembers replies members, with their scores as pairs (nested arrays
// in RESP3, flat in RESP2) when withScores is set.
func (c *Client) replyZMembers(ms []types.ZMember, withScores bool) {
	if !withScores {
		c.array(len(ms))
		for _, m := range ms {
			c.bulk(m.Member)
		}
		return
	}
	if c.proto == 3 {
		c.array(len(ms))
	} else {
		c.array(2 * len(ms))
	}
	for _, m := range ms {
		if c.proto == 3 {
			c.array(2)
		}
		c.bulk(m.Member)
		c.double(m.Score)
	}
}

// storeZMembers replaces dst (locked) with a sorted set of ms; an empty
// result deletes dst.
func (c *Client) storeZMembers(dst []byte, ms []types.ZMember, event string) storeEvent {
	maxLen := 0
	for _, m := range ms {
		maxLen = max(maxLen, len(m.Member))
	}
	lim := c.lim()
	z, w := types.NewZSetSized(len(ms), maxLen, lim)
	for _, m := range ms {
		z.Add(w, m.Member, m.Score, 0, lim)
	}
	return c.storeColl(dst, shard.TypeZSet, z, z.Len(), kseZSet, event)
}

func zremrangeGeneric(c *Client, args [][]byte, kind int) {
	var start, stop int64
	var smin, smax types.ScoreBound
	var lmin, lmax types.LexBound
	switch kind {
	case zrRank:
		var ok1, ok2 bool
		start, ok1 = parseInt(args[2])
		stop, ok2 = parseInt(args[3])
		if !ok1 || !ok2 {
			c.errNotInteger()
			return
		}
	case zrScore:
		var err1, err2 error
		smin, err1 = types.ParseScoreBound(args[2])
		smax, err2 = types.ParseScoreBound(args[3])
		if err1 != nil || err2 != nil {
			c.err("ERR min or max is not a float")
			return
		}
	case zrLex:
		var err1, err2 error
		lmin, err1 = types.ParseLexBound(args[2])
		lmax, err2 = types.ParseLexBound(args[3])
		if err1 != nil || err2 != nil {
			c.err("ERR min or max not valid string range item")
			return
		}
	}
	sh, h := c.lockKey(args[1])
	defer c.unlockKey(sh)
	e, found, bad := c.getColl(sh, h, args[1], shard.TypeZSet)
	if bad {
		return
	}
	if !found {
		c.int(0)
		return
	}
	z := e.Obj().(*types.ZSet)
	// Count first so that a no-op is not a write.
	var n int
	switch kind {
	case zrRank:
		z.RangeByRank(start, stop, false, func([]byte, float64) bool { n++; return true })
	case zrScore:
		n = z.CountByScore(smin, smax)
	case zrLex:
		n = z.CountByLex(lmin, lmax)
	}
	if n == 0 {
		c.int(0)
		return
	}
	w := sh.DB(c.db).Modify(&e)
	switch kind {
	case zrRank:
		n = z.RemoveRangeByRank(w, start, stop)
	case zrScore:
		n = z.RemoveRangeByScore(w, smin, smax)
	case zrLex:
		n = z.RemoveRangeByLex(w, lmin, lmax)
	}
	if n > 0 {
		c.notify(kseZSet, [...]string{zrRank: "zremrangebyrank", zrScore: "zremrangebyscore", zrLex: "zremrangebylex"}[kind], args[1])
	}
	if z.Len() == 0 {
		sh.DB(c.db).Delete(&e)
		c.notify(kseGeneric, "del", args[1])
	}
	c.int(int64(n))
}

// zpopFrom pops up to n members of the sorted set in e (locked), deleting
// the key when it empties (emptied: the caller raises "del" after its
// reply, as Redis, where the pop's own event comes before); a key left with
// members wakes the next blocked client.
func (c *Client) zpopFrom(e *shard.Entry, sh *shard.Shard, key []byte, minFirst bool, n int64) (out []types.ZMember, emptied bool) {
	z := e.Obj().(*types.ZSet)
	w := sh.DB(c.db).Modify(e)
	if minFirst {
		out = z.PopMin(w, n)
	} else {
		out = z.PopMax(w, n)
	}
	if len(out) > 0 {
		ev := "zpopmax"
		if minFirst {
			ev = "zpopmin"
		}
		c.notify(kseZSet, ev, key)
	}
	if z.Len() == 0 {
		sh.DB(c.db).Delete(e)
		return out, true
	}
	c.srv.signalReady(c.db, key)
	return out, false
}

func zpopGeneric(c *Client, args [][]byte, minFirst bool) {
	if len(args) > 3 {
		c.errSyntax()
		return
	}
	count := int64(1)
	hasCount := len(args) == 3
	if hasCount {
		var ok bool
		if count, ok = parseCount(c, args[2]); !ok {
			return
		}
	}
	sh, h := c.lockKey(args[1])
	defer c.unlockKey(sh)
	e, found, bad := c.getColl(sh, h, args[1], shard.TypeZSet)
	if bad {
		return
	}
	if !found || count == 0 {
		c.array(0)
		return
	}
	ms, emptied := c.zpopFrom(&e, sh, args[1], minFirst, count)
	if hasCount && c.proto == 3 {
		c.replyZMembers(ms, true)
	} else {
		c.array(2 * len(ms))
		for _, m := range ms {
			c.bulk(m.Member)
			c.double(m.Score)
		}
	}
	if emptied {
		c.notify(kseGeneric, "del", args[1])
	}
}

var (
	argZPopMin = []byte("ZPOPMIN")
	argZPopMax = []byte("ZPOPMAX")
)

func cmdZMPop(c *Client, args [][]byte) {
	m, ok := parseMPop(c, args, 1, "min", "max")
	if !ok {
		return
	}
	set := c.lockKeys(m.keys)
	defer c.unlock(set)
	if !c.zmpopLocked(m, true) {
		c.nullArray()
	}
}

// zmpopLocked pops from the first non-empty sorted set of m.keys (locked)
// and replies [key, [[member, score]...]]; false (no reply) when all are
// empty. Replicated as ZPOPMIN/ZPOPMAX key count.
func (c *Client) zmpopLocked(m mpopArgs, first bool) bool {
	for _, k := range m.keys {
		sh, _ := c.srv.store.ShardOf(k)
		e, found, wrong := c.peekType(k, shard.TypeZSet)
		if wrong {
			if first {
				c.errWrongType()
				return true
			}
			continue
		}
		if !found {
			continue
		}
		ms, emptied := c.zpopFrom(&e, sh, k, m.left, m.count)
		c.array(2)
		c.bulk(k)
		c.array(len(ms))
		for _, zm := range ms {
			c.array(2)
			c.bulk(zm.Member)
			c.double(zm.Score)
		}
		if emptied {
			c.notify(kseGeneric, "del", k)
		}
		cmd := argZPopMax
		if m.left {
			cmd = argZPopMin
		}
		c.rewrite(cmd, k, bytesArg(int64(len(ms))))
		return true
	}
	return false
}

func bzpopGeneric(c *Client, args [][]byte, minFirst bool) {
	timeout, ok := parseTimeout(c, args[len(args)-1])
	if !ok {
		return
	}
	keys := args[1 : len(args)-1]
	c.blockOn(keys, timeout, func(first bool) bool {
		k, sh, e, found, done := c.firstNonEmpty(keys, shard.TypeZSet, first)
		if done || !found {
			return done
		}
		ms, emptied := c.zpopFrom(&e, sh, k, minFirst, 1)
		c.array(3)
		c.bulk(k)
		c.bulk(ms[0].Member)
		c.double(ms[0].Score)
		if emptied {
			c.notify(kseGeneric, "del", k)
		}
		cmd := argZPopMax
		if minFirst {
			cmd = argZPopMin
		}
		c.rewrite(cmd, k)
		return true
	}, c.nullArray)
}

func cmdBZMPop(c *Client, args [][]byte) {
	timeout, ok := parseTimeout(c, args[1])
	if !ok {
		return
	}
	m, ok := parseMPop(c, args, 2, "min", "max")
	if !ok {
		return
	}
	c.blockOn(m.keys, timeout, func(first bool) bool { return c.zmpopLocked(m, first) }, c.nullArray)
}

func cmdZRandMember(c *Client, args [][]byte) {
	if len(args) == 2 {
		sh, z, bad := c.readZSet(args[1])
		defer c.unlockKey(sh)
		if bad {
			return
		}
		if z == nil {
			c.null()
			return
		}
		z.RandomMembers(c.rand(), 1, func(m []byte, _ float64) { c.bulk(m) })
		return
	}
	count, withScores, ok := parseRandCount(c, args, "withscores")
	if !ok {
		return
	}
	if pool := c.zRandMemberLocked(args[1], count, withScores); pool != nil {
		c.replyRepeats(pool, -count, withScores) // shard released: see randrepeat.go
	}
}

// zRandMemberLocked answers ZRANDMEMBER key count under the shard lock, or
// returns a copy of the sorted set for replyRepeats when the picks are too
// many.
func (c *Client) zRandMemberLocked(key []byte, count int64, withScores bool) *randPool {
	sh, z, bad := c.readZSet(key)
	defer c.unlockKey(sh)
	if bad {
		return nil
	}
	if z == nil || count == 0 {
		c.array(0)
		return nil
	}
	if copyForRepeats(count, z.Len()) {
		p := &randPool{}
		z.Iterate(func(m []byte, s float64) bool {
			p.members = append(p.members, bytes.Clone(m))
			p.scores = append(p.scores, s)
			return true
		})
		return p
	}
	c.randReplyHeader(count, z.Len(), withScores)
	z.RandomMembers(c.rand(), count, func(m []byte, s float64) {
		if withScores && c.proto == 3 {
			c.array(2)
		}
		c.bulk(m)
		if withScores {
			c.double(s)
		}
	})
	return nil
}

// Operations of ZUNION, ZINTER and ZDIFF.
const (
	zopUnion = iota
	zopInter
	zopDiff
)

// zsource is one input of ZUNION/ZINTER/ZDIFF: a sorted set, a set (every
// member scores 1), or nothing (a missing key).
type zsource struct {
	z      *types.ZSet
	s      *types.Set
	weight float64
}

func (src *zsource) len() int {
	switch {
	case src.z != nil:
		return src.z.Len()
	case src.s != nil:
		return src.s.Len()
	}
	return 0
}

func (src *zsource) iterate(fn func(m []byte, score float64) bool) {
	switch {
	case src.z != nil:
		src.z.Iterate(fn)
	case src.s != nil:
		src.s.Iterate(func(m []byte) bool { return fn(m, 1) })
	}
}

func (src *zsource) score(m []byte) (float64, bool) {
	switch {
	case src.z != nil:
		return src.z.Score(m)
	case src.s != nil:
		return 1, src.s.Contains(m)
	}
	return 0, false
}

const (
	aggSum = iota
	aggMin
	aggMax
)

func aggregate(agg int, acc, v float64) float64 {
	switch agg {
	// Redis keeps the accumulator unless v is strictly smaller (larger):
	// MIN of 0 and -0 is whichever came first, where math.Min says -0.
	case aggMin:
		if v < acc {
			return v
		}
		return acc
	case aggMax:
		if v > acc {
			return v
		}
		return acc
	}
	r := acc + v
	if math.IsNaN(r) {
		return 0
	}
	return r
}

// zsetOpGeneric is ZUNION/ZINTER/ZDIFF[STORE] and ZINTERCARD; numIdx is the
// index of numkeys.
func zsetOpGeneric(c *Client, args [][]byte, numIdx int, dst []byte, op int, cardOnly bool) {
	keys, ok := zsetOpKeys(c, args, numIdx)
	if !ok {
		return
	}
	srcs := make([]zsource, len(keys))
	for i := range srcs {
		srcs[i].weight = 1
	}
	// Redis checks the keys' types before it reads the options.
	var set *shard.Set
	if dst != nil {
		set = c.lockKeys(keys, [][]byte{dst})
	} else {
		set = c.lockKeys(keys)
	}
	defer c.unlock(set)
	if !loadZSources(c, keys, srcs) {
		return
	}
	opt, ok := parseZsetOpOptions(c, args, numIdx+1+len(keys), srcs, op, dst != nil, cardOnly)
	if !ok {
		return
	}
	var res []types.ZMember
	switch op {
	case zopUnion:
		res = zsetUnion(srcs, opt.agg)
	case zopInter:
		if cardOnly {
			c.int(zsetInterCard(srcs, opt.limit))
			return
		}
		res = zsetInter(srcs, opt.agg)
	case zopDiff:
		res = zsetDiff(srcs)
	}
	sortZMembers(res)
	if dst != nil {
		ev := c.storeZMembers(dst, res, [...]string{zopUnion: "zunionstore", zopInter: "zinterstore", zopDiff: "zdiffstore"}[op])
		c.int(int64(len(res)))
		ev.raise(c) // after the reply, as Redis
		return
	}
	c.replyZMembers(res, opt.withScores)
}

// zsetOpKeys parses numkeys at args[numIdx] and returns the keys after it.
func zsetOpKeys(c *Client, args [][]byte, numIdx int) ([][]byte, bool) {
	n, ok := parseInt(args[numIdx])
	if !ok {
		c.errNotInteger()
		return nil, false
	}
	if n < 1 {
		c.err("ERR at least 1 input key is needed for '" + lower(args[0]) + "' command")
		return nil, false
	}
	if n > int64(len(args)-numIdx-1) {
		c.errSyntax()
		return nil, false
	}
	return args[numIdx+1 : numIdx+1+int(n)], true
}

// loadZSources fills srcs with the keys' sorted sets and sets (missing
// keys stay empty); false after answering WRONGTYPE. The keys are locked.
func loadZSources(c *Client, keys [][]byte, srcs []zsource) bool {
	for i, k := range keys {
		sh, h := c.srv.store.ShardOf(k)
		e, found := sh.Lookup(c.db, h, k, now())
		if !found {
			c.keyMiss(k)
			continue
		}
		switch e.Type() {
		case shard.TypeZSet:
			srcs[i].z = e.Obj().(*types.ZSet)
		case shard.TypeSet:
			srcs[i].s = e.Obj().(*types.Set)
		default:
			c.errWrongType()
			return false
		}
	}
	return true
}

// zsetOpOptions are the options after the keys of a set operation.
type zsetOpOptions struct {
	agg        int
	withScores bool
	limit      int64 // ZINTERCARD's LIMIT; 0: none
}

// parseZsetOpOptions reads the options from args[j:], setting the
// sources' WEIGHTS; false after answering the error. Which options exist
// depends on the command: WEIGHTS and AGGREGATE not for ZDIFF, WITHSCORES
// not for the STORE forms, LIMIT only for ZINTERCARD.
func parseZsetOpOptions(c *Client, args [][]byte, j int, srcs []zsource, op int, store, cardOnly bool) (zsetOpOptions, bool) {
	opt := zsetOpOptions{agg: aggSum}
	n := len(srcs)
	for j < len(args) {
		rem := len(args) - j
		a := args[j]
		switch {
		case op != zopDiff && !cardOnly && rem >= n && eq(a, "weights"):
			// Redis requires only numkeys arguments in total, WEIGHTS included.
			j++
			if len(args)-j < n {
				c.errSyntax()
				return opt, false
			}
			for i := range srcs {
				w, ok := parseScore(args[j])
				if !ok {
					c.err("ERR weight value is not a float")
					return opt, false
				}
				srcs[i].weight = w
				j++
			}
		case op != zopDiff && !cardOnly && rem >= 2 && eq(a, "aggregate"):
			switch {
			case eq(args[j+1], "sum"):
				opt.agg = aggSum
			case eq(args[j+1], "min"):
				opt.agg = aggMin
			case eq(args[j+1], "max"):
				opt.agg = aggMax
			default:
				c.errSyntax()
				return opt, false
			}
			j += 2
		case !store && !cardOnly && eq(a, "withscores"):
			opt.withScores = true
			j++
		case cardOnly && rem >= 2 && eq(a, "limit"):
			v, ok := parseInt(args[j+1])
			if !ok || v < 0 {
				c.err("ERR LIMIT can't be negative")
				return opt, false
			}
			opt.limit = v
			j += 2
		default:
			c.errSyntax()
			return opt, false
		}
	}
	return opt, true
}

// weighted is a member's score times the source's weight (NaN, from
// inf times 0, counts as 0 as in Redis).
func (src *zsource) weighted(s float64) float64 {
	r := src.weight * s
	if math.IsNaN(r) {
		return 0
	}
	return r
}

// zsetUnion is ZUNION: every member of every source, scores aggregated,
// in order of first appearance.
func zsetUnion(srcs []zsource, agg int) []types.ZMember {
	var res []types.ZMember
	idx := map[string]int{}
	for i := range srcs {
		src := &srcs[i]
		src.iterate(func(m []byte, s float64) bool {
			v := src.weighted(s)
			if k, ok := idx[string(m)]; ok {
				res[k].Score = aggregate(agg, res[k].Score, v)
			} else {
				idx[string(m)] = len(res)
				res = append(res, types.ZMember{Member: append([]byte(nil), m...), Score: v})
			}
			return true
		})
	}
	return res
}

// bySize returns the indexes of srcs, smallest source first (stable),
// the order ZINTER walks them in.
func bySize(srcs []zsource) []int {
	order := make([]int, len(srcs))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int { return srcs[a].len() - srcs[b].len() })
	return order
}

// eachInter calls fn with each member of the smallest source that is in
// every source, and its aggregated score, until fn returns false.
func eachInter(srcs []zsource, agg int, fn func(m []byte, score float64) bool) {
	order := bySize(srcs)
	first := &srcs[order[0]]
	first.iterate(func(m []byte, s float64) bool {
		acc := first.weighted(s)
		for _, i := range order[1:] {
			o := &srcs[i]
			os, ok := o.score(m)
			if !ok {
				return true
			}
			acc = aggregate(agg, acc, o.weighted(os))
		}
		return fn(m, acc)
	})
}

// zsetInter is ZINTER: the members in every source, scores aggregated.
func zsetInter(srcs []zsource, agg int) []types.ZMember {
	var res []types.ZMember
	eachInter(srcs, agg, func(m []byte, score float64) bool {
		res = append(res, types.ZMember{Member: append([]byte(nil), m...), Score: score})
		return true
	})
	return res
}

// zsetInterCard is ZINTERCARD: how many members are in every source,
// counting stopped at limit (0: no limit).
func zsetInterCard(srcs []zsource, limit int64) int64 {
	count := int64(0)
	eachInter(srcs, aggSum, func([]byte, float64) bool {
		count++
		return limit == 0 || count < limit
	})
	return count
}

// zsetDiff is ZDIFF: the members of the first source in no other.
func zsetDiff(srcs []zsource) []types.ZMember {
	var res []types.ZMember
	srcs[0].iterate(func(m []byte, s float64) bool {
		for i := 1; i < len(srcs); i++ {
			if _, ok := srcs[i].score(m); ok {
				return true
			}
		}
		res = append(res, types.ZMember{Member: append([]byte(nil), m...), Score: s})
		return true
	})
	return res
}

// sortZMembers orders by score, then member bytes (a sorted set's order).
func sortZMembers(res []types.ZMember) {
	slices.SortFunc(res, func(a, b types.ZMember) int {
		switch {
		case a.Score < b.Score:
			return -1
		case a.Score > b.Score:
			return 1
		}
		return bytes.Compare(a.Member, b.Member)
	})
}

func cmdZScan(c *Client, args [][]byte) {
	cursor, ok := parseCursor(c, args[2])
	if !ok {
		return
	}
	sh, z, bad := c.readZSet(args[1])
	defer c.unlockKey(sh)
	if bad {
		return
	}
	if z == nil { // Redis answers a missing key before it reads the options
		c.emptyScan()
		return
	}
	pattern, count, ok := scanOpts(c, args[3:])
	if !ok {
		return
	}
	var out [][]byte
	next := uint64(0)
	if z != nil {
		// A listpack answers the score text it stores (d2string), a
		// skiplist formats the double ("%.17Lg"): 1e17 reads
		// 100000000000000000 in one and 1e+17 in the other.
		format := appendDouble
		if z.Encoding() == "listpack" {
			format = appendD2String
		}
		next = z.Scan(cursor, count, func(m []byte, s float64) {
			if pattern == nil || globMatch(pattern, m, false) {
				out = append(out, append([]byte(nil), m...), format(nil, s))
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

// appendD2String formats a score as Redis's d2string, which listpacks
// store and ZSCAN of a listpack answers: integral values within +-2^62 as integers
// (1e17 is "100000000000000000", where ZSCORE says "1e+17"), -0 as "-0",
// the rest as "%.17g".
func appendD2String(b []byte, f float64) []byte {
	if f == 0 && math.Signbit(f) {
		return append(b, "-0"...)
	}
	if f >= -(math.MaxInt64/2) && f <= math.MaxInt64/2 && f == math.Trunc(f) {
		return strconv.AppendInt(b, int64(f), 10)
	}
	return appendDouble(b, f)
}
