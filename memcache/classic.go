package memcache

import (
	"strconv"

	"github.com/damselflydb/damselfly/shard"
)

// The classic text commands, with memcached 1.6's argument rules and replies.

// cmdStore parses set/add/replace/append/prepend/cas and waits for the data.
func (c *conn) cmdStore(t [][]byte, mode storeMode) {
	n := len(t)
	if (mode == modeCAS && n != 6 && n != 7) || (mode != modeCAS && n != 5 && n != 6) {
		c.reply("ERROR\r\n")
		return
	}
	nr := noreply(t)
	if !validKey(t[1]) {
		c.replyUnless(nr, "CLIENT_ERROR bad command line format\r\n")
		return
	}
	flags, ok1 := parseFlags(t[2])
	exptime, ok2 := parseExptime(t[3])
	vlen, ok3 := parseInt32(t[4])
	if !ok1 || !ok2 || !ok3 {
		c.replyUnless(nr, "CLIENT_ERROR bad command line format\r\n")
		return
	}
	var cas uint64
	if mode == modeCAS {
		var ok bool
		if cas, ok = parseUint64(t[5]); !ok {
			c.replyUnless(nr, "CLIENT_ERROR bad command line format\r\n")
			return
		}
	}
	if vlen < 0 {
		c.replyUnless(nr, "CLIENT_ERROR bad command line format\r\n")
		return
	}
	if c.tooLarge(len(t[1]), int(vlen)) {
		c.s.stats.storeTooLarge.Add(1)
		c.replyUnless(nr, "SERVER_ERROR object too large for cache\r\n")
		c.swallow = int(vlen) + 2
		if mode == modeSet {
			// Like memcached: a failed set must not leave stale data.
			c.deleteKey(t[1], false)
		}
		return
	}
	c.pend = pending{active: true, mode: mode, key: append(c.pend.key[:0], t[1]...), flags: flags,
		exp: exptimeToDeadline(exptime, c.nowMs()), n: int(vlen), cas: cas, noreply: nr}
}

// tooLarge applies --max_item_size to key plus value plus memcached's
// per-item overhead (header, CAS, terminators).
func (c *conn) tooLarge(klen, vlen int) bool {
	return klen+vlen+itemOverhead > c.s.cfg.MaxItemSize
}

const itemOverhead = 48 + 8 + 1 + 2

func (c *conn) replyUnless(quiet bool, s string) {
	if !quiet {
		c.reply(s)
	}
}

// complete runs a storage command whose data block has arrived.
func (c *conn) complete(data []byte) {
	p := &c.pend
	c.s.stats.cmdSet.Add(1)
	if p.meta {
		c.completeMetaSet(data)
		return
	}
	r := storeReq{mode: p.mode, key: p.key, val: data, flags: p.flags, exp: p.exp, cas: p.cas}
	res := c.store(&r)
	if p.noreply {
		return
	}
	switch res {
	case stored:
		c.reply("STORED\r\n")
	case notStored:
		c.reply("NOT_STORED\r\n")
	case exists:
		c.reply("EXISTS\r\n")
	case notFound:
		c.reply("NOT_FOUND\r\n")
	case noMemory:
		c.reply(outOfMemory)
	}
}

// cmdGet serves get, gets, gat and gats.
func (c *conn) cmdGet(t [][]byte, withCAS, touch bool) {
	keys := t[1:]
	var exp int64
	if touch {
		if len(t) < 2 {
			c.reply("ERROR\r\n")
			return
		}
		e, ok := parseExptime(t[1])
		if !ok {
			c.reply("CLIENT_ERROR invalid exptime argument\r\n")
			return
		}
		exp = exptimeToDeadline(e, c.nowMs())
		keys = t[2:]
	}
	if len(keys) == 0 {
		c.reply("ERROR\r\n")
		return
	}
	for _, k := range keys {
		if !validKey(k) {
			c.reply("CLIENT_ERROR bad command line format\r\n")
			return
		}
		c.getOne(k, withCAS, touch, exp)
	}
	c.reply("END\r\n")
}

