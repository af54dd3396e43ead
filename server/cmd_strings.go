package server

import (
	"math"
	"math/big"
	"strconv"

	"github.com/damselflydb/damselfly/shard"
)

func registerStrings(reg registrar) {
	reg("get", 2, "readonly|fast", 1, 1, 1, "string", cmdGet)
	reg("set", -3, "write|denyoom", 1, 1, 1, "string", cmdSet)
	reg("setnx", 3, "write|denyoom|fast", 1, 1, 1, "string", cmdSetNX)
	reg("setex", 4, "write|denyoom", 1, 1, 1, "string", cmdSetEX)
	reg("psetex", 4, "write|denyoom", 1, 1, 1, "string", cmdPSetEX)
	reg("getset", 3, "write|denyoom|fast", 1, 1, 1, "string", cmdGetSet)
	reg("getdel", 2, "write|fast", 1, 1, 1, "string", cmdGetDel)
	reg("getex", -2, "write|fast", 1, 1, 1, "string", cmdGetEx)
	reg("mget", -2, "readonly|fast", 1, -1, 1, "string", cmdMGet)
	reg("mset", -3, "write|denyoom", 1, -1, 2, "string", cmdMSet)
	reg("msetnx", -3, "write|denyoom", 1, -1, 2, "string", cmdMSetNX)
	reg("append", 3, "write|denyoom|fast", 1, 1, 1, "string", cmdAppend)
	reg("strlen", 2, "readonly|fast", 1, 1, 1, "string", cmdStrlen)
	reg("getrange", 4, "readonly", 1, 1, 1, "string", cmdGetRange)
	reg("substr", 4, "readonly", 1, 1, 1, "string", cmdGetRange)
	reg("setrange", 4, "write|denyoom", 1, 1, 1, "string", cmdSetRange)
	reg("incr", 2, "write|denyoom|fast", 1, 1, 1, "string", func(c *Client, a [][]byte) { incrBy(c, a[1], 1) })
	reg("decr", 2, "write|denyoom|fast", 1, 1, 1, "string", func(c *Client, a [][]byte) { incrBy(c, a[1], -1) })
	reg("incrby", 3, "write|denyoom|fast", 1, 1, 1, "string", cmdIncrBy)
	reg("decrby", 3, "write|denyoom|fast", 1, 1, 1, "string", cmdDecrBy)
	reg("incrbyfloat", 3, "write|denyoom|fast", 1, 1, 1, "string", cmdIncrByFloat)
}

func cmdGet(c *Client, args [][]byte) {
	sh, h := c.lockKey(args[1])
	defer c.unlockKey(sh)
	e, ok := sh.Lookup(c.db, h, args[1], c.nowMs())
	if !ok {
		c.srv.stats.keyMisses.Add(1)
		c.keyMiss(args[1])
		c.null()
		return
	}
	c.srv.stats.keyHits.Add(1)
	if e.Type() != shard.TypeString {
		c.errWrongType()
		return
	}
	c.bulk(e.Str())
}

// setFlags are the options of SET and friends.
const (
	setNX = 1 << iota
	setXX
	setGet
	setKeepTTL
)

// parseExpire turns an EX/PX/EXAT/PXAT argument into an absolute unix-ms
// deadline, with Redis's validity rules.
func parseExpire(c *Client, cmd string, arg []byte, unitMs int64, absolute bool) (int64, bool) {
	n, ok := parseInt(arg)
	if !ok {
		c.errNotInteger()
		return 0, false
	}
	if n <= 0 || (unitMs == 1000 && n > math.MaxInt64/1000) {
		c.err("ERR invalid expire time in '" + cmd + "' command")
		return 0, false
	}
	n *= unitMs
	if !absolute {
		t := now()
		if n > math.MaxInt64-t {
			c.err("ERR invalid expire time in '" + cmd + "' command")
			return 0, false
		}
		n += t
	}
	return n, true
}

