package server

// Hash field expiry (Redis 7.4 and 8): HEXPIRE HPEXPIRE HEXPIREAT
// HPEXPIREAT HTTL HPTTL HEXPIRETIME HPEXPIRETIME HPERSIST and Redis 8's
// HGETDEL HGETEX HSETEX. Replies and error texts are Redis's (t_hash.c).
// The deadlines live in the hash (types.Hash, hash_ttl.go); the shard's
// Lookup drops expired fields before a command sees the hash, so the
// handlers here never meet one. Writes replicate in deterministic forms:
// HPEXPIREAT with absolute milliseconds, HDEL for fields deleted because
// their deadline is past, HPERSIST.

import (
	"math"
	"strconv"

	"github.com/damselflydb/damselfly/shard"
	"github.com/damselflydb/damselfly/shard/types"
)

// hfeMaxAbsMs is Redis's EB_EXPIRE_TIME_MAX, the largest field deadline.
const hfeMaxAbsMs = int64(1)<<48 - 1

func registerHashTTL(reg registrar) {
	for _, x := range []struct {
		name     string
		unit     int64
		absolute bool
	}{{"hexpire", 1000, false}, {"hpexpire", 1, false}, {"hexpireat", 1000, true}, {"hpexpireat", 1, true}} {
		x := x
		reg(x.name, -6, "write|denyoom|fast", 1, 1, 1, "hash", func(c *Client, a [][]byte) { hexpireGeneric(c, a, x.unit, x.absolute) })
	}
	reg("httl", -5, "readonly|fast", 1, 1, 1, "hash", func(c *Client, a [][]byte) { httlGeneric(c, a, true, false) })
	reg("hpttl", -5, "readonly|fast", 1, 1, 1, "hash", func(c *Client, a [][]byte) { httlGeneric(c, a, false, false) })
	reg("hexpiretime", -5, "readonly|fast", 1, 1, 1, "hash", func(c *Client, a [][]byte) { httlGeneric(c, a, true, true) })
	reg("hpexpiretime", -5, "readonly|fast", 1, 1, 1, "hash", func(c *Client, a [][]byte) { httlGeneric(c, a, false, true) })
	reg("hpersist", -5, "write|fast", 1, 1, 1, "hash", cmdHPersist)
	reg("hgetdel", -5, "write|fast", 1, 1, 1, "hash", cmdHGetDel)
	reg("hgetex", -5, "write|fast", 1, 1, 1, "hash", cmdHGetEx)
	reg("hsetex", -6, "write|denyoom|fast", 1, 1, 1, "hash", cmdHSetEx)
}

// onFieldExpire replicates, logs and announces hash fields the shard
// deleted because they expired (shard.Shard.OnFieldExpire): one HDEL key
// field per field, as Redis 7.4 and 8 propagate (propagateHashFieldDeletion).
func (s *Server) onFieldExpire(db int, key []byte, fields [][]byte, gone bool) {
	if s.repl.IsReplica() {
		return
	}
	a := s.aof.a.Load()
	for _, f := range fields {
		args := [][]byte{[]byte("HDEL"), key, f}
		if a != nil {
			a.Feed(db, args)
		}
		s.repl.Append(db, args)
	}
	s.notifyDB(db, kseHash, "hexpired", key)
	if gone {
		s.notifyDB(db, kseGeneric, "del", key)
	}
}

// hfeFields checks `FIELDS numfields field...` starting at args[at-1]
// and returns the fields; it replies the error itself. pairs: each field
// is followed by a value (HSETEX).
func hfeFields(c *Client, args [][]byte, at int, nummsg string, pairs bool) ([][]byte, bool) {
	if at >= len(args) || !eq(args[at-1], "fields") {
		c.err("ERR Mandatory argument FIELDS is missing or not at the right position")
		return nil, false
	}
	n, ok := parseInt(args[at])
	if !ok || n < 1 {
		c.err("ERR " + nummsg)
		return nil, false
	}
	per := int64(1)
	if pairs {
		per = 2
	}
	if n > int64(len(args)) || n*per != int64(len(args)-at-1) {
		c.err("ERR The `numfields` parameter must match the number of arguments")
		return nil, false
	}
	return args[at+1:], true
}

