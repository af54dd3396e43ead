package server

import (
	"math"
	"strconv"

	"github.com/damselflydb/damselfly/shard"
)

func registerKeys(reg registrar) {
	reg("del", -2, "write", 1, -1, 1, "generic", cmdDel)
	reg("unlink", -2, "write|fast", 1, -1, 1, "generic", cmdDel)
	reg("exists", -2, "readonly|fast", 1, -1, 1, "generic", cmdExists)
	reg("touch", -2, "readonly|fast", 1, -1, 1, "generic", cmdTouch)
	reg("type", 2, "readonly|fast", 1, 1, 1, "generic", cmdType)
	reg("rename", 3, "write", 1, 2, 1, "generic", func(c *Client, a [][]byte) { renameGeneric(c, a, false) })
	reg("renamenx", 3, "write|fast", 1, 2, 1, "generic", func(c *Client, a [][]byte) { renameGeneric(c, a, true) })
	reg("copy", -3, "write|denyoom", 1, 2, 1, "generic", cmdCopy)
	reg("move", 3, "write|fast", 1, 1, 1, "generic", cmdMove)
	reg("randomkey", 1, "readonly", 0, 0, 0, "generic", cmdRandomKey)
	reg("keys", 2, "readonly", 0, 0, 0, "generic", cmdKeys)
	reg("scan", -2, "readonly", 0, 0, 0, "generic", cmdScan)
	reg("expire", -3, "write|fast", 1, 1, 1, "generic", func(c *Client, a [][]byte) { expireGeneric(c, a, 1000, false) })
	reg("pexpire", -3, "write|fast", 1, 1, 1, "generic", func(c *Client, a [][]byte) { expireGeneric(c, a, 1, false) })
	reg("expireat", -3, "write|fast", 1, 1, 1, "generic", func(c *Client, a [][]byte) { expireGeneric(c, a, 1000, true) })
	reg("pexpireat", -3, "write|fast", 1, 1, 1, "generic", func(c *Client, a [][]byte) { expireGeneric(c, a, 1, true) })
	reg("ttl", 2, "readonly|fast", 1, 1, 1, "generic", func(c *Client, a [][]byte) { ttlGeneric(c, a, 1000, false) })
	reg("pttl", 2, "readonly|fast", 1, 1, 1, "generic", func(c *Client, a [][]byte) { ttlGeneric(c, a, 1, false) })
	reg("expiretime", 2, "readonly|fast", 1, 1, 1, "generic", func(c *Client, a [][]byte) { ttlGeneric(c, a, 1000, true) })
	reg("pexpiretime", 2, "readonly|fast", 1, 1, 1, "generic", func(c *Client, a [][]byte) { ttlGeneric(c, a, 1, true) })
	reg("persist", 2, "write|fast", 1, 1, 1, "generic", cmdPersist)
}

func cmdDel(c *Client, args [][]byte) {
	keys := args[1:]
	set := c.lockKeys(keys)
	defer c.unlock(set)
	var n int64
	t := now()
	for _, k := range keys {
		sh, h := c.srv.store.ShardOf(k)
		if e, ok := sh.Lookup(c.db, h, k, t); ok {
			if e.Type() == shard.TypeStream {
				c.srv.signalStream(c.db, k) // its XREADGROUP waiters fail
			}
			sh.DB(c.db).Delete(&e)
			c.notify(kseGeneric, "del", k)
			n++
		}
	}
	c.int(n)
}

func cmdExists(c *Client, args [][]byte) { countKeys(c, args[1:], false) }

// TOUCH is EXISTS that records an access to each key (OBJECT IDLETIME).
func cmdTouch(c *Client, args [][]byte) { countKeys(c, args[1:], true) }

func countKeys(c *Client, keys [][]byte, touch bool) {
	set := c.lockKeys(keys)
	defer c.unlock(set)
	var n int64
	t := now()
	for _, k := range keys {
		sh, h := c.srv.store.ShardOf(k)
		lookup := sh.LookupNoTouch
		if touch {
			lookup = sh.Lookup
		}
		if _, ok := lookup(c.db, h, k, t); ok {
			n++
		} else {
			c.keyMiss(k)
		}
	}
	c.int(n)
}

func cmdType(c *Client, args [][]byte) {
	sh, h := c.lockKey(args[1])
	defer c.unlockKey(sh)
	e, ok := sh.LookupNoTouch(c.db, h, args[1], now())
	if !ok {
		c.keyMiss(args[1])
		c.simple("none")
		return
	}
	c.simple(e.Type().String())
}