func cmdSet(c *Client, args [][]byte) {
	flags := 0
	var expireAt int64
	hasExpire := false
	var expOpt string
	var expArg []byte
	var expUnit int64
	var expAbs bool
	for i := 3; i < len(args); i++ {
		a := args[i]
		next := i+1 < len(args)
		switch {
		case eq(a, "nx") && flags&setXX == 0:
			flags |= setNX
		case eq(a, "xx") && flags&setNX == 0:
			flags |= setXX
		case eq(a, "get"):
			flags |= setGet
		case eq(a, "keepttl") && !hasExpire:
			flags |= setKeepTTL
		case (eq(a, "ex") || eq(a, "px") || eq(a, "exat") || eq(a, "pxat")) && (!hasExpire || eq(a, expOpt)) &&
			flags&setKeepTTL == 0 && next:
			// Redis takes the same option twice (the last wins), not two.
			expOpt = lower(a)
			expUnit = int64(1000)
			if a[0] == 'p' || a[0] == 'P' {
				expUnit = 1
			}
			expArg, expAbs, hasExpire = args[i+1], len(a) == 4, true
			i++
		default:
			c.errSyntax()
			return
		}
	}
	// Like Redis, the time is checked after the whole syntax: SET k v PX 0
	// PXAT 1 is a syntax error.
	if hasExpire {
		var ok bool
		if expireAt, ok = parseExpire(c, "set", expArg, expUnit, expAbs); !ok {
			return
		}
	}
	setGeneric(c, args[1], args[2], flags, expireAt)
}

// setGeneric implements SET with its flags; expireAt 0 means no expiry.
func setGeneric(c *Client, key, val []byte, flags int, expireAt int64) {
	sh, h := c.lockKey(key)
	defer c.unlockKey(sh)
	e, found := sh.Lookup(c.db, h, key, c.nowMs())
	if flags&setGet != 0 {
		if !found {
			c.keyMiss(key) // GETSET and SET GET read first, as Redis
		}
		if found && e.Type() != shard.TypeString {
			c.errWrongType()
			return
		}
	}
	if (flags&setNX != 0 && found) || (flags&setXX != 0 && !found) {
		if flags&setGet != 0 {
			if found {
				c.bulk(e.Str())
			} else {
				c.null()
			}
			return
		}
		c.null()
		return
	}
	if flags&setGet != 0 {
		if found {
			c.bulk(e.Str())
		} else {
			c.null()
		}
	}
	if flags&setKeepTTL != 0 && found {
		expireAt = e.ExpireAt()
	} else if expireAt != 0 {
		// SET EX/PX/EXAT, SETEX, PSETEX replicate as SET key value PXAT ms.
		c.rewrite([]byte("SET"), key, val, []byte("PXAT"), strconv.AppendInt(nil, expireAt, 10))
	}
	v := shard.Value{Type: shard.TypeString, Str: val, ExpireAt: expireAt}
	if found { // overwrite what Lookup found: one index probe, not two
		sh.DB(c.db).Overwrite(&e, key, v)
	} else {
		sh.DB(c.db).Put(h, key, v)
	}
	c.notify(kseString, "set", key)
	if flags&setKeepTTL == 0 && expireAt != 0 {
		c.notify(kseGeneric, "expire", key)
	}
	if flags&setGet == 0 {
		c.ok()
	}
}

func cmdSetNX(c *Client, args [][]byte) {
	sh, h := c.lockKey(args[1])
	defer c.unlockKey(sh)
	if _, found := sh.Lookup(c.db, h, args[1], c.nowMs()); found {
		c.int(0)
		return
	}
	sh.DB(c.db).Put(h, args[1], shard.Value{Type: shard.TypeString, Str: args[2]})
	c.notify(kseString, "set", args[1])
	c.int(1)
}

func cmdSetEX(c *Client, args [][]byte) {
	if at, ok := parseExpire(c, "setex", args[2], 1000, false); ok {
		setGeneric(c, args[1], args[3], 0, at)
	}
}

func cmdPSetEX(c *Client, args [][]byte) {
	if at, ok := parseExpire(c, "psetex", args[2], 1, false); ok {
		setGeneric(c, args[1], args[3], 0, at)
	}
}

func cmdGetSet(c *Client, args [][]byte) {
	setGeneric(c, args[1], args[2], setGet, 0)
}

func cmdGetDel(c *Client, args [][]byte) {
	sh, h := c.lockKey(args[1])
	defer c.unlockKey(sh)
	e, ok := sh.Lookup(c.db, h, args[1], c.nowMs())
	if !ok {
		c.keyMiss(args[1])
		c.null()
		return
	}
	if e.Type() != shard.TypeString {
		c.errWrongType()
		return
	}
	c.bulk(e.Str())
	sh.DB(c.db).Delete(&e)
	c.notify(kseGeneric, "del", args[1])
}

