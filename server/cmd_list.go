package server

import (
	"bytes"
	"math"

	"github.com/damselflydb/damselfly/shard"
	"github.com/damselflydb/damselfly/shard/types"
)

func registerLists(reg registrar) {
	reg("lpush", -3, "write|denyoom|fast", 1, 1, 1, "list", func(c *Client, a [][]byte) { pushGeneric(c, a, true, false) })
	reg("rpush", -3, "write|denyoom|fast", 1, 1, 1, "list", func(c *Client, a [][]byte) { pushGeneric(c, a, false, false) })
	reg("lpushx", -3, "write|denyoom|fast", 1, 1, 1, "list", func(c *Client, a [][]byte) { pushGeneric(c, a, true, true) })
	reg("rpushx", -3, "write|denyoom|fast", 1, 1, 1, "list", func(c *Client, a [][]byte) { pushGeneric(c, a, false, true) })
	reg("lpop", -2, "write|fast", 1, 1, 1, "list", func(c *Client, a [][]byte) { popGeneric(c, a, true) })
	reg("rpop", -2, "write|fast", 1, 1, 1, "list", func(c *Client, a [][]byte) { popGeneric(c, a, false) })
	reg("llen", 2, "readonly|fast", 1, 1, 1, "list", collLen(shard.TypeList))
	reg("lrange", 4, "readonly", 1, 1, 1, "list", cmdLRange)
	reg("lindex", 3, "readonly", 1, 1, 1, "list", cmdLIndex)
	reg("lset", 4, "write|denyoom", 1, 1, 1, "list", cmdLSet)
	reg("linsert", 5, "write|denyoom", 1, 1, 1, "list", cmdLInsert)
	reg("lrem", 4, "write", 1, 1, 1, "list", cmdLRem)
	reg("ltrim", 4, "write", 1, 1, 1, "list", cmdLTrim)
	reg("lpos", -3, "readonly", 1, 1, 1, "list", cmdLPos)
	reg("lmove", 5, "write|denyoom", 1, 2, 1, "list", cmdLMove)
	reg("rpoplpush", 3, "write|denyoom", 1, 2, 1, "list", cmdRPopLPush)
	reg("lmpop", -4, "write", 0, 0, 0, "list", cmdLMPop)
	reg("blpop", -3, "write|blocking", 1, -2, 1, "list", func(c *Client, a [][]byte) { blockingPop(c, a, true) })
	reg("brpop", -3, "write|blocking", 1, -2, 1, "list", func(c *Client, a [][]byte) { blockingPop(c, a, false) })
	reg("blmove", 6, "write|denyoom|blocking", 1, 2, 1, "list", cmdBLMove)
	reg("brpoplpush", 4, "write|denyoom|blocking", 1, 2, 1, "list", cmdBRPopLPush)
	reg("blmpop", -5, "write|blocking", 0, 0, 0, "list", cmdBLMPop)
}

var (
	argLPop  = []byte("LPOP")
	argRPop  = []byte("RPOP")
	argLeft  = []byte("LEFT")
	argRight = []byte("RIGHT")
)

func pushGeneric(c *Client, args [][]byte, left, onlyExisting bool) {
	key := args[1]
	sh, h := c.lockKey(key)
	defer c.unlockKey(sh)
	e, found, bad := c.getColl(sh, h, key, shard.TypeList)
	if bad {
		return
	}
	var n int
	if !found {
		if onlyExisting {
			c.int(0)
			return
		}
		l, w := types.NewList()
		n = pushTo(l, w, left, c.lim(), args[2:])
		c.putColl(sh, h, key, shard.TypeList, l)
	} else {
		w := sh.DB(c.db).Modify(&e)
		n = pushTo(e.Obj().(*types.List), w, left, c.lim(), args[2:])
	}
	c.int(int64(n)) // before the event, as in Redis (a RESP3 client subscribed to its own keys sees the order)
	c.notify(kseList, pushEvent(left), key)
}

func pushTo(l *types.List, w types.W, left bool, lim *types.Limits, vs [][]byte) int {
	if left {
		return l.PushFront(w, lim, vs...)
	}
	return l.PushBack(w, lim, vs...)
}

// pushEvent and popEvent are the keyspace events of list pushes and pops.
func pushEvent(left bool) string {
	if left {
		return "lpush"
	}
	return "rpush"
}

