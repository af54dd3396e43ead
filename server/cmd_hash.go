package server

import (
	"bytes"
	"math"
	"math/big"
	"strconv"

	"github.com/damselflydb/damselfly/shard"
	"github.com/damselflydb/damselfly/shard/types"
)

func registerHashes(reg registrar) {
	reg("hset", -4, "write|denyoom|fast|x-field", 1, 1, 1, "hash", func(c *Client, a [][]byte) { hsetGeneric(c, a, false) })
	reg("hmset", -4, "write|denyoom|fast|x-field", 1, 1, 1, "hash", func(c *Client, a [][]byte) { hsetGeneric(c, a, true) })
	reg("hsetnx", 4, "write|denyoom|fast|x-field", 1, 1, 1, "hash", cmdHSetNX)
	reg("hget", 3, "readonly|fast|x-field", 1, 1, 1, "hash", cmdHGet)
	reg("hmget", -3, "readonly|fast|x-field", 1, 1, 1, "hash", cmdHMGet)
	reg("hdel", -3, "write|fast|x-field", 1, 1, 1, "hash", cmdHDel)
	reg("hlen", 2, "readonly|fast", 1, 1, 1, "hash", cmdHLen) // cmd_hash_ttl.go
	reg("hexists", 3, "readonly|fast|x-field", 1, 1, 1, "hash", cmdHExists)
	reg("hstrlen", 3, "readonly|fast|x-field", 1, 1, 1, "hash", cmdHStrLen)
	reg("hkeys", 2, "readonly", 1, 1, 1, "hash", func(c *Client, a [][]byte) { hgetallGeneric(c, a, true, false) })
	reg("hvals", 2, "readonly", 1, 1, 1, "hash", func(c *Client, a [][]byte) { hgetallGeneric(c, a, false, true) })
	reg("hgetall", 2, "readonly", 1, 1, 1, "hash", func(c *Client, a [][]byte) { hgetallGeneric(c, a, true, true) })
	reg("hincrby", 4, "write|denyoom|fast|x-field", 1, 1, 1, "hash", cmdHIncrBy)
	reg("hincrbyfloat", 4, "write|denyoom|fast|x-field", 1, 1, 1, "hash", cmdHIncrByFloat)
	reg("hrandfield", -2, "readonly|x-rand-count", 1, 1, 1, "hash", cmdHRandField)
	reg("hscan", -3, "readonly", 1, 1, 1, "hash", cmdHScan)
	registerHashTTL(reg) // cmd_hash_ttl.go
}

// readHash locks key's shard and finds its hash (nil when missing; bad
// after a WRONGTYPE reply), without the fields expired but not reclaimed
// yet (liveHash). The caller always unlocks sh.
func (c *Client) readHash(key []byte) (sh *shard.Shard, hs *types.Hash, bad bool) {
	sh, hs, bad = c.readHashStale(key)
	if hs != nil {
		hs = liveHash(hs, c.nowMs())
	}
	return sh, hs, bad
}

// readHashStale is readHash with the expired fields not reclaimed yet
// (HRANDFIELD on a replica shows them, as Redis 7.4's).
func (c *Client) readHashStale(key []byte) (sh *shard.Shard, hs *types.Hash, bad bool) {
	sh, h := c.lockKey(key)
	e, found, bad := c.getColl(sh, h, key, shard.TypeHash)
	if found {
		hs = e.Obj().(*types.Hash)
	} else if !bad {
		c.keyMiss(key)
	}
	return sh, hs, bad
}

// writeHash finds (or, with create, makes) the hash at key in the locked
// shard, calling Modify on an existing one, and the right to change it. A new hash is stored at once;
// the caller deletes it when it ends up empty.
func (c *Client) writeHash(sh *shard.Shard, h uint64, key []byte, create bool) (e shard.Entry, hs *types.Hash, w types.W, bad bool) {
	e, found, bad := c.getColl(sh, h, key, shard.TypeHash)
	if bad {
		return e, nil, w, true
	}
	if found {
		w = sh.DB(c.db).Modify(&e)
		return e, e.Obj().(*types.Hash), w, false
	}
	if !create {
		return e, nil, w, false
	}
	hs, w = types.NewHash()
	e = sh.DB(c.db).Put(h, key, shard.Value{Type: shard.TypeHash, Obj: hs})
	return e, hs, w, false
}

func hsetGeneric(c *Client, args [][]byte, hmset bool) {
	if len(args)%2 != 0 {
		c.err("ERR wrong number of arguments for '" + lower(args[0]) + "' command")
		return
	}
	sh, h := c.lockKey(args[1])
	defer c.unlockKey(sh)
	_, hs, w, bad := c.writeHash(sh, h, args[1], true)
	if bad {
		return
	}
	added := 0
	lim := c.lim()
	for i := 2; i < len(args); i += 2 {
		if hs.Set(w, args[i], args[i+1], lim) {
			added++
		}
	}
	if hmset {
		c.ok()
	} else {
		c.int(int64(added))
	}
	c.notify(kseHash, "hset", args[1]) // after the reply, as Redis's hsetCommand
}