func cmdGetEx(c *Client, args [][]byte) {
	var expireAt int64
	persist, set := false, false
	var expOpt string
	// The time is checked only once the key is known to be a string, as
	// Redis does: GETEX missing EXAT 0 answers nil.
	var expArg []byte
	var expUnit int64
	var expAbs bool
	for i := 2; i < len(args); i++ {
		a := args[i]
		switch {
		case eq(a, "persist") && (!set || persist):
			persist, set = true, true
		case (eq(a, "ex") || eq(a, "px") || eq(a, "exat") || eq(a, "pxat")) && (!set || !persist && eq(a, expOpt)) && i+1 < len(args):
			expOpt = lower(a)
			expUnit = int64(1000)
			if a[0] == 'p' || a[0] == 'P' {
				expUnit = 1
			}
			expArg, expAbs, set = args[i+1], len(a) == 4, true
			i++
		default:
			c.errSyntax()
			return
		}
	}
	sh, h := c.lockKey(args[1])
	defer c.unlockKey(sh)
	e, ok := sh.Lookup(c.db, h, args[1], c.nowMs())
	if !ok {
		c.keyMiss(args[1])
		c.null()
		return
	}
	if e.Type() != shard.TypeString {
		c.errWrongType()
		return
	}
	if expArg != nil {
		if expireAt, ok = parseExpire(c, "getex", expArg, expUnit, expAbs); !ok {
			return
		}
	}
	c.bulk(e.Str())
	switch {
	case persist && e.ExpireAt() != 0:
		c.rewrite([]byte("PERSIST"), args[1])
		sh.DB(c.db).SetExpireAt(&e, 0)
		c.notify(kseGeneric, "persist", args[1])
	case expireAt != 0 && expireAt <= now():
		c.rewrite([]byte("DEL"), args[1])
		sh.DB(c.db).Delete(&e)
		c.notify(kseGeneric, "del", args[1])
	case expireAt != 0:
		c.rewrite([]byte("PEXPIREAT"), args[1], strconv.AppendInt(nil, expireAt, 10))
		sh.DB(c.db).SetExpireAt(&e, expireAt)
		c.notify(kseGeneric, "expire", args[1])
	}
}

func cmdMGet(c *Client, args [][]byte) {
	keys := args[1:]
	set := c.lockKeys(keys)
	defer c.unlock(set)
	c.array(len(keys))
	t := now()
	for _, k := range keys {
		sh, h := c.srv.store.ShardOf(k)
		e, ok := sh.Lookup(c.db, h, k, t)
		if !ok {
			c.keyMiss(k)
		}
		if !ok || e.Type() != shard.TypeString {
			c.null()
			continue
		}
		c.bulk(e.Str())
	}
}

func cmdMSet(c *Client, args [][]byte) {
	if len(args)%2 != 1 {
		c.err("ERR wrong number of arguments for 'mset' command")
		return
	}
	msetGeneric(c, args, false)
}

func cmdMSetNX(c *Client, args [][]byte) {
	if len(args)%2 != 1 {
		c.err("ERR wrong number of arguments for 'msetnx' command")
		return
	}
	msetGeneric(c, args, true)
}

func msetGeneric(c *Client, args [][]byte, nx bool) {
	set := &shard.Set{}
	for i := 1; i < len(args); i += 2 {
		c.srv.store.Add(set, args[i])
	}
	c.lockSet(set)
	defer c.unlock(set)
	t := now()
	if nx {
		for i := 1; i < len(args); i += 2 {
			sh, h := c.srv.store.ShardOf(args[i])
			if _, ok := sh.Lookup(c.db, h, args[i], t); ok {
				c.int(0)
				return
			}
		}
	}
	for i := 1; i < len(args); i += 2 {
		sh, h := c.srv.store.ShardOf(args[i])
		sh.DB(c.db).Put(h, args[i], shard.Value{Type: shard.TypeString, Str: args[i+1]})
		c.notify(kseString, "set", args[i])
	}
	if nx {
		c.int(1)
	} else {
		c.ok()
	}
}