const (
	hfeNX = 1 + iota
	hfeXX
	hfeGT
	hfeLT
)

func hexpireGeneric(c *Client, args [][]byte, unit int64, absolute bool) {
	name := lower(args[0])
	sh, h := c.lockKey(args[1])
	defer c.unlockKey(sh)
	e, found, bad := c.getColl(sh, h, args[1], shard.TypeHash)
	if bad {
		return
	}
	at, ok := parseInt(args[2])
	if !ok {
		c.errNotInteger()
		return
	}
	if at < 0 {
		c.err("ERR invalid expire time, must be >= 0")
		return
	}
	if unit == 1000 {
		if at > hfeMaxAbsMs/1000 {
			c.err("ERR invalid expire time in '" + name + "' command")
			return
		}
		at *= 1000
	}
	t := now()
	base := int64(0)
	if !absolute {
		base = t
	}
	if at > hfeMaxAbsMs-base {
		c.err("ERR invalid expire time in '" + name + "' command")
		return
	}
	at += base
	cond, fat := 0, 4
	switch {
	case eq(args[3], "nx"):
		cond = hfeNX
	case eq(args[3], "xx"):
		cond = hfeXX
	case eq(args[3], "gt"):
		cond = hfeGT
	case eq(args[3], "lt"):
		cond = hfeLT
	}
	if cond != 0 {
		fat++
	}
	fields, ok := hfeFields(c, args, fat, "Parameter `numFields` should be greater than 0", false)
	if !ok {
		return
	}
	c.array(len(fields))
	if !found {
		for range fields {
			c.int(-2)
		}
		return
	}
	b := c.hfeBatch(sh, &e, args[1], t)
	for _, f := range fields {
		if !b.hs.Exists(f) {
			c.int(-2)
			continue
		}
		prev := b.hs.FieldExpireAt(f)
		if prev == 0 {
			if cond == hfeXX || cond == hfeGT {
				c.int(0)
				continue
			}
		} else if cond == hfeNX || (cond == hfeGT && prev >= at) || (cond == hfeLT && prev <= at) {
			c.int(0)
			continue
		}
		c.int(b.expire(f, at))
	}
	var condArg []byte
	if cond != 0 {
		condArg = args[3]
	}
	b.done(at, condArg, true)
}

// fieldTTLBatch is the per-field work HEXPIRE's family, HPERSIST and
// HGETEX share on one hash: deadlines set or removed, fields whose new
// deadline is already past deleted; then replicated and announced once.
type fieldTTLBatch struct {
	c        *Client
	d        *shard.DB
	e        *shard.Entry
	hs       *types.Hash
	key      []byte
	t        int64 // the command's time
	modified bool
	w        types.W  // the right to change hs, once modified
	changed  [][]byte // deadline set or removed
	deleted  [][]byte // deleted: the deadline was past
}

func (c *Client) hfeBatch(sh *shard.Shard, e *shard.Entry, key []byte, t int64) fieldTTLBatch {
	return fieldTTLBatch{c: c, d: sh.DB(c.db), e: e, hs: e.Obj().(*types.Hash), key: key, t: t}
}

func (b *fieldTTLBatch) modify() {
	if !b.modified {
		b.w = b.d.Modify(b.e)
		b.modified = true
	}
}

// expire gives field f (present) the deadline at, or deletes it when at is
// already past: Redis's reply, 1 set, 2 deleted. A replica applies its
// primary's deadline as sent (the primary replicates its own HDELs).
func (b *fieldTTLBatch) expire(f []byte, at int64) int64 {
	b.modify()
	if at <= b.t && !b.c.fromPrimary {
		b.hs.Delete(b.w, f)
		b.deleted = append(b.deleted, f)
		return 2
	}
	b.hs.SetFieldExpireAt(b.w, f, at)
	b.changed = append(b.changed, f)
	return 1
}

// persist removes field f's deadline: 1, or -1 when it had none.
func (b *fieldTTLBatch) persist(f []byte) int64 {
	if b.hs.FieldExpireAt(f) == 0 {
		return -1
	}
	b.modify()
	b.hs.PersistField(b.w, f)
	b.changed = append(b.changed, f)
	return 1
}