func cmdHSetNX(c *Client, args [][]byte) {
	sh, h := c.lockKey(args[1])
	defer c.unlockKey(sh)
	e, found, bad := c.getColl(sh, h, args[1], shard.TypeHash)
	if bad {
		return
	}
	if found && e.Obj().(*types.Hash).Exists(args[2]) {
		c.int(0)
		return
	}
	_, hs, w, _ := c.writeHash(sh, h, args[1], true)
	hs.Set(w, args[2], args[3], c.lim())
	c.int(1)
	c.notify(kseHash, "hset", args[1])
}

func cmdHGet(c *Client, args [][]byte) {
	sh, hs, bad := c.readHash(args[1])
	defer c.unlockKey(sh)
	if bad {
		return
	}
	if hs != nil {
		if v, ok := hs.Get(args[2]); ok {
			c.bulk(v)
			return
		}
	}
	c.null()
}

func cmdHMGet(c *Client, args [][]byte) {
	sh, hs, bad := c.readHash(args[1])
	defer c.unlockKey(sh)
	if bad {
		return
	}
	c.array(len(args) - 2)
	for _, f := range args[2:] {
		if hs != nil {
			if v, ok := hs.Get(f); ok {
				c.bulk(v)
				continue
			}
		}
		c.null()
	}
}

func cmdHDel(c *Client, args [][]byte) {
	sh, h := c.lockKey(args[1])
	defer c.unlockKey(sh)
	e, found, bad := c.getColl(sh, h, args[1], shard.TypeHash)
	if bad {
		return
	}
	if !found {
		c.int(0)
		return
	}
	hs := e.Obj().(*types.Hash)
	n := 0
	var w types.W
	for _, f := range args[2:] {
		if hs.Exists(f) {
			if n == 0 {
				w = sh.DB(c.db).Modify(&e)
			}
			hs.Delete(w, f)
			n++
		}
	}
	if n > 0 {
		c.notify(kseHash, "hdel", args[1])
	}
	if hs.Len() == 0 {
		sh.DB(c.db).Delete(&e)
		c.notify(kseGeneric, "del", args[1])
	}
	c.int(int64(n))
}

func cmdHExists(c *Client, args [][]byte) {
	sh, hs, bad := c.readHash(args[1])
	defer c.unlockKey(sh)
	switch {
	case bad:
	case hs == nil:
		c.int(0)
	default:
		c.boolInt(hs.Exists(args[2]))
	}
}

// boolInt replies 1 or 0 (an integer in both protocols).
func (c *Client) boolInt(b bool) {
	if b {
		c.int(1)
	} else {
		c.int(0)
	}
}

func cmdHStrLen(c *Client, args [][]byte) {
	sh, hs, bad := c.readHash(args[1])
	defer c.unlockKey(sh)
	switch {
	case bad:
	case hs == nil:
		c.int(0)
	default:
		c.int(int64(hs.StrLen(args[2])))
	}
}

func hgetallGeneric(c *Client, args [][]byte, keys, vals bool) {
	sh, hs, bad := c.readHash(args[1])
	defer c.unlockKey(sh)
	if bad {
		return
	}
	n := 0
	if hs != nil {
		n = hs.Len()
	}
	if keys && vals {
		c.mapHeader(n)
	} else {
		c.array(n)
	}
	if hs == nil {
		return
	}
	hs.Iterate(func(f, v []byte) bool {
		if keys {
			c.bulk(f)
		}
		if vals {
			c.bulk(v)
		}
		return true
	})
}

func cmdHIncrBy(c *Client, args [][]byte) {
	incr, ok := parseInt(args[3])
	if !ok {
		c.errNotInteger()
		return
	}
	sh, h := c.lockKey(args[1])
	defer c.unlockKey(sh)
	e, found, bad := c.getColl(sh, h, args[1], shard.TypeHash)
	if bad {
		return
	}
	var old int64
	if found {
		if v, ok := e.Obj().(*types.Hash).Get(args[2]); ok {
			if old, ok = parseInt(v); !ok {
				c.err("ERR hash value is not an integer")
				return
			}
		}
	}
	if (incr < 0 && old < 0 && incr < math.MinInt64-old) || (incr > 0 && old > 0 && incr > math.MaxInt64-old) {
		c.err("ERR increment or decrement would overflow")
		return
	}
	n := old + incr
	_, hs, w, _ := c.writeHash(sh, h, args[1], true)
	var buf [24]byte
	hs.SetKeepTTL(w, args[2], strconv.AppendInt(buf[:0], n, 10), c.lim())
	c.int(n)
	c.notify(kseHash, "hincrby", args[1])
}