// valueOf copies an entry's value out of the shard (collections are shared
// unless clone is set).
func valueOf(e *shard.Entry, clone bool) shard.Value {
	v := shard.Value{Type: e.Type(), ExpireAt: e.ExpireAt(), MCFlags: e.MCFlags(), MCCAS: e.MCCAS(), Meta: e.HasMeta()}
	if v.Type == shard.TypeString {
		v.Str = append([]byte(nil), e.Str()...)
	} else if clone {
		v.Obj = cloneObject(e.Obj())
	} else {
		v.Obj = e.Obj()
	}
	return v
}

func renameGeneric(c *Client, args [][]byte, nx bool) {
	src, dst := args[1], args[2]
	set := c.lockKeys(args[1:3])
	defer c.unlock(set)
	t := now()
	ssh, sh := c.srv.store.ShardOf(src)
	e, ok := ssh.Lookup(c.db, sh, src, t)
	if !ok {
		c.err("ERR no such key")
		return
	}
	if string(src) == string(dst) {
		if nx {
			c.int(0)
		} else {
			c.ok()
		}
		return
	}
	dsh, dh := c.srv.store.ShardOf(dst)
	if nx {
		if _, exists := dsh.Lookup(c.db, dh, dst, t); exists {
			c.int(0)
			return
		}
	}
	v := valueOf(&e, false)
	ssh.DB(c.db).Forget(&e) // the object moves to dst; do not free it
	if old, exists := dsh.Lookup(c.db, dh, dst, t); exists {
		dsh.DB(c.db).Delete(&old)
	}
	dsh.DB(c.db).Put(dh, dst, v)
	c.notify(kseGeneric, "rename_from", src)
	c.notify(kseGeneric, "rename_to", dst)
	c.srv.signalIfBlockable(c.db, dst, v.Type)
	if nx {
		c.int(1)
	} else {
		c.ok()
	}
}

func cmdCopy(c *Client, args [][]byte) {
	src, dst := args[1], args[2]
	dstDB := c.db
	replace := false
	for i := 3; i < len(args); i++ {
		switch {
		case eq(args[i], "replace"):
			replace = true
		case eq(args[i], "db") && i+1 < len(args):
			n, ok := parseInt(args[i+1])
			if !ok {
				c.errNotInteger()
				return
			}
			if n < 0 || n >= int64(c.srv.store.DBNum()) {
				c.err("ERR DB index is out of range")
				return
			}
			dstDB = int(n)
			i++
		default:
			c.errSyntax()
			return
		}
	}
	if dstDB == c.db && string(src) == string(dst) {
		c.err("ERR source and destination objects are the same")
		return
	}
	set := c.lockKeys(args[1:3])
	defer c.unlock(set)
	t := now()
	ssh, sh := c.srv.store.ShardOf(src)
	e, ok := ssh.Lookup(c.db, sh, src, t)
	if !ok {
		c.keyMiss(src) // COPY reads its source as Redis's lookupKeyRead
		c.int(0)
		return
	}
	dsh, dh := c.srv.store.ShardOf(dst)
	if old, exists := dsh.Lookup(dstDB, dh, dst, t); exists {
		if !replace {
			c.int(0)
			return
		}
		v := valueOf(&e, true)
		dsh.DB(dstDB).Delete(&old)
		dsh.DB(dstDB).Put(dh, dst, v)
		c.notifyDB(dstDB, kseGeneric, "copy_to", dst)
		c.srv.signalIfBlockable(dstDB, dst, v.Type)
		c.int(1)
		return
	}
	v := valueOf(&e, true)
	dsh.DB(dstDB).Put(dh, dst, v)
	c.notifyDB(dstDB, kseGeneric, "copy_to", dst)
	c.srv.signalIfBlockable(dstDB, dst, v.Type)
	c.int(1)
}

func cmdMove(c *Client, args [][]byte) {
	n, ok := parseInt32Arg(c, args[2])
	if !ok {
		return
	}
	if n < 0 || n >= int64(c.srv.store.DBNum()) {
		c.err("ERR DB index is out of range")
		return
	}
	if int(n) == c.db {
		c.err("ERR source and destination objects are the same")
		return
	}
	sh, h := c.lockKey(args[1])
	defer c.unlockKey(sh)
	t := now()
	e, found := sh.Lookup(c.db, h, args[1], t)
	if !found {
		c.int(0)
		return
	}
	if _, exists := sh.Lookup(int(n), h, args[1], t); exists {
		c.int(0)
		return
	}
	v := valueOf(&e, false)
	sh.DB(c.db).Forget(&e)
	sh.DB(int(n)).Put(h, args[1], v)
	c.notify(kseGeneric, "move_from", args[1])
	c.notifyDB(int(n), kseGeneric, "move_to", args[1])
	c.srv.signalIfBlockable(int(n), args[1], v.Type)
	c.int(1)
}

