package server

import (
	"github.com/damselflydb/damselfly/bitmap"
	"github.com/damselflydb/damselfly/shard"
)

// Bitmaps are strings (Redis does the same): the commands here read a
// string's bytes in place and write either in place, into DB.ModifyStr (which
// lets a running snapshot capture the old value first), or by storing a grown copy.

func registerBitmaps(reg registrar) {
	reg("setbit", 4, "write|denyoom", 1, 1, 1, "bitmap", cmdSetBit)
	reg("getbit", 3, "readonly|fast", 1, 1, 1, "bitmap", cmdGetBit)
	reg("bitcount", -2, "readonly", 1, 1, 1, "bitmap", cmdBitCount)
	reg("bitpos", -3, "readonly", 1, 1, 1, "bitmap", cmdBitPos)
	reg("bitop", -4, "write|denyoom", 2, -1, 1, "bitmap", cmdBitOp)
	reg("bitfield", -2, "write|denyoom", 1, 1, 1, "bitmap", func(c *Client, a [][]byte) { bitfieldGeneric(c, a, false) })
	reg("bitfield_ro", -2, "readonly|fast", 1, 1, 1, "bitmap", func(c *Client, a [][]byte) { bitfieldGeneric(c, a, true) })
}

const errBitOffset = "ERR bit offset is not an integer or out of range"

// parseBitOffset parses a bit offset with Redis's limit (the byte must
// fall inside a 512 MB string). With bits > 0, "#n" means n*bits.
func parseBitOffset(c *Client, b []byte, bits int) (uint64, bool) {
	hash := bits > 0 && len(b) > 0 && b[0] == '#'
	if hash {
		b = b[1:]
	}
	n, ok := parseInt(b)
	if ok && hash {
		if n > 0 && n > (1<<62)/int64(bits) || n < 0 && n < -(1<<62)/int64(bits) {
			ok = false
		} else {
			n *= int64(bits)
		}
	}
	if !ok || n < 0 || n>>3 >= maxStringBytes {
		c.err(errBitOffset)
		return 0, false
	}
	return uint64(n), true
}

// bitString looks key up for a bit write that needs its first need bytes.
// It returns the bytes to change: the stored string itself when it is long
// enough (for reading: the caller writes only into
// sh.DB(c.db).ModifyStr(&e)), or, when it was grown in place, the stored
// string for writing (writable is true: the hook ran), else a zero-padded
// copy (grown is true: the caller must store it with storeBits).
func bitString(c *Client, sh *shard.Shard, h uint64, key []byte, need uint64) (e shard.Entry, found bool, p []byte, grown, writable, ok bool) {
	e, found = sh.Lookup(c.db, h, key, now())
	if found && e.Type() != shard.TypeString {
		c.errWrongType()
		return e, found, nil, false, false, false
	}
	var cur []byte
	if found {
		cur = e.Str()
		if uint64(len(cur)) >= need {
			return e, found, cur, false, false, true
		}
		// A big string grows in place with spare capacity, as Redis's
		// sds does, instead of a whole copy per extension.
		if ne, w, ok := sh.DB(c.db).GrowString(&e, int(need)); ok {
			return ne, found, ne.StrW(w), false, true, true
		}
	}
	p = make([]byte, need)
	copy(p, cur)
	return e, found, p, true, false, true
}

// storeBits stores a grown bitmap p under key, keeping the key's TTL.
func storeBits(c *Client, sh *shard.Shard, h uint64, key []byte, e *shard.Entry, found bool, p []byte) {
	v := shard.Value{Type: shard.TypeString, Str: p}
	if found {
		v.ExpireAt = e.ExpireAt()
		sh.DB(c.db).Overwrite(e, key, v)
		return
	}
	sh.DB(c.db).Put(h, key, v)
}