func popEvent(left bool) string {
	if left {
		return "lpop"
	}
	return "rpop"
}

// notifyPopped raises a pop's events (and "del" when the list emptied).
func (c *Client) notifyPopped(key []byte, left, emptied bool) {
	c.notify(kseList, popEvent(left), key)
	if emptied {
		c.notify(kseGeneric, "del", key)
	}
}

// popFromQuiet pops up to n elements of the list in e (locked) as copies,
// deleting the key when it empties (a key left with elements wakes the next
// blocked client), without the keyspace events (LMOVE raises them after the
// push, in Redis's order).
func (c *Client) popFromQuiet(e *shard.Entry, sh *shard.Shard, key []byte, left bool, n int) [][]byte {
	var out [][]byte
	c.popEach(e, sh, key, left, n, func(v []byte) { out = append(out, bytes.Clone(v)) })
	return out
}

// popEach is popFromQuiet handing each element to emit as it goes (a view
// valid during the call: replies copy it straight into the output instead
// of through a copy of their own).
func (c *Client) popEach(e *shard.Entry, sh *shard.Shard, key []byte, left bool, n int, emit func([]byte)) {
	l := e.Obj().(*types.List)
	w := sh.DB(c.db).Modify(e)
	if left {
		l.PopFrontEach(w, n, emit)
	} else {
		l.PopBackEach(w, n, emit)
	}
	if l.Len() == 0 {
		sh.DB(c.db).Delete(e)
	} else {
		c.srv.signalReady(c.db, key)
	}
}

// popReply pops up to n elements (n >= 1) into the reply, as an array when
// asArray, and raises the pop's events.
func (c *Client) popReply(e *shard.Entry, sh *shard.Shard, key []byte, left bool, n int, asArray bool) {
	l := e.Obj().(*types.List)
	if asArray {
		c.array(min(n, l.Len()))
	}
	c.popEach(e, sh, key, left, n, c.bulk)
	c.notifyPopped(key, left, l.Len() == 0)
}

func popGeneric(c *Client, args [][]byte, left bool) {
	if len(args) > 3 {
		c.err("ERR wrong number of arguments for '" + lower(args[0]) + "' command")
		return
	}
	hasCount := len(args) == 3
	var count int64
	if hasCount {
		var ok bool
		if count, ok = parseCount(c, args[2]); !ok {
			return
		}
	}
	sh, h := c.lockKey(args[1])
	defer c.unlockKey(sh)
	e, found, bad := c.getColl(sh, h, args[1], shard.TypeList)
	if bad {
		return
	}
	if !found {
		if hasCount {
			c.nullArray()
		} else {
			c.null()
		}
		return
	}
	if !hasCount {
		c.popReply(&e, sh, args[1], left, 1, false)
		return
	}
	if count == 0 {
		c.array(0)
		return
	}
	c.popReply(&e, sh, args[1], left, int(min(count, math.MaxInt32)), true)
}

func cmdLRange(c *Client, args [][]byte) {
	start, ok1 := parseInt(args[2])
	stop, ok2 := parseInt(args[3])
	if !ok1 || !ok2 {
		c.errNotInteger()
		return
	}
	sh, h := c.lockKey(args[1])
	defer c.unlockKey(sh)
	e, found, bad := c.getColl(sh, h, args[1], shard.TypeList)
	if bad {
		return
	}
	if !found {
		c.keyMiss(args[1])
		c.array(0)
		return
	}
	// reply straight from the list's nodes: no slice of views to allocate
	l := e.Obj().(*types.List)
	c.array(l.RangeLen(start, stop))
	l.Range(start, stop, func(v []byte) bool { c.bulk(v); return true })
}

func cmdLIndex(c *Client, args [][]byte) {
	// Redis looks the key up before it reads the index.
	sh, h := c.lockKey(args[1])
	defer c.unlockKey(sh)
	e, found, bad := c.getColl(sh, h, args[1], shard.TypeList)
	if bad {
		return
	}
	if !found {
		c.keyMiss(args[1])
		c.null()
		return
	}
	i, ok := parseInt(args[2])
	if !ok {
		c.errNotInteger()
		return
	}
	if v, ok := e.Obj().(*types.List).Index(i); ok {
		c.bulk(v)
	} else {
		c.null()
	}
}

