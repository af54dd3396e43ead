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
// deleted because they expired (shard.Shard.OnFieldExpire).
func (s *Server) onFieldExpire(db int, key []byte, fields [][]byte, gone bool) {
	if s.repl.IsReplica() {
		return
	}
	args := append([][]byte{[]byte("HDEL"), key}, fields...)
	if a := s.aof.a.Load(); a != nil {
		a.Feed(db, args)
	}
	s.repl.Append(db, args)
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
	d := sh.DB(c.db)
	w := d.Modify(&e)
	hs := e.Obj().(*types.Hash)
	var prop [][][]byte
	var set [][]byte
	deleted := 0
	for _, f := range fields {
		if !hs.Exists(f) {
			c.int(-2)
			continue
		}
		prev := hs.FieldExpireAt(f)
		if prev == 0 {
			if cond == hfeXX || cond == hfeGT {
				c.int(0)
				continue
			}
		} else if cond == hfeNX || (cond == hfeGT && prev >= at) || (cond == hfeLT && prev <= at) {
			c.int(0)
			continue
		}
		if at <= t && !c.fromPrimary {
			hs.Delete(w, f)
			prop = append(prop, [][]byte{[]byte("HDEL"), args[1], f})
			deleted++
			c.int(2)
			continue
		}
		hs.SetFieldExpireAt(w, f, at)
		set = append(set, f)
		c.int(1)
	}
	if len(set) > 0 {
		p := [][]byte{[]byte("HPEXPIREAT"), args[1], strconv.AppendInt(nil, at, 10)}
		if cond != 0 {
			p = append(p, args[3])
		}
		p = append(p, []byte("FIELDS"), strconv.AppendInt(nil, int64(len(set)), 10))
		prop = append(prop, append(p, set...))
		d.NoteFieldTTL(args[1])
	}
	c.rewriteMany(prop)
	switch {
	case deleted > 0 && hs.Len() == 0:
		d.Delete(&e)
		c.notify(kseHash, "hdel", args[1])
		c.notify(kseGeneric, "del", args[1])
	case deleted > 0:
		c.notify(kseHash, "hdel", args[1])
	case len(set) > 0:
		c.notify(kseHash, "hexpire", args[1])
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
	hs := e.Obj().(*types.Hash)
	changed := false
	var w types.W
	for _, f := range fields {
		switch {
		case !hs.Exists(f):
			c.int(-2)
		case hs.FieldExpireAt(f) == 0:
			c.int(-1)
		default:
			if !changed {
				w = sh.DB(c.db).Modify(&e)
				changed = true
			}
			hs.PersistField(w, f)
			c.int(1)
		}
	}
	if changed {
		c.notify(kseHash, "hpersist", args[1])
	}
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
	hs := e.Obj().(*types.Hash)
	d := sh.DB(c.db)
	t := now()
	var prop [][][]byte
	var changed [][]byte
	deleted := 0
	for _, f := range fields {
		v, ok := hs.Get(f)
		if !ok {
			c.null()
			continue
		}
		c.bulk(v)
		switch {
		case persist:
			if hs.FieldExpireAt(f) != 0 {
				w := d.Modify(&e)
				hs.PersistField(w, f)
				changed = append(changed, f)
			}
		case setAt && at <= t && !c.fromPrimary:
			w := d.Modify(&e)
			hs.Delete(w, f)
			prop = append(prop, [][]byte{[]byte("HDEL"), args[1], f})
			deleted++
		case setAt:
			w := d.Modify(&e)
			hs.SetFieldExpireAt(w, f, at)
			changed = append(changed, f)
		}
	}
	if len(changed) > 0 {
		n := strconv.AppendInt(nil, int64(len(changed)), 10)
		if persist {
			prop = append(prop, append([][]byte{[]byte("HPERSIST"), args[1], []byte("FIELDS"), n}, changed...))
			c.notify(kseHash, "hpersist", args[1])
		} else {
			prop = append(prop, append([][]byte{[]byte("HPEXPIREAT"), args[1], strconv.AppendInt(nil, at, 10), []byte("FIELDS"), n}, changed...))
			d.NoteFieldTTL(args[1])
			c.notify(kseHash, "hexpire", args[1])
		}
	} else if deleted > 0 {
		c.notify(kseHash, "hdel", args[1])
	}
	c.rewriteMany(prop)
	if deleted > 0 && hs.Len() == 0 {
		d.Delete(&e)
		c.notify(kseGeneric, "del", args[1])
	}
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
	flags := 0
	var at int64
	atPos, first, count := -1, -1, 0
	for i := 2; i < len(args) && first < 0; i++ {
		a := args[i]
		switch {
		case eq(a, "fields"):
			if i >= len(args)-3 {
				c.err("ERR wrong number of arguments for '" + lower(args[0]) + "' command")
				return
			}
			n, ok := parseInt(args[i+1])
			if !ok || n < 1 || n > math.MaxInt32 {
				c.err("ERR invalid number of fields")
				return
			}
			rem := len(args) - i - 2
			if rem%2 != 0 || n != int64(rem/2) {
				c.err("ERR wrong number of arguments for '" + lower(args[0]) + "' command")
				return
			}
			first, count = i+2, int(n)
		case eq(a, "ex"), eq(a, "px"), eq(a, "exat"), eq(a, "pxat"):
			if flags&(hsxAt|hsxKeepTTL) != 0 {
				c.err("ERR Only one of EX, PX, EXAT, PXAT or KEEPTTL arguments can be specified")
				return
			}
			if i >= len(args)-1 {
				c.err("ERR missing expire time")
				return
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
			if at, ok = hfeParseTime(c, args[0], args[i], unit, base); !ok {
				return
			}
			flags |= hsxAt
			atPos = i
		case eq(a, "keepttl"):
			if flags&(hsxAt|hsxKeepTTL) != 0 {
				c.err("ERR Only one of EX, PX, EXAT, PXAT or KEEPTTL arguments can be specified")
				return
			}
			flags |= hsxKeepTTL
		case eq(a, "fxx"), eq(a, "fnx"):
			if flags&(hsxFNX|hsxFXX) != 0 {
				c.err("ERR Only one of FXX or FNX arguments can be specified")
				return
			}
			if eq(a, "fxx") {
				flags |= hsxFXX
			} else {
				flags |= hsxFNX
			}
		default:
			c.err("ERR unknown argument: " + string(a))
			return
		}
	}
	if first < 0 {
		// Every argument was an option: Redis asserts here; answer as a
		// missing FIELDS would be.
		c.err("ERR wrong number of arguments for '" + lower(args[0]) + "' command")
		return
	}
	sh, h := c.lockKey(args[1])
	defer c.unlockKey(sh)
	e, found, bad := c.getColl(sh, h, args[1], shard.TypeHash)
	if bad {
		return
	}
	if !found && flags&hsxFXX != 0 {
		c.int(0)
		return
	}
	if flags&(hsxFNX|hsxFXX) != 0 && found {
		hs := e.Obj().(*types.Hash)
		n := 0
		for i := 0; i < count; i++ {
			if hs.Exists(args[first+2*i]) {
				n++
			}
		}
		if (flags&hsxFNX != 0 && n > 0) || (flags&hsxFXX != 0 && n != count) {
			c.int(0)
			return
		}
	}
	e, hs, w, _ := c.writeHash(sh, h, args[1], true)
	lim := c.lim()
	t := now()
	var dels [][]byte
	for i := 0; i < count; i++ {
		f, v := args[first+2*i], args[first+2*i+1]
		if flags&(hsxAt|hsxKeepTTL) != 0 {
			hs.SetKeepTTL(w, f, v, lim)
		} else {
			hs.Set(w, f, v, lim)
		}
		if flags&hsxAt == 0 {
			continue
		}
		if at <= t && !c.fromPrimary {
			hs.Delete(w, f)
			dels = append(dels, f)
			continue
		}
		hs.SetFieldExpireAt(w, f, at)
	}
	d := sh.DB(c.db)
	switch {
	case len(dels) > 0:
		// The fields are gone: replicate their deletion, not the command.
		prop := make([][][]byte, 0, len(dels))
		for _, f := range dels {
			prop = append(prop, [][]byte{[]byte("HDEL"), args[1], f})
		}
		c.rewriteMany(prop)
	case flags&hsxAt != 0:
		d.NoteFieldTTL(args[1])
		p := append([][]byte(nil), args...)
		p[atPos-1] = []byte("PXAT")
		p[atPos] = strconv.AppendInt(nil, at, 10)
		c.rewrite(p...)
	}
	c.int(1)
	c.notify(kseHash, "hset", args[1])
	switch {
	case len(dels) > 0:
		c.notify(kseHash, "hdel", args[1])
	case flags&hsxAt != 0:
		c.notify(kseHash, "hexpire", args[1])
	}
	if hs.Len() == 0 {
		d.Delete(&e)
		c.notify(kseGeneric, "del", args[1])
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