func cmdSetBit(c *Client, args [][]byte) {
	off, ok := parseBitOffset(c, args[2], 0)
	if !ok {
		return
	}
	v, ok := parseInt(args[3])
	if !ok || v&^1 != 0 {
		c.err("ERR bit is not an integer or out of range")
		return
	}
	sh, h := c.lockKey(args[1])
	defer c.unlockKey(sh)
	e, found, p, grown, writable, ok := bitString(c, sh, h, args[1], off>>3+1)
	if !ok {
		return
	}
	old := bitmap.Get(p, off)
	switch {
	case grown:
		bitmap.Set(p, off, int(v))
		storeBits(c, sh, h, args[1], &e, found, p)
	case old != int(v):
		if !writable {
			p = sh.DB(c.db).ModifyStr(&e)
		}
		bitmap.Set(p, off, int(v))
	}
	if grown || old != int(v) {
		c.notify(kseString, "setbit", args[1])
	}
	c.int(int64(old))
}

func cmdGetBit(c *Client, args [][]byte) {
	off, ok := parseBitOffset(c, args[2], 0)
	if !ok {
		return
	}
	sh, h := c.lockKey(args[1])
	defer c.unlockKey(sh)
	e, found := sh.Lookup(c.db, h, args[1], now())
	if !found {
		c.keyMiss(args[1])
		c.int(0)
		return
	}
	if e.Type() != shard.TypeString {
		c.errWrongType()
		return
	}
	c.int(int64(bitmap.Get(e.Str(), off)))
}

// bitRange turns a BITCOUNT/BITPOS start and end (bytes, or bits when
// isBit) into an inclusive bit range of a string of n bytes, clamped as
// Redis does.
func bitRange(start, end int64, isBit bool, n int64) (int64, int64) {
	total := n
	if isBit {
		total = n * 8
	}
	if start < 0 {
		start += total
	}
	if end < 0 {
		end += total
	}
	start, end = max(start, 0), max(end, 0)
	if end >= total {
		end = total - 1
	}
	if start > end {
		return 1, 0
	}
	if isBit {
		return start, end
	}
	return start * 8, end*8 + 7
}

// parseBitUnit parses the BIT|BYTE argument.
func parseBitUnit(c *Client, b []byte) (isBit, ok bool) {
	switch {
	case eq(b, "bit"):
		return true, true
	case eq(b, "byte"):
		return false, true
	}
	c.errSyntax()
	return false, false
}

func cmdBitCount(c *Client, args [][]byte) {
	sh, h := c.lockKey(args[1])
	defer c.unlockKey(sh)
	e, found := sh.Lookup(c.db, h, args[1], now())
	if !found {
		c.keyMiss(args[1])
		c.int(0)
		return
	}
	if e.Type() != shard.TypeString {
		c.errWrongType()
		return
	}
	p := e.Str()
	var from, to int64
	switch len(args) {
	case 2:
		from, to = 0, int64(len(p))*8-1
	case 4, 5:
		start, ok1 := parseInt(args[2])
		if !ok1 {
			c.errNotInteger()
			return
		}
		end, ok2 := parseInt(args[3])
		if !ok2 {
			c.errNotInteger()
			return
		}
		if start < 0 && end < 0 && start > end {
			c.int(0)
			return
		}
		isBit := false
		if len(args) == 5 {
			var ok bool
			if isBit, ok = parseBitUnit(c, args[4]); !ok {
				return
			}
		}
		from, to = bitRange(start, end, isBit, int64(len(p)))
	default:
		c.errSyntax()
		return
	}
	c.int(bitmap.Count(p, from, to))
}