func cmdLSet(c *Client, args [][]byte) {
	// Redis looks the key up before it reads the index.
	sh, h := c.lockKey(args[1])
	defer c.unlockKey(sh)
	e, found, bad := c.getColl(sh, h, args[1], shard.TypeList)
	if bad {
		return
	}
	if !found {
		c.err("ERR no such key")
		return
	}
	i, ok := parseInt(args[2])
	if !ok {
		c.errNotInteger()
		return
	}
	l := e.Obj().(*types.List)
	if n := int64(l.Len()); i >= n || i < -n {
		c.err("ERR index out of range")
		return
	}
	w := sh.DB(c.db).Modify(&e)
	l.Set(w, i, args[3], c.lim())
	c.ok()
	c.notify(kseList, "lset", args[1]) // after the reply, as Redis
}

func cmdLInsert(c *Client, args [][]byte) {
	var before bool
	switch {
	case eq(args[2], "before"):
		before = true
	case eq(args[2], "after"):
	default:
		c.errSyntax()
		return
	}
	sh, h := c.lockKey(args[1])
	defer c.unlockKey(sh)
	e, found, bad := c.getColl(sh, h, args[1], shard.TypeList)
	if bad {
		return
	}
	if !found {
		c.int(0)
		return
	}
	l := e.Obj().(*types.List)
	// Modify only when the pivot exists, so a miss is not a write.
	pos, _ := l.Pos(args[3], 1, 1, 0)
	if len(pos) == 0 {
		c.int(-1)
		return
	}
	w := sh.DB(c.db).Modify(&e)
	n := l.Insert(w, args[3], args[4], before, c.lim())
	c.notify(kseList, "linsert", args[1])
	c.int(int64(n))
}

func cmdLRem(c *Client, args [][]byte) {
	n, ok := parseInt(args[2])
	if !ok {
		c.errNotInteger()
		return
	}
	sh, h := c.lockKey(args[1])
	defer c.unlockKey(sh)
	e, found, bad := c.getColl(sh, h, args[1], shard.TypeList)
	if bad {
		return
	}
	if !found {
		c.int(0)
		return
	}
	l := e.Obj().(*types.List)
	if pos, _ := l.Pos(args[3], 1, 1, 0); len(pos) == 0 {
		c.int(0)
		return
	}
	w := sh.DB(c.db).Modify(&e)
	removed := l.Remove(w, n, args[3], c.lim())
	if removed > 0 {
		c.notify(kseList, "lrem", args[1])
	}
	if l.Len() == 0 {
		sh.DB(c.db).Delete(&e)
		c.notify(kseGeneric, "del", args[1])
	}
	c.int(int64(removed))
}

func cmdLTrim(c *Client, args [][]byte) {
	start, ok1 := parseInt(args[2])
	stop, ok2 := parseInt(args[3])
	if !ok1 || !ok2 {
		c.errNotInteger()
		return
	}
	sh, h := c.lockKey(args[1])
	defer c.unlockKey(sh)
	e, found, bad := c.getColl(sh, h, args[1], shard.TypeList)
	if bad {
		return
	}
	if !found {
		c.ok()
		return
	}
	l := e.Obj().(*types.List)
	w := sh.DB(c.db).Modify(&e)
	l.Trim(w, start, stop, c.lim())
	c.notify(kseList, "ltrim", args[1])
	if l.Len() == 0 {
		sh.DB(c.db).Delete(&e)
		c.notify(kseGeneric, "del", args[1])
	}
	c.ok()
}