// done replicates what changed when rewrite is set (an HDEL per deleted
// field, then HPEXPIREAT at [cond], or HPERSIST when at is 0, for the
// fields changed), raises Redis's event (hdel, else hexpire or hpersist)
// and deletes the hash when it was emptied.
func (b *fieldTTLBatch) done(at int64, cond []byte, rewrite bool) {
	c, key := b.c, b.key
	if rewrite {
		var prop [][][]byte
		for _, f := range b.deleted {
			prop = append(prop, [][]byte{[]byte("HDEL"), key, f})
		}
		if len(b.changed) > 0 {
			n := strconv.AppendInt(nil, int64(len(b.changed)), 10)
			var p [][]byte
			if at == 0 {
				p = [][]byte{[]byte("HPERSIST"), key, []byte("FIELDS"), n}
			} else {
				p = [][]byte{[]byte("HPEXPIREAT"), key, strconv.AppendInt(nil, at, 10)}
				if cond != nil {
					p = append(p, cond)
				}
				p = append(p, []byte("FIELDS"), n)
			}
			prop = append(prop, append(p, b.changed...))
		}
		c.rewriteMany(prop)
	}
	if at != 0 && len(b.changed) > 0 {
		b.d.NoteFieldTTL(key)
	}
	switch {
	case len(b.deleted) > 0:
		c.notify(kseHash, "hdel", key)
		if b.hs.Len() == 0 {
			b.d.Delete(b.e)
			c.notify(kseGeneric, "del", key)
		}
	case len(b.changed) > 0 && at == 0:
		c.notify(kseHash, "hpersist", key)
	case len(b.changed) > 0:
		c.notify(kseHash, "hexpire", key)
	}
}

// httlGeneric is HTTL, HPTTL (relative) and HEXPIRETIME, HPEXPIRETIME
// (absolute), in seconds or milliseconds.
func httlGeneric(c *Client, args [][]byte, seconds, absolute bool) {
	sh, hs, bad := c.readHash(args[1])
	defer c.unlockKey(sh)
	if bad {
		return
	}
	fields, ok := hfeFields(c, args, 3, "Number of fields must be a positive integer", false)
	if !ok {
		return
	}
	base := int64(0)
	if !absolute {
		base = now()
	}
	c.array(len(fields))
	for _, f := range fields {
		switch {
		case hs == nil || !hs.Exists(f):
			c.int(-2)
		case hs.FieldExpireAt(f) == 0:
			c.int(-1)
		case seconds:
			c.int((hs.FieldExpireAt(f) + 999 - base) / 1000)
		default:
			c.int(hs.FieldExpireAt(f) - base)
		}
	}
}

func cmdHPersist(c *Client, args [][]byte) {
	sh, h := c.lockKey(args[1])
	defer c.unlockKey(sh)
	e, found, bad := c.getColl(sh, h, args[1], shard.TypeHash)
	if bad {
		return
	}
	fields, ok := hfeFields(c, args, 3, "Number of fields must be a positive integer", false)
	if !ok {
		return
	}
	c.array(len(fields))
	if !found {
		for range fields {
			c.int(-2)
		}
		return
	}
	b := c.hfeBatch(sh, &e, args[1], now())
	for _, f := range fields {
		if !b.hs.Exists(f) {
			c.int(-2)
			continue
		}
		c.int(b.persist(f))
	}
	b.done(0, nil, false) // replicated as sent
}

// cmdHGetDel is Redis 8's HGETDEL key FIELDS numfields field...: the
// values, then the fields deleted (replicated as HDEL).
func cmdHGetDel(c *Client, args [][]byte) {
	sh, h := c.lockKey(args[1])
	defer c.unlockKey(sh)
	e, found, bad := c.getColl(sh, h, args[1], shard.TypeHash)
	if bad {
		return
	}
	fields, ok := hfeFields(c, args, 3, "Number of fields must be a positive integer", false)
	if !ok {
		return
	}
	c.array(len(fields))
	if !found {
		for range fields {
			c.null()
		}
		return
	}
	hs := e.Obj().(*types.Hash)
	var gone [][]byte
	var w types.W
	for _, f := range fields {
		v, ok := hs.Get(f)
		if !ok {
			c.null()
			continue
		}
		c.bulk(v)
		if len(gone) == 0 {
			w = sh.DB(c.db).Modify(&e)
		}
		hs.Delete(w, f)
		gone = append(gone, f)
	}
	if len(gone) == 0 {
		return
	}
	c.rewrite(append([][]byte{[]byte("HDEL"), args[1]}, gone...)...)
	c.notify(kseHash, "hdel", args[1])
	if hs.Len() == 0 {
		sh.DB(c.db).Delete(&e)
		c.notify(kseGeneric, "del", args[1])
	}
}