const maxStringBytes = 512 << 20

func cmdAppend(c *Client, args [][]byte) {
	sh, h := c.lockKey(args[1])
	defer c.unlockKey(sh)
	e, ok := sh.Lookup(c.db, h, args[1], c.nowMs())
	if !ok {
		sh.DB(c.db).Put(h, args[1], shard.Value{Type: shard.TypeString, Str: args[2]})
		c.notify(kseString, "append", args[1])
		c.int(int64(len(args[2])))
		return
	}
	if e.Type() != shard.TypeString {
		c.errWrongType()
		return
	}
	if len(e.Str())+len(args[2]) > maxStringBytes {
		c.err("ERR string exceeds maximum allowed size (proto-max-bulk-len)")
		return
	}
	if g, w, ok := sh.DB(c.db).GrowString(&e, len(e.Str())+len(args[2])); ok {
		// A big string grows in place (amortised, like Redis's sds).
		p := g.StrW(w)
		copy(p[len(p)-len(args[2]):], args[2])
		c.notify(kseString, "append", args[1])
		c.int(int64(len(p)))
		return
	}
	val := make([]byte, 0, len(e.Str())+len(args[2]))
	val = append(append(val, e.Str()...), args[2]...)
	sh.DB(c.db).Put(h, args[1], shard.Value{Type: shard.TypeString, Str: val, ExpireAt: e.ExpireAt()})
	c.notify(kseString, "append", args[1])
	c.int(int64(len(val)))
}

func cmdStrlen(c *Client, args [][]byte) {
	sh, h := c.lockKey(args[1])
	defer c.unlockKey(sh)
	e, ok := sh.Lookup(c.db, h, args[1], c.nowMs())
	if !ok {
		c.keyMiss(args[1])
		c.int(0)
		return
	}
	if e.Type() != shard.TypeString {
		c.errWrongType()
		return
	}
	c.int(int64(len(e.Str())))
}

func cmdGetRange(c *Client, args [][]byte) {
	start, ok1 := parseInt(args[2])
	end, ok2 := parseInt(args[3])
	if !ok1 || !ok2 {
		c.errNotInteger()
		return
	}
	sh, h := c.lockKey(args[1])
	defer c.unlockKey(sh)
	e, ok := sh.Lookup(c.db, h, args[1], c.nowMs())
	if !ok {
		c.keyMiss(args[1])
		c.bulkString("")
		return
	}
	if e.Type() != shard.TypeString {
		c.errWrongType()
		return
	}
	s := e.Str()
	n := int64(len(s))
	// Redis 7.0: a negative start beyond a negative end is an empty range.
	if start < 0 && end < 0 && start > end {
		c.bulkString("")
		return
	}
	if start < 0 {
		start += n
	}
	if end < 0 {
		end += n
	}
	if start < 0 {
		start = 0
	}
	if end < 0 {
		end = 0
	}
	if end >= n {
		end = n - 1
	}
	if n == 0 || start > end {
		c.bulkString("")
		return
	}
	c.bulk(s[start : end+1])
}

func cmdSetRange(c *Client, args [][]byte) {
	off, ok := parseInt(args[2])
	if !ok {
		c.errNotInteger()
		return
	}
	if off < 0 {
		c.err("ERR offset is out of range")
		return
	}
	val := args[3]
	sh, h := c.lockKey(args[1])
	defer c.unlockKey(sh)
	e, found := sh.Lookup(c.db, h, args[1], c.nowMs())
	if found && e.Type() != shard.TypeString {
		c.errWrongType()
		return
	}
	var cur []byte
	var expireAt int64
	if found {
		cur, expireAt = e.Str(), e.ExpireAt()
	}
	if len(val) == 0 {
		c.int(int64(len(cur)))
		return
	}
	if off > maxStringBytes-int64(len(val)) { // not off+len: that overflows for huge offsets
		c.err("ERR string exceeds maximum allowed size (proto-max-bulk-len)")
		return
	}
	size := max(int64(len(cur)), off+int64(len(val)))
	if found {
		if g, w, ok := sh.DB(c.db).GrowString(&e, int(size)); ok {
			copy(g.StrW(w)[off:], val)
			c.notify(kseString, "setrange", args[1])
			c.int(size)
			return
		}
		if size == int64(len(cur)) {
			copy(sh.DB(c.db).ModifyStr(&e)[off:], val)
			c.notify(kseString, "setrange", args[1])
			c.int(size)
			return
		}
	}
	buf := make([]byte, size)
	copy(buf, cur)
	copy(buf[off:], val)
	sh.DB(c.db).Put(h, args[1], shard.Value{Type: shard.TypeString, Str: buf, ExpireAt: expireAt})
	c.notify(kseString, "setrange", args[1])
	c.int(size)
}