func cmdLPos(c *Client, args [][]byte) {
	rank, count, maxlen := int64(1), int64(-1), int64(0)
	for i := 3; i < len(args); i++ {
		more := i+1 < len(args)
		switch {
		case eq(args[i], "rank") && more:
			i++
			v, ok := parseInt(args[i])
			if !ok {
				c.errNotInteger()
				return
			}
			if v == 0 {
				c.err("ERR " + types.ErrRankZero.Error())
				return
			}
			rank = v
		case eq(args[i], "count") && more:
			i++
			v, ok := parseInt(args[i])
			if !ok || v < 0 {
				c.err("ERR COUNT can't be negative")
				return
			}
			count = v
		case eq(args[i], "maxlen") && more:
			i++
			v, ok := parseInt(args[i])
			if !ok || v < 0 {
				c.err("ERR MAXLEN can't be negative")
				return
			}
			maxlen = v
		default:
			c.errSyntax()
			return
		}
	}
	sh, h := c.lockKey(args[1])
	defer c.unlockKey(sh)
	e, found, bad := c.getColl(sh, h, args[1], shard.TypeList)
	if bad {
		return
	}
	if !found {
		c.keyMiss(args[1])
		if count >= 0 {
			c.array(0)
		} else {
			c.null()
		}
		return
	}
	want := count
	if count < 0 {
		want = 1
	}
	pos, err := e.Obj().(*types.List).Pos(args[2], rank, want, maxlen)
	if err != nil {
		c.err("ERR " + err.Error())
		return
	}
	if count < 0 {
		if len(pos) == 0 {
			c.null()
		} else {
			c.int(int64(pos[0]))
		}
		return
	}
	c.array(len(pos))
	for _, p := range pos {
		c.int(int64(p))
	}
}

// parseWhere parses LEFT or RIGHT.
func parseWhere(c *Client, b []byte) (left, ok bool) {
	switch {
	case eq(b, "left"):
		return true, true
	case eq(b, "right"):
		return false, true
	}
	c.errSyntax()
	return false, false
}

func cmdLMove(c *Client, args [][]byte) {
	from, ok := parseWhere(c, args[3])
	if !ok {
		return
	}
	to, ok := parseWhere(c, args[4])
	if !ok {
		return
	}
	set := c.lockKeys(args[1:3])
	defer c.unlock(set)
	if !c.lmoveLocked(args[1], args[2], from, to, true) {
		c.null()
	}
}

func cmdRPopLPush(c *Client, args [][]byte) {
	set := c.lockKeys(args[1:3])
	defer c.unlock(set)
	if !c.lmoveLocked(args[1], args[2], false, true, true) {
		c.null()
	}
}

// lmoveLocked is LMOVE with src and dst locked. It returns false, without
// replying, when src is empty; with first unset a source or destination of
// the wrong type also counts as empty (a blocked client keeps waiting).
func (c *Client) lmoveLocked(src, dst []byte, from, to, first bool) bool {
	ssh, _ := c.srv.store.ShardOf(src)
	e, found, wrong := c.peekType(src, shard.TypeList)
	if wrong {
		if first {
			c.errWrongType()
			return true
		}
		return false
	}
	if !found {
		return false
	}
	dsh, dh := c.srv.store.ShardOf(dst)
	de, dfound, dwrong := c.peekType(dst, shard.TypeList)
	if dwrong {
		// Also when woken while blocked (Redis does the same): the client
		// gets WRONGTYPE, the element stays, and the next client blocked on
		// src is served.
		c.errWrongType()
		if !first {
			c.srv.signalReady(c.db, src)
		}
		return true
	}
	srcList := e.Obj().(*types.List)
	v := c.popFromQuiet(&e, ssh, src, from, 1)[0]
	if string(src) == string(dst) {
		// The entry may be gone (a one-element list rotates onto itself).
		de, dfound, _ = c.peekType(dst, shard.TypeList)
	}
	if dfound {
		w := dsh.DB(c.db).Modify(&de)
		pushTo(de.Obj().(*types.List), w, to, c.lim(), [][]byte{v})
	} else {
		l, w := types.NewList()
		pushTo(l, w, to, c.lim(), [][]byte{v})
		c.putColl(dsh, dh, dst, shard.TypeList, l)
	}
	// Redis's order: the push's event, the reply, the pop's events.
	c.notify(kseList, pushEvent(to), dst)
	c.bulk(v)
	c.notifyPopped(src, from, srcList.Len() == 0 && string(src) != string(dst))
	return true
}

// mpopArgs are the parsed arguments of LMPOP/BLMPOP/ZMPOP/BZMPOP.
type mpopArgs struct {
	keys  [][]byte
	left  bool // LEFT or MIN
	count int64
}