// hincrbyfloatKeepTTL replicates HINCRBYFLOAT of a field with a deadline
// as HSETEX KEEPTTL (HSET would drop the deadline on the replica), as
// Redis 8 does.
func hincrbyfloatKeepTTL(c *Client, hs *types.Hash, key, field, val []byte) {
	if hs.FieldExpireAt(field) != 0 {
		c.rewrite([]byte("HSETEX"), key, []byte("KEEPTTL"), []byte("FIELDS"), []byte("1"), field, val)
	}
}

// hfeParseTime is Redis's parseExpireTime for HGETEX and HSETEX: a
// deadline in Unix ms from a relative (base = now) or absolute (base = 0)
// time in seconds (unit 1000) or milliseconds.
func hfeParseTime(c *Client, name, arg []byte, unit, base int64) (int64, bool) {
	v, ok := parseInt(arg)
	if !ok {
		c.errNotInteger()
		return 0, false
	}
	if v < 0 {
		c.err("ERR invalid expire time, must be >= 0")
		return 0, false
	}
	if unit == 1000 {
		if v > hfeMaxAbsMs/1000 {
			c.err("ERR invalid expire time in '" + lower(name) + "' command")
			return 0, false
		}
		v *= 1000
	}
	if v > hfeMaxAbsMs-base {
		c.err("ERR invalid expire time in '" + lower(name) + "' command")
		return 0, false
	}
	return v + base, true
}

// cmdHGetEx is Redis 8's HGETEX key [EX s|PX ms|EXAT s|PXAT ms|PERSIST]
// FIELDS numfields field...: the values, with the fields' deadlines set or
// removed. Replicated as HPEXPIREAT, HPERSIST or HDEL.
func cmdHGetEx(c *Client, args [][]byte) {
	sh, h := c.lockKey(args[1])
	defer c.unlockKey(sh)
	e, found, bad := c.getColl(sh, h, args[1], shard.TypeHash)
	if bad {
		return
	}
	var at int64
	persist, setAt := false, false
	fat := 3
	switch {
	case eq(args[2], "ex"), eq(args[2], "px"), eq(args[2], "exat"), eq(args[2], "pxat"):
		unit, base := int64(1), int64(0)
		if eq(args[2], "ex") || eq(args[2], "exat") {
			unit = 1000
		}
		if eq(args[2], "ex") || eq(args[2], "px") {
			base = now()
		}
		var ok bool
		if at, ok = hfeParseTime(c, args[0], args[3], unit, base); !ok {
			return
		}
		setAt = true
		fat += 2
	case eq(args[2], "persist"):
		persist = true
		fat++
	}
	fields, ok := hfeFields(c, args, fat, "Number of fields must be a positive integer", false)
	if !ok {
		return
	}
	c.array(len(fields))
	if !found {
		for range fields {
			c.null()
		}
		return
	}
	b := c.hfeBatch(sh, &e, args[1], now())
	for _, f := range fields {
		v, ok := b.hs.Get(f)
		if !ok {
			c.null()
			continue
		}
		c.bulk(v)
		switch {
		case persist:
			b.persist(f)
		case setAt:
			b.expire(f, at)
		}
	}
	if persist {
		at = 0
	}
	b.done(at, nil, true)
}

const (
	hsxFNX = 1 << iota
	hsxFXX
	hsxKeepTTL
	hsxAt
)