func cmdRandomKey(c *Client, args [][]byte) {
	shards := c.srv.store.Shards()
	start := int(randUint64() % uint64(len(shards)))
	t := now()
	for i := range shards {
		sh := shards[(start+i)%len(shards)]
		c.lockShard(sh)
		d := sh.PeekDB(c.db)
		var key []byte
		if d != nil && d.Len() > 0 {
			// Sample a few entries; skip ones that have expired.
			for try := 0; try < 16 && key == nil; try++ {
				d.Sample(randUint64(), func(e *shard.Entry) bool {
					if !e.Expired(t) {
						key = append([]byte(nil), e.Key()...)
					}
					return false
				})
			}
		}
		c.unlockShard(sh)
		if key != nil {
			c.bulk(key)
			return
		}
	}
	c.null()
}

func cmdKeys(c *Client, args [][]byte) {
	pattern := args[1]
	all := len(pattern) == 1 && pattern[0] == '*'
	var keys [][]byte
	t := now()
	for _, sh := range c.srv.store.Shards() {
		var seen map[string]struct{} // set once the walk let go of the shard
		chunks := 0
		for cur := uint64(0); ; {
			c.lockShard(sh)
			d := sh.PeekDB(c.db)
			if d == nil {
				c.unlockShard(sh)
				break
			}
			chunks++
			if chunks == 2 {
				// Writers may have split buckets since: the walk can meet
				// a key twice from here on.
				seen = make(map[string]struct{}, len(keys))
				for _, k := range keys {
					seen[string(k)] = struct{}{}
				}
			}
			for steps := 0; steps < keysChunkSteps; steps++ {
				cur = d.Scan(cur, func(e *shard.Entry) {
					if e.Expired(t) || !all && !globMatch(pattern, e.Key(), false) {
						return
					}
					if seen != nil {
						if _, dup := seen[string(e.Key())]; dup {
							return
						}
						seen[string(e.Key())] = struct{}{}
					}
					keys = append(keys, append([]byte(nil), e.Key()...))
				})
				if cur == 0 {
					break
				}
			}
			c.unlockShard(sh)
			if cur == 0 {
				break
			}
		}
	}
	c.array(len(keys))
	for _, k := range keys {
		c.bulk(k)
	}
}

// keysChunkSteps is how many bucket groups KEYS and SCAN walk per hold of a
// shard's lock. Both let go of the shard between chunks, so a KEYS over
// millions of keys or a SCAN with COUNT 10000000 delays the shard's writers
// by one chunk at most (well under a millisecond), not by the whole pass as
// in Redis. KEYS is then not a point-in-time view: a key present for the
// whole walk is listed once; one written or deleted during it may or may
// not be (Dragonfly's KEYS behaves the same way).
const keysChunkSteps = 256

// SCAN cursors carry the shard in their low 8 bits and the shard's table
// cursor above them.
const scanShardBits = 8

func cmdScan(c *Client, args [][]byte) {
	cursor, ok := parseCursor(c, args[1])
	if !ok {
		return
	}
	count := int64(10)
	var pattern []byte
	var typ string
	for i := 2; i < len(args); i++ {
		switch {
		case eq(args[i], "count") && i+1 < len(args):
			n, ok := parseInt(args[i+1])
			if !ok {
				c.errNotInteger()
				return
			}
			if n < 1 {
				c.errSyntax()
				return
			}
			count = n
			i++
		case eq(args[i], "match") && i+1 < len(args):
			pattern = args[i+1]
			if len(pattern) == 1 && pattern[0] == '*' {
				pattern = nil
			}
			i++
		case eq(args[i], "type") && i+1 < len(args):
			typ = lower(args[i+1])
			i++
		default:
			c.errSyntax()
			return
		}
	}
	keys, next := c.scanKeys(cursor, count, pattern, typ)
	c.array(2)
	c.bulkString(strconv.FormatUint(next, 10))
	c.array(len(keys))
	for _, k := range keys {
		c.bulk(k)
	}
}

func (c *Client) scanKeys(cursor uint64, count int64, pattern []byte, typ string) ([][]byte, uint64) {
	shards := c.srv.store.Shards()
	si := int(cursor & (1<<scanShardBits - 1))
	tc := cursor >> scanShardBits
	var keys, expired [][]byte
	t := now()
	visited := int64(0)
	for si < len(shards) && visited < count {
		sh := shards[si]
		c.lockShard(sh)
		d := sh.PeekDB(c.db)
		if d == nil {
			tc = 0
		} else {
			for steps := 0; visited < count; steps++ {
				if steps == keysChunkSteps {
					// A huge COUNT: let writers in between chunks.
					c.deleteExpiredMet(sh, expired, t)
					expired = expired[:0]
					c.unlockShard(sh)
					c.lockShard(sh)
					if d = sh.PeekDB(c.db); d == nil {
						tc = 0
						break
					}
					steps = 0
				}
				tc = d.Scan(tc, func(e *shard.Entry) {
					visited++
					if e.Expired(t) {
						expired = append(expired, append([]byte(nil), e.Key()...))
						return
					}
					if typ != "" && e.Type().String() != typ {
						return
					}
					if pattern != nil && !globMatch(pattern, e.Key(), false) {
						return
					}
					keys = append(keys, append([]byte(nil), e.Key()...))
				})
				if tc == 0 {
					break
				}
			}
			c.deleteExpiredMet(sh, expired, t)
			expired = expired[:0]
		}
		c.unlockShard(sh)
		if tc == 0 {
			si++
		}
	}
	if si >= len(shards) {
		return keys, 0
	}
	return keys, tc<<scanShardBits | uint64(si)
}