func (c *conn) getOne(key []byte, withCAS, touch bool, exp int64) {
	sh, h := c.lock(key)
	defer sh.Unlock()
	if touch {
		c.s.stats.cmdTouch.Add(1)
	}
	c.s.stats.cmdGet.Add(1)
	e, ok := lookup(sh, h, key, c.nowMs())
	if !ok {
		c.s.stats.getMisses.Add(1)
		if touch {
			c.s.stats.touchMisses.Add(1)
		}
		return
	}
	c.s.stats.getHits.Add(1)
	if touch {
		c.s.stats.touchHits.Add(1)
		if !c.setExpiry(sh, h, &e, exp) {
			return
		}
	}
	c.out = append(c.out, "VALUE "...)
	c.out = append(c.out, e.Key()...)
	c.out = append(c.out, ' ')
	c.out = strconv.AppendUint(c.out, uint64(e.MCFlags()), 10)
	c.out = append(c.out, ' ')
	c.out = strconv.AppendInt(c.out, int64(len(e.Str())), 10)
	if withCAS {
		cas := c.casOf(sh, h, &e)
		c.out = append(c.out, ' ')
		c.out = strconv.AppendUint(c.out, cas, 10)
	}
	c.out = append(c.out, "\r\n"...)
	c.out = append(c.out, e.Str()...)
	c.out = append(c.out, "\r\n"...)
	noteAccess(sh, &e)
}

// setExpiry changes a live item's deadline and journals it; an expNow
// deadline deletes the item (false: it is gone).
func (c *conn) setExpiry(sh *shard.Shard, h uint64, e *shard.Entry, exp int64) bool {
	if exp == expNow {
		c.remove(sh, e)
		return false
	}
	*e = sh.DB(db).SetExpireAt(e, exp)
	c.journalExpire(e.Key(), exp)
	return true
}

func (c *conn) cmdTouch(t [][]byte) {
	if len(t) != 3 && len(t) != 4 {
		c.reply("ERROR\r\n")
		return
	}
	nr := noreply(t)
	if !validKey(t[1]) {
		c.replyUnless(nr, "CLIENT_ERROR bad command line format\r\n")
		return
	}
	e, ok := parseExptime(t[2])
	if !ok {
		c.replyUnless(nr, "CLIENT_ERROR invalid exptime argument\r\n")
		return
	}
	c.s.stats.cmdTouch.Add(1)
	if c.touch(t[1], exptimeToDeadline(e, c.nowMs())) {
		c.s.stats.touchHits.Add(1)
		c.replyUnless(nr, "TOUCHED\r\n")
	} else {
		c.s.stats.touchMisses.Add(1)
		c.replyUnless(nr, "NOT_FOUND\r\n")
	}
}

func (c *conn) touch(key []byte, exp int64) bool {
	sh, h := c.lock(key)
	defer sh.Unlock()
	e, ok := lookup(sh, h, key, c.nowMs())
	if !ok {
		return false
	}
	c.setExpiry(sh, h, &e, exp)
	return true
}

func (c *conn) cmdDelete(t [][]byte) {
	n := len(t)
	if n < 2 || n > 4 {
		c.reply("ERROR\r\n")
		return
	}
	nr := noreply(t)
	if n > 2 {
		zero := string(t[2]) == "0"
		if !((n == 3 && (zero || nr)) || (n == 4 && zero && nr)) {
			c.replyUnless(nr, "CLIENT_ERROR bad command line format.  Usage: delete <key> [noreply]\r\n")
			return
		}
	}
	if !validKey(t[1]) {
		c.replyUnless(nr, "CLIENT_ERROR bad command line format\r\n")
		return
	}
	if c.deleteKey(t[1], false) {
		c.s.stats.deleteHits.Add(1)
		c.replyUnless(nr, "DELETED\r\n")
	} else {
		c.s.stats.deleteMisses.Add(1)
		c.replyUnless(nr, "NOT_FOUND\r\n")
	}
}

// deleteKey deletes a live string item (any type when anyType).
func (c *conn) deleteKey(key []byte, anyType bool) bool {
	sh, h := c.lock(key)
	defer sh.Unlock()
	e, ok := sh.Lookup(db, h, key, c.nowMs())
	if !ok || (!anyType && e.Type() != shard.TypeString) {
		return false
	}
	c.remove(sh, &e)
	return true
}