// cmdHSetEx is Redis 8's HSETEX key [FNX|FXX] [EX s|PX ms|EXAT s|PXAT
// ms|KEEPTTL] FIELDS numfields field value...: 1 when the fields were
// set, 0 when FNX/FXX stopped it. Replicated with PXAT (absolute ms), or
// as HDELs when the deadline is already past.
func cmdHSetEx(c *Client, args [][]byte) {
	o, ok := parseHSetEx(c, args)
	if !ok {
		return
	}
	sh, h := c.lockKey(args[1])
	defer c.unlockKey(sh)
	e, found, bad := c.getColl(sh, h, args[1], shard.TypeHash)
	if bad {
		return
	}
	if !o.conditionHolds(e, found, args) {
		c.int(0)
		return
	}
	e, hs, w, _ := c.writeHash(sh, h, args[1], true)
	dels := o.setFields(c, hs, w, args)
	d := sh.DB(c.db)
	o.propagate(c, d, args, dels)
	c.int(1)
	c.notify(kseHash, "hset", args[1])
	switch {
	case len(dels) > 0:
		c.notify(kseHash, "hdel", args[1])
	case o.flags&hsxAt != 0:
		c.notify(kseHash, "hexpire", args[1])
	}
	if hs.Len() == 0 {
		d.Delete(&e)
		c.notify(kseGeneric, "del", args[1])
	}
}

// hsetexOptions is a parsed HSETEX: the hsx flags, the deadline (absolute
// ms) and where it was given, and the field/value pairs' place in args.
type hsetexOptions struct {
	flags        int
	at           int64
	atPos        int // index of the deadline argument, -1 without one
	first, count int // args[first:] holds count field/value pairs
}

// parseHSetEx parses HSETEX's options up to FIELDS, answering the first
// error as Redis does.
func parseHSetEx(c *Client, args [][]byte) (hsetexOptions, bool) {
	o := hsetexOptions{atPos: -1, first: -1}
	for i := 2; i < len(args) && o.first < 0; i++ {
		a := args[i]
		switch {
		case eq(a, "fields"):
			if !o.parseFields(c, args, i) {
				return o, false
			}
		case eq(a, "ex"), eq(a, "px"), eq(a, "exat"), eq(a, "pxat"):
			if o.flags&(hsxAt|hsxKeepTTL) != 0 {
				c.err("ERR Only one of EX, PX, EXAT, PXAT or KEEPTTL arguments can be specified")
				return o, false
			}
			if i >= len(args)-1 {
				c.err("ERR missing expire time")
				return o, false
			}
			unit, base := int64(1), int64(0)
			if eq(a, "ex") || eq(a, "exat") {
				unit = 1000
			}
			if eq(a, "ex") || eq(a, "px") {
				base = now()
			}
			i++
			var ok bool
			if o.at, ok = hfeParseTime(c, args[0], args[i], unit, base); !ok {
				return o, false
			}
			o.flags |= hsxAt
			o.atPos = i
		case eq(a, "keepttl"):
			if o.flags&(hsxAt|hsxKeepTTL) != 0 {
				c.err("ERR Only one of EX, PX, EXAT, PXAT or KEEPTTL arguments can be specified")
				return o, false
			}
			o.flags |= hsxKeepTTL
		case eq(a, "fxx"), eq(a, "fnx"):
			if o.flags&(hsxFNX|hsxFXX) != 0 {
				c.err("ERR Only one of FXX or FNX arguments can be specified")
				return o, false
			}
			if eq(a, "fxx") {
				o.flags |= hsxFXX
			} else {
				o.flags |= hsxFNX
			}
		default:
			c.err("ERR unknown argument: " + string(a))
			return o, false
		}
	}
	if o.first < 0 {
		// Every argument was an option: Redis asserts here; answer as a
		// missing FIELDS would be.
		c.err("ERR wrong number of arguments for '" + lower(args[0]) + "' command")
		return o, false
	}
	return o, true
}

// parseFields checks FIELDS numfields at args[i] against the pairs that
// follow it.
func (o *hsetexOptions) parseFields(c *Client, args [][]byte, i int) bool {
	if i >= len(args)-3 {
		c.err("ERR wrong number of arguments for '" + lower(args[0]) + "' command")
		return false
	}
	n, ok := parseInt(args[i+1])
	if !ok || n < 1 || n > math.MaxInt32 {
		c.err("ERR invalid number of fields")
		return false
	}
	rem := len(args) - i - 2
	if rem%2 != 0 || n != int64(rem/2) {
		c.err("ERR wrong number of arguments for '" + lower(args[0]) + "' command")
		return false
	}
	o.first, o.count = i+2, int(n)
	return true
}