// parseMPop parses "numkeys key... WHERE [COUNT n]" starting at args[i];
// words are the two accepted WHERE words (left/right or min/max).
func parseMPop(c *Client, args [][]byte, i int, w1, w2 string) (mpopArgs, bool) {
	var m mpopArgs
	n, ok := parseInt(args[i])
	if !ok || n <= 0 {
		c.err("ERR numkeys should be greater than 0")
		return m, false
	}
	where := int64(i) + n + 1
	if n > int64(len(args)) || where >= int64(len(args)) {
		c.errSyntax()
		return m, false
	}
	m.keys = args[i+1 : where]
	switch {
	case eq(args[where], w1):
		m.left = true
	case eq(args[where], w2):
	default:
		c.errSyntax()
		return m, false
	}
	m.count = -1
	for j := int(where) + 1; j < len(args); j++ {
		if m.count == -1 && eq(args[j], "count") && j+1 < len(args) {
			j++
			v, ok := parseInt(args[j])
			if !ok || v <= 0 {
				c.err("ERR count should be greater than 0")
				return m, false
			}
			m.count = v
			continue
		}
		c.errSyntax()
		return m, false
	}
	if m.count == -1 {
		m.count = 1
	}
	return m, true
}

func cmdLMPop(c *Client, args [][]byte) {
	m, ok := parseMPop(c, args, 1, "left", "right")
	if !ok {
		return
	}
	set := c.lockKeys(m.keys)
	defer c.unlock(set)
	if !c.lmpopLocked(m, true) {
		c.nullArray()
	}
}

// lmpopLocked pops from the first non-empty list of m.keys (locked) and
// replies [key, [elements]]; it returns false without replying when all are
// empty. Replicated as LPOP/RPOP key count.
func (c *Client) lmpopLocked(m mpopArgs, first bool) bool {
	for _, k := range m.keys {
		sh, _ := c.srv.store.ShardOf(k)
		e, found, wrong := c.peekType(k, shard.TypeList)
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
		n := min(int(min(m.count, math.MaxInt32)), e.Obj().(*types.List).Len())
		c.array(2)
		c.bulk(k)
		c.popReply(&e, sh, k, m.left, n, true)
		cmd := argRPop
		if m.left {
			cmd = argLPop
		}
		c.rewrite(cmd, k, bytesArg(int64(n)))
		return true
	}
	return false
}

// blockingPop is BLPOP/BRPOP key... timeout.
func blockingPop(c *Client, args [][]byte, left bool) {
	timeout, ok := parseTimeout(c, args[len(args)-1])
	if !ok {
		return
	}
	keys := args[1 : len(args)-1]
	c.blockOn(keys, timeout, func(first bool) bool {
		k, sh, e, found, done := c.firstNonEmpty(keys, shard.TypeList, first)
		if done || !found {
			return done
		}
		c.array(2)
		c.bulk(k)
		c.popReply(&e, sh, k, left, 1, false)
		cmd := argRPop
		if left {
			cmd = argLPop
		}
		c.rewrite(cmd, k)
		return true
	}, c.nullArray)
}

func cmdBLMove(c *Client, args [][]byte) {
	from, ok := parseWhere(c, args[3])
	if !ok {
		return
	}
	to, ok := parseWhere(c, args[4])
	if !ok {
		return
	}
	blmove(c, args[1], args[2], from, to, args[5])
}

func cmdBRPopLPush(c *Client, args [][]byte) {
	blmove(c, args[1], args[2], false, true, args[3])
}

func blmove(c *Client, src, dst []byte, from, to bool, timeoutArg []byte) {
	timeout, ok := parseTimeout(c, timeoutArg)
	if !ok {
		return
	}
	c.blockOn([][]byte{src, dst}, timeout, func(first bool) bool {
		if !c.lmoveLocked(src, dst, from, to, first) {
			return false
		}
		c.rewrite([]byte("LMOVE"), src, dst, whereArg(from), whereArg(to))
		return true
	}, func() {
		// Redis answers a null bulk where it may not block (MULTI,
		// scripts) but a null array on timeout: *-1 vs $-1 in RESP2.
		if c.noBlock || c.inTransaction() {
			c.null()
		} else {
			c.nullArray()
		}
	})
}

func whereArg(left bool) []byte {
	if left {
		return argLeft
	}
	return argRight
}

func cmdBLMPop(c *Client, args [][]byte) {
	timeout, ok := parseTimeout(c, args[1])
	if !ok {
		return
	}
	m, ok := parseMPop(c, args, 2, "left", "right")
	if !ok {
		return
	}
	c.blockOn(m.keys, timeout, func(first bool) bool { return c.lmpopLocked(m, first) }, c.nullArray)
}