func cmdBitPos(c *Client, args [][]byte) {
	bit, ok := parseInt(args[2])
	if !ok {
		c.errNotInteger()
		return
	}
	if bit != 0 && bit != 1 {
		c.err("ERR The bit argument must be 1 or 0.")
		return
	}
	sh, h := c.lockKey(args[1])
	defer c.unlockKey(sh)
	e, found := sh.Lookup(c.db, h, args[1], now())
	if !found {
		c.keyMiss(args[1])
		c.int(-bit) // an absent key is an endless run of zeros
		return
	}
	if e.Type() != shard.TypeString {
		c.errWrongType()
		return
	}
	p := e.Str()
	n := int64(len(p))
	from, to := int64(0), n*8-1
	endGiven := false
	switch len(args) {
	case 3:
	case 4, 5, 6:
		start, ok := parseInt(args[3])
		if !ok {
			c.errNotInteger()
			return
		}
		isBit := false
		if len(args) == 6 {
			if isBit, ok = parseBitUnit(c, args[5]); !ok {
				return
			}
		}
		end := n - 1
		if isBit {
			end = n*8 + 7
		}
		if len(args) >= 5 {
			if end, ok = parseInt(args[4]); !ok {
				c.errNotInteger()
				return
			}
			endGiven = true
		}
		from, to = bitRange(start, end, isBit, n)
	default:
		c.errSyntax()
		return
	}
	if from > to {
		c.int(-1)
		return
	}
	pos := bitmap.Pos(p, from, to, int(bit))
	if pos < 0 && bit == 0 && !endGiven {
		// Without an end, the string is followed by endless zeros.
		pos = to + 1
	}
	c.int(pos)
}

func cmdBitOp(c *Client, args [][]byte) {
	var op int
	switch {
	case eq(args[1], "and"):
		op = bitmap.And
	case eq(args[1], "or"):
		op = bitmap.Or
	case eq(args[1], "xor"):
		op = bitmap.Xor
	case eq(args[1], "not"):
		op = bitmap.Not
	default:
		c.errSyntax()
		return
	}
	if op == bitmap.Not && len(args) != 4 {
		c.err("ERR BITOP NOT must be called with a single source key.")
		return
	}
	dst, keys := args[2], args[3:]
	set := c.lockKeys(args[2:])
	defer c.unlock(set)
	t := now()
	srcs := make([][]byte, len(keys))
	for i, k := range keys {
		sh, h := c.srv.store.ShardOf(k)
		e, found := sh.Lookup(c.db, h, k, t)
		if !found {
			c.keyMiss(k)
			continue
		}
		if e.Type() != shard.TypeString {
			c.errWrongType()
			return
		}
		srcs[i] = e.Str()
	}
	res := bitmap.Op(op, srcs)
	sh, h := c.srv.store.ShardOf(dst)
	if len(res) > 0 {
		sh.DB(c.db).Put(h, dst, shard.Value{Type: shard.TypeString, Str: res})
		c.notify(kseString, "set", dst)
	} else if e, found := sh.Lookup(c.db, h, dst, t); found {
		sh.DB(c.db).Delete(&e)
		c.notify(kseGeneric, "del", dst)
	}
	c.int(int64(len(res)))
}

// bitfieldOp is one GET, SET or INCRBY of BITFIELD.
type bitfieldOp struct {
	off      uint64
	arg      int64
	kind     byte // 'g', 's', 'i'
	overflow int
	bits     int
	signed   bool
}

func parseBitfieldType(c *Client, b []byte) (signed bool, bits int, ok bool) {
	if len(b) > 1 && (b[0] == 'i' || b[0] == 'u') {
		n, ok := parseInt(b[1:])
		signed = b[0] == 'i'
		if ok && n >= 1 && (signed && n <= 64 || !signed && n <= 63) {
			return signed, int(n), true
		}
	}
	c.err("ERR Invalid bitfield type. Use something like i16 u8. Note that u64 is not supported but i64 is.")
	return false, 0, false
}