// conditionHolds reports whether FNX/FXX let the command set the fields
// of the hash e (found: it exists).
func (o *hsetexOptions) conditionHolds(e shard.Entry, found bool, args [][]byte) bool {
	if !found && o.flags&hsxFXX != 0 {
		return false
	}
	if o.flags&(hsxFNX|hsxFXX) != 0 && found {
		hs := e.Obj().(*types.Hash)
		n := 0
		for i := 0; i < o.count; i++ {
			if hs.Exists(args[o.first+2*i]) {
				n++
			}
		}
		if (o.flags&hsxFNX != 0 && n > 0) || (o.flags&hsxFXX != 0 && n != o.count) {
			return false
		}
	}
	return true
}

// setFields sets the pairs and their deadline; a deadline already past
// deletes the fields (except on a replica, which waits for the primary's
// HDEL), and those are returned.
func (o *hsetexOptions) setFields(c *Client, hs *types.Hash, w types.W, args [][]byte) (dels [][]byte) {
	lim := c.lim()
	t := now()
	for i := 0; i < o.count; i++ {
		f, v := args[o.first+2*i], args[o.first+2*i+1]
		if o.flags&(hsxAt|hsxKeepTTL) != 0 {
			hs.SetKeepTTL(w, f, v, lim)
		} else {
			hs.Set(w, f, v, lim)
		}
		if o.flags&hsxAt == 0 {
			continue
		}
		if o.at <= t && !c.fromPrimary {
			hs.Delete(w, f)
			dels = append(dels, f)
			continue
		}
		hs.SetFieldExpireAt(w, f, o.at)
	}
	return dels
}

// propagate replicates the command with its deadline as PXAT, or the
// deleted fields as HDELs.
func (o *hsetexOptions) propagate(c *Client, d *shard.DB, args [][]byte, dels [][]byte) {
	switch {
	case len(dels) > 0:
		// The fields are gone: replicate their deletion, not the command.
		prop := make([][][]byte, 0, len(dels))
		for _, f := range dels {
			prop = append(prop, [][]byte{[]byte("HDEL"), args[1], f})
		}
		c.rewriteMany(prop)
	case o.flags&hsxAt != 0:
		d.NoteFieldTTL(args[1])
		p := append([][]byte(nil), args...)
		p[o.atPos-1] = []byte("PXAT")
		p[o.atPos] = strconv.AppendInt(nil, o.at, 10)
		c.rewrite(p...)
	}
}

// liveHash is hs without the fields expired at now: hs itself when none
// is, else a copy. Expired fields outlive their deadline on a replica
// (until the primary's HDEL), while CLIENT PAUSE WRITE holds expiry, and
// for HLEN; Redis 7.4 and 8 hide them from the field readers meanwhile
// (HGET, HEXISTS, HGETALL, HSCAN, HTTL ...), but HLEN and, on a replica,
// HRANDFIELD still count them.
func liveHash(hs *types.Hash, now int64) *types.Hash {
	if at := hs.NextFieldExpiry(); at == 0 || at > now {
		return hs
	}
	cp, w := hs.CloneW()
	if cp.ExpireFields(w, now, nil) == 0 {
		return hs
	}
	return cp
}

// cmdHLen counts the fields expired but not reclaimed yet, as Redis 7.4
// and 8 (hashTypeLength(o, 0)): its lookup leaves them in place.
func cmdHLen(c *Client, args [][]byte) {
	sh, h := c.lockKey(args[1])
	defer c.unlockKey(sh)
	e, found := sh.LookupStaleFields(c.db, h, args[1], now())
	switch {
	case !found:
		c.keyMiss(args[1])
		c.int(0)
	case e.Type() != shard.TypeHash:
		c.errWrongType()
	default:
		c.int(int64(e.Obj().(*types.Hash).Len()))
	}
}

// infoExpiredSubkeys is INFO's expired_subkeys (Redis 7.4): hash fields
// removed because they expired.
func (s *Server) infoExpiredSubkeys(c *Client, field func(name string, v any)) {
	var n int64
	for _, sh := range s.store.Shards() {
		c.lockShard(sh)
		n += sh.ExpiredFields()
		c.unlockShard(sh)
	}
	field("expired_subkeys", n)
}