// deleteExpiredMet deletes, as Redis's SCAN does, the expired keys a walk
// met (after the walk, so the table does not change under it).
func (c *Client) deleteExpiredMet(sh *shard.Shard, expired [][]byte, t int64) {
	for _, k := range expired {
		_, h := c.srv.store.ShardOf(k)
		sh.LookupNoTouch(c.db, h, k, t)
	}
}

// expireGeneric implements EXPIRE, PEXPIRE, EXPIREAT and PEXPIREAT.
func expireGeneric(c *Client, args [][]byte, unit int64, absolute bool) {
	name := lower(args[0])
	var nx, xx, gt, lt bool
	for _, a := range args[3:] {
		switch {
		case eq(a, "nx"):
			nx = true
		case eq(a, "xx"):
			xx = true
		case eq(a, "gt"):
			gt = true
		case eq(a, "lt"):
			lt = true
		default:
			c.err("ERR Unsupported option " + string(a))
			return
		}
	}
	if nx && (xx || gt || lt) {
		c.err("ERR NX and XX, GT or LT options at the same time are not compatible")
		return
	}
	if gt && lt {
		c.err("ERR GT and LT options at the same time are not compatible")
		return
	}
	// The time is read after the options, as Redis does.
	n, ok := parseInt(args[2])
	if !ok {
		c.errNotInteger()
		return
	}
	if n > math.MaxInt64/unit || n < math.MinInt64/unit {
		c.err("ERR invalid expire time in '" + name + "' command")
		return
	}
	at := n * unit
	if !absolute {
		t := now()
		if at > 0 && at > math.MaxInt64-t {
			c.err("ERR invalid expire time in '" + name + "' command")
			return
		}
		at += t
	}
	sh, h := c.lockKey(args[1])
	defer c.unlockKey(sh)
	t := now()
	e, found := sh.Lookup(c.db, h, args[1], t)
	if !found {
		c.int(0)
		return
	}
	cur := e.ExpireAt() // 0 = no expiry, which counts as infinite for GT/LT
	switch {
	case nx && cur != 0, xx && cur == 0:
		c.int(0)
		return
	case gt && (cur == 0 || at <= cur):
		c.int(0)
		return
	case lt && cur != 0 && at >= cur:
		c.int(0)
		return
	}
	if at <= t {
		// A deadline in the past deletes the key, as in Redis (replicated
		// as DEL).
		c.rewrite([]byte("DEL"), args[1])
		sh.DB(c.db).Delete(&e)
		c.notify(kseGeneric, "del", args[1])
		c.int(1)
		return
	}
	// Replicated with the absolute deadline, so replicas agree whenever
	// they apply it.
	c.rewrite(append([][]byte{[]byte("PEXPIREAT"), args[1], strconv.AppendInt(nil, at, 10)}, args[3:]...)...)
	sh.DB(c.db).SetExpireAt(&e, at)
	c.int(1) // Redis's expireGenericCommand replies, then notifies
	c.notify(kseGeneric, "expire", args[1])
}

func ttlGeneric(c *Client, args [][]byte, unit int64, absolute bool) {
	sh, h := c.lockKey(args[1])
	defer c.unlockKey(sh)
	t := now()
	e, found := sh.LookupNoTouch(c.db, h, args[1], t)
	if !found {
		c.keyMiss(args[1])
		c.int(-2)
		return
	}
	at := e.ExpireAt()
	if at == 0 {
		c.int(-1)
		return
	}
	if absolute {
		if unit == 1000 {
			c.int(at / 1000)
		} else {
			c.int(at)
		}
		return
	}
	left := at - t
	if left < 0 {
		left = 0
	}
	if unit == 1000 {
		c.int((left + 500) / 1000)
	} else {
		c.int(left)
	}
}

func cmdPersist(c *Client, args [][]byte) {
	sh, h := c.lockKey(args[1])
	defer c.unlockKey(sh)
	e, found := sh.Lookup(c.db, h, args[1], now())
	if !found || e.ExpireAt() == 0 {
		c.int(0)
		return
	}
	sh.DB(c.db).SetExpireAt(&e, 0)
	c.notify(kseGeneric, "persist", args[1])
	c.int(1)
}