func (c *conn) cmdArith(t [][]byte, incr bool) {
	if len(t) != 3 && len(t) != 4 {
		c.reply("ERROR\r\n")
		return
	}
	nr := noreply(t)
	if !validKey(t[1]) {
		c.replyUnless(nr, "CLIENT_ERROR bad command line format\r\n")
		return
	}
	delta, ok := parseUint64(t[2])
	if !ok {
		c.replyUnless(nr, "CLIENT_ERROR invalid numeric delta argument\r\n")
		return
	}
	var a arithReq
	a.key, a.incr, a.delta = t[1], incr, delta
	switch c.arith(&a) {
	case notFound:
		c.replyUnless(nr, "NOT_FOUND\r\n")
	case notStored:
		c.replyUnless(nr, "CLIENT_ERROR cannot increment or decrement non-numeric value\r\n")
	case noMemory:
		c.replyUnless(nr, outOfMemory)
	default:
		if !nr {
			c.out = strconv.AppendUint(c.out, a.value, 10)
			c.out = append(c.out, "\r\n"...)
		}
	}
}

type arithReq struct {
	key       []byte
	incr      bool
	delta     uint64
	cas       uint64 // compare when non-zero (ma C)
	vivify    bool   // create with initial when missing (ma N)
	initial   uint64
	vivifyExp int64
	touch     bool // set exp (ma T)
	exp       int64
	// results
	value  uint64
	outCAS uint64
	outExp int64
	flags  uint32
}

// arith runs incr/decr: a 64-bit unsigned counter that wraps on incr and
// floors at 0 on decr. Results: stored, notFound, notStored (non-numeric),
// exists (CAS mismatch).
func (c *conn) arith(a *arithReq) storeResult {
	sh, h := c.lock(a.key)
	defer sh.Unlock()
	if !c.admit(sh) {
		return noMemory
	}
	e, ok := sh.Lookup(db, h, a.key, c.nowMs())
	hit := func(ok bool) {
		switch {
		case a.incr && ok:
			c.s.stats.incrHits.Add(1)
		case a.incr:
			c.s.stats.incrMisses.Add(1)
		case ok:
			c.s.stats.decrHits.Add(1)
		default:
			c.s.stats.decrMisses.Add(1)
		}
	}
	if !ok {
		hit(false)
		if !a.vivify {
			return notFound
		}
		if a.vivifyExp == expNow {
			a.value = a.initial
			return stored
		}
		val := strconv.AppendUint(c.num2[:0], a.initial, 10)
		ne := c.put(sh, h, a.key, val, 0, a.vivifyExp, 0)
		a.value, a.outCAS, a.outExp = a.initial, ne.MCCAS(), ne.ExpireAt()
		return stored
	}
	if e.Type() != shard.TypeString {
		return notStored
	}
	if a.cas != 0 && peekCAS(&e) != a.cas {
		return exists
	}
	v, ok := parseNumericValue(e.Str())
	if !ok {
		return notStored
	}
	hit(true)
	switch {
	case a.incr:
		v += a.delta
	case a.delta > v:
		v = 0
	default:
		v -= a.delta
	}
	exp := e.ExpireAt()
	if a.touch {
		exp = a.exp
	}
	a.value, a.flags = v, e.MCFlags()
	if exp == expNow {
		c.remove(sh, &e)
		return stored
	}
	val := strconv.AppendUint(c.num2[:0], v, 10)
	ne := c.put(sh, h, a.key, val, e.MCFlags(), exp, 0)
	a.outCAS, a.outExp = ne.MCCAS(), ne.ExpireAt()
	return stored
}

func (c *conn) cmdVerbosity(t [][]byte) {
	nr := noreply(t)
	if _, ok := parseUint64(t[1]); !ok || (len(t) == 3 && !nr) {
		c.replyUnless(nr, "CLIENT_ERROR bad command line format\r\n")
		return
	}
	c.replyUnless(nr, "OK\r\n")
}