func cmdIncrBy(c *Client, args [][]byte) {
	n, ok := parseInt(args[2])
	if !ok {
		c.errNotInteger()
		return
	}
	incrBy(c, args[1], n)
}

func cmdDecrBy(c *Client, args [][]byte) {
	n, ok := parseInt(args[2])
	if !ok {
		c.errNotInteger()
		return
	}
	if n == math.MinInt64 {
		c.err("ERR decrement would overflow")
		return
	}
	incrBy(c, args[1], -n)
}

func incrBy(c *Client, key []byte, by int64) {
	sh, h := c.lockKey(key)
	defer c.unlockKey(sh)
	e, found := sh.Lookup(c.db, h, key, c.nowMs())
	var cur, expireAt int64
	if found {
		if e.Type() != shard.TypeString {
			c.errWrongType()
			return
		}
		v, ok := parseInt(e.Str())
		if !ok {
			c.errNotInteger()
			return
		}
		cur, expireAt = v, e.ExpireAt()
	}
	if (by < 0 && cur < 0 && by < math.MinInt64-cur) || (by > 0 && cur > 0 && by > math.MaxInt64-cur) {
		c.err("ERR increment or decrement would overflow")
		return
	}
	cur += by
	v := shard.Value{Type: shard.TypeString, Str: strconv.AppendInt(c.numBuf[:0], cur, 10), ExpireAt: expireAt}
	if found {
		sh.DB(c.db).Overwrite(&e, key, v)
	} else {
		sh.DB(c.db).Put(h, key, v)
	}
	c.notify(kseString, "incrby", key)
	c.int(cur)
}

// parseFloat parses a float the way Redis's string2ld does: no spaces, no
// hex, and "inf"/"-inf" allowed but NaN refused.
func parseFloat(b []byte) (float64, bool) {
	if len(b) == 0 || len(b) > 5000 || isSpace(b[0]) || isSpace(b[len(b)-1]) {
		return 0, false
	}
	f, err := strconv.ParseFloat(string(b), 64)
	if err != nil {
		if ne, ok := err.(*strconv.NumError); ok && ne.Err == strconv.ErrRange {
			return f, true
		}
		return 0, false
	}
	if math.IsNaN(f) {
		return 0, false
	}
	for _, ch := range b {
		if ch == 'x' || ch == 'X' || ch == '_' || ch == 'p' || ch == 'P' {
			return 0, false
		}
	}
	return f, true
}

func cmdIncrByFloat(c *Client, args [][]byte) {
	sh, h := c.lockKey(args[1])
	defer c.unlockKey(sh)
	e, found := sh.Lookup(c.db, h, args[1], c.nowMs())
	// Redis's order: the type, the stored value, then the increment, all
	// in long double (longdouble.go).
	cur := new(big.Float)
	var expireAt int64
	if found {
		if e.Type() != shard.TypeString {
			c.errWrongType()
			return
		}
		v, ok := parseLongDouble(e.Str())
		if !ok {
			c.errNotFloat()
			return
		}
		cur, expireAt = v, e.ExpireAt()
	}
	by, ok := parseLongDouble(args[2])
	if !ok {
		c.errNotFloat()
		return
	}
	sum, ok := addLongDouble(cur, by)
	if !ok {
		c.err("ERR increment would produce NaN or Infinity")
		return
	}
	val := appendLongDouble(nil, sum)
	// Replicated as the resulting value, so float formatting on replicas
	// cannot make them diverge.
	c.rewrite([]byte("SET"), args[1], append([]byte(nil), val...), []byte("KEEPTTL"))
	sh.DB(c.db).Put(h, args[1], shard.Value{Type: shard.TypeString, Str: val, ExpireAt: expireAt})
	c.notify(kseString, "incrbyfloat", args[1])
	c.bulk(val)
}