func bitfieldGeneric(c *Client, args [][]byte, ro bool) {
	ops, readonly, need, ok := parseBitfieldOps(c, args)
	if !ok {
		return
	}
	if !readonly && ro {
		c.err("ERR BITFIELD_RO only supports the GET subcommand")
		return
	}
	sh, h := c.lockKey(args[1])
	defer c.unlockKey(sh)
	var (
		e                      shard.Entry
		found, grown, writable bool
		p                      []byte
	)
	if readonly {
		e, found = sh.Lookup(c.db, h, args[1], now())
		if found && e.Type() != shard.TypeString {
			c.errWrongType()
			return
		}
		if !found {
			c.keyMiss(args[1])
		}
		if found {
			p = e.Str()
		}
	} else {
		var ok bool
		if e, found, p, grown, writable, ok = bitString(c, sh, h, args[1], need); !ok {
			return
		}
	}
	modified := grown
	changes := false
	c.array(len(ops))
	for _, op := range ops {
		if op.kind == 'g' {
			if op.signed {
				c.int(bitmap.GetSigned(p, op.off, op.bits))
			} else {
				c.int(int64(bitmap.GetUnsigned(p, op.off, op.bits)))
			}
			continue
		}
		old, nv, reply, over := op.compute(p)
		if over && op.overflow == bitmap.Fail {
			c.null()
			continue
		}
		c.int(int64(reply))
		changes = true
		if nv != old {
			if !modified {
				if !writable {
					p = sh.DB(c.db).ModifyStr(&e)
				}
				modified = true
			}
			bitmap.SetInt(p, op.off, op.bits, nv)
		}
	}
	if grown {
		storeBits(c, sh, h, args[1], &e, found, p)
	}
	if changes {
		c.notify(kseString, "setbit", args[1])
	}
}

// parseBitfieldOps parses BITFIELD's operations (OVERFLOW applies to those
// after it). readonly: all are GETs; need: the bytes the writes reach.
func parseBitfieldOps(c *Client, args [][]byte) (ops []bitfieldOp, readonly bool, need uint64, ok bool) {
	overflow := bitmap.Wrap
	readonly = true
	for j := 2; j < len(args); j++ {
		rem := len(args) - j - 1
		var op bitfieldOp
		switch a := args[j]; {
		case eq(a, "get") && rem >= 2:
			op.kind = 'g'
		case eq(a, "set") && rem >= 3:
			op.kind = 's'
		case eq(a, "incrby") && rem >= 3:
			op.kind = 'i'
		case eq(a, "overflow") && rem >= 1:
			j++
			switch w := args[j]; {
			case eq(w, "wrap"):
				overflow = bitmap.Wrap
			case eq(w, "sat"):
				overflow = bitmap.Sat
			case eq(w, "fail"):
				overflow = bitmap.Fail
			default:
				c.err("ERR Invalid OVERFLOW type specified")
				return nil, false, 0, false
			}
			continue
		default:
			c.errSyntax()
			return nil, false, 0, false
		}
		if op.signed, op.bits, ok = parseBitfieldType(c, args[j+1]); !ok {
			return nil, false, 0, false
		}
		if op.off, ok = parseBitOffset(c, args[j+2], op.bits); !ok {
			return nil, false, 0, false
		}
		if op.kind != 'g' {
			readonly = false
			need = max(need, (op.off+uint64(op.bits)-1)>>3+1)
			if op.arg, ok = parseInt(args[j+3]); !ok {
				c.errNotInteger()
				return nil, false, 0, false
			}
			j++
		}
		op.overflow = overflow
		ops = append(ops, op)
		j += 2
	}
	return ops, readonly, need, true
}

// compute is a SET or INCRBY on the bits p holds: the field's old and new
// value (as raw bits), the reply (old for SET, new for INCRBY) and whether
// it overflowed.
func (op *bitfieldOp) compute(p []byte) (old, nv, reply uint64, over bool) {
	if op.signed {
		o := bitmap.GetSigned(p, op.off, op.bits)
		var n int64
		if op.kind == 'i' {
			n, over = bitmap.Signed(o, op.arg, op.bits, op.overflow)
			reply = uint64(n)
		} else {
			n, over = bitmap.Signed(op.arg, 0, op.bits, op.overflow)
			reply = uint64(o)
		}
		return uint64(o), uint64(n), reply, over
	}
	old = bitmap.GetUnsigned(p, op.off, op.bits)
	if op.kind == 'i' {
		nv, over = bitmap.Unsigned(old, op.arg, op.bits, op.overflow)
		reply = nv
	} else {
		nv, over = bitmap.Unsigned(uint64(op.arg), 0, op.bits, op.overflow)
		reply = old
	}
	return old, nv, reply, over
}