func cmdHIncrByFloat(c *Client, args [][]byte) {
	// In long double, as Redis computes it (longdouble.go).
	incr, ok := parseLongDouble(args[3])
	if !ok {
		c.errNotFloat()
		return
	}
	if incr.IsInf() {
		c.err("ERR value is NaN or Infinity")
		return
	}
	sh, h := c.lockKey(args[1])
	defer c.unlockKey(sh)
	e, found, bad := c.getColl(sh, h, args[1], shard.TypeHash)
	if bad {
		return
	}
	old := new(big.Float)
	if found {
		if v, ok := e.Obj().(*types.Hash).Get(args[2]); ok {
			if old, ok = parseLongDouble(v); !ok {
				c.err("ERR hash value is not a float")
				return
			}
		}
	}
	n, ok := addLongDouble(old, incr)
	if !ok {
		c.err("ERR increment would produce NaN or Infinity")
		return
	}
	val := appendLongDouble(nil, n)
	_, hs, w, _ := c.writeHash(sh, h, args[1], true)
	hs.SetKeepTTL(w, args[2], val, c.lim())
	c.bulk(val)
	c.notify(kseHash, "hincrbyfloat", args[1])
	// Replicas must not redo the float arithmetic.
	c.rewrite([]byte("HSET"), args[1], args[2], val)
	hincrbyfloatKeepTTL(c, hs, args[1], args[2], val) // cmd_hash_ttl.go
}

func cmdHRandField(c *Client, args [][]byte) {
	if len(args) == 2 {
		sh, hs, bad := c.readHashStale(args[1])
		defer c.unlockKey(sh)
		if bad {
			return
		}
		if hs == nil {
			c.null()
			return
		}
		hs.RandomFields(c.rand(), 1, func(f, _ []byte) { c.bulk(f) })
		return
	}
	count, withValues, ok := parseRandCount(c, args, "withvalues")
	if !ok {
		return
	}
	if pool := c.hRandFieldLocked(args[1], count, withValues); pool != nil {
		c.replyRepeats(pool, -count, withValues) // shard released: see randrepeat.go
	}
}

// hRandFieldLocked answers HRANDFIELD key count under the shard lock, or
// returns a copy of the hash for replyRepeats when the picks are too many.
func (c *Client) hRandFieldLocked(key []byte, count int64, withValues bool) *randPool {
	sh, hs, bad := c.readHashStale(key)
	defer c.unlockKey(sh)
	if bad {
		return nil
	}
	if hs == nil || count == 0 {
		c.array(0)
		return nil
	}
	if copyForRepeats(count, hs.Len()) {
		p := &randPool{}
		hs.Iterate(func(f, v []byte) bool {
			p.members = append(p.members, bytes.Clone(f))
			if withValues {
				p.values = append(p.values, bytes.Clone(v))
			}
			return true
		})
		return p
	}
	c.randReplyHeader(count, hs.Len(), withValues)
	hs.RandomFields(c.rand(), count, func(f, v []byte) {
		if withValues && c.proto == 3 {
			c.array(2)
		}
		c.bulk(f)
		if withValues {
			c.bulk(v)
		}
	})
	return nil
}

func cmdHScan(c *Client, args [][]byte) {
	cursor, ok := parseCursor(c, args[2])
	if !ok {
		return
	}
	sh, hs, bad := c.readHash(args[1])
	defer c.unlockKey(sh)
	if bad {
		return
	}
	if hs == nil { // Redis answers a missing key before it reads the options
		c.emptyScan()
		return
	}
	pattern, count, ok := scanOpts(c, args[3:])
	if !ok {
		return
	}
	var out [][]byte
	next := uint64(0)
	if hs != nil {
		next = hs.Scan(cursor, count, func(f, v []byte) {
			if pattern == nil || globMatch(pattern, f, false) {
				out = append(out, f, v)
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

// parseRandCount parses the "count [WITH…]" arguments of HRANDFIELD and
// ZRANDMEMBER (args[2:]) with Redis's range checks.
func parseRandCount(c *Client, args [][]byte, with string) (count int64, withPairs, ok bool) {
	count, ok = parseInt(args[2])
	if !ok {
		c.errNotInteger()
		return 0, false, false
	}
	if count == math.MinInt64 {
		c.err("ERR value is out of range, value must between -9223372036854775807 and 9223372036854775807")
		return 0, false, false
	}
	if len(args) > 4 || (len(args) == 4 && !eq(args[3], with)) {
		c.errSyntax()
		return 0, false, false
	}
	if len(args) == 4 {
		if count < -math.MaxInt64/2 || count > math.MaxInt64/2 {
			c.err("ERR value is out of range")
			return 0, false, false
		}
		return count, true, true
	}
	return count, false, true
}

// randReplyHeader starts the reply of HRANDFIELD/ZRANDMEMBER with a count:
// n picks (all distinct when count > 0, so at most size), as pairs when
// withPairs (nested in RESP3, flat in RESP2).
func (c *Client) randReplyHeader(count int64, size int, withPairs bool) {
	n := count
	if n < 0 {
		n = -n
	} else {
		n = min(n, int64(size))
	}
	if withPairs && c.proto != 3 {
		n *= 2
	}
	c.array(int(n))
}
