package server

import (
	"math/rand/v2"

	"github.com/damselflydb/damselfly/hll"
	"github.com/damselflydb/damselfly/shard"
)

// HyperLogLogs are strings in Redis's exact encoding (package hll). Dense
// ones (12304 bytes) are updated in place through DB.ModifyStr; sparse ones are
// small and are rebuilt and stored, as their length changes.

func registerHyperLogLog(reg registrar) {
	reg("pfadd", -2, "write|denyoom|fast", 1, 1, 1, "hyperloglog", cmdPFAdd)
	reg("pfcount", -2, "readonly|may_replicate", 1, -1, 1, "hyperloglog", cmdPFCount)
	reg("pfmerge", -2, "write|denyoom", 1, -1, 1, "hyperloglog", cmdPFMerge)
	reg("pfdebug", 3, "write|denyoom|admin", 2, 2, 1, "hyperloglog", cmdPFDebug)
	reg("pfselftest", 1, "admin", 0, 0, 0, "hyperloglog", cmdPFSelfTest)
}

const (
	errNotHLL     = "WRONGTYPE Key is not a valid HyperLogLog string value."
	errInvalidHLL = "INVALIDOBJ Corrupted HLL object detected"
)

// hllEntry looks key up as a HyperLogLog, replying with Redis's errors for
// other types and malformed strings.
func hllEntry(c *Client, sh *shard.Shard, h uint64, key []byte) (e shard.Entry, found, ok bool) {
	e, found, ok = hllLookup(c, sh, h, key)
	if !found {
		c.keyMiss(key) // PFCOUNT and PFMERGE (every key) read as Redis's lookupKeyRead
	}
	return e, found, ok
}

// hllLookup is hllEntry without the keymiss event (PFADD, PFDEBUG write).
func hllLookup(c *Client, sh *shard.Shard, h uint64, key []byte) (e shard.Entry, found, ok bool) {
	e, found = sh.Lookup(c.db, h, key, now())
	if !found {
		return e, false, true
	}
	if e.Type() != shard.TypeString {
		c.errWrongType()
		return e, true, false
	}
	if !hll.Valid(e.Str()) {
		c.err(errNotHLL)
		return e, true, false
	}
	return e, true, true
}

// storeHLL stores p under key keeping the TTL of the entry it replaces.
func storeHLL(c *Client, sh *shard.Shard, h uint64, key []byte, e *shard.Entry, found bool, p []byte) {
	storeBits(c, sh, h, key, e, found, p)
}

func cmdPFAdd(c *Client, args [][]byte) {
	key := args[1]
	sh, h := c.lockKey(key)
	defer c.unlockKey(sh)
	e, found, ok := hllLookup(c, sh, h, key)
	if !ok {
		return
	}
	if found && hll.Encoding(e.Str()) == hll.Dense {
		// In place: only registers that grow change.
		p := e.Str()
		updated := false
		for _, ele := range args[2:] {
			idx, count := hll.PatLen(ele)
			if count > hll.DenseGet(p[hll.HeaderSize:], idx) {
				if !updated {
					p = sh.DB(c.db).ModifyStr(&e)
					updated = true
				}
				hll.DenseSetReg(p[hll.HeaderSize:], idx, count)
			}
		}
		if updated {
			hll.Invalidate(p)
			c.notify(kseString, "pfadd", key)
		}
		c.boolInt(updated)
		return
	}
	var p []byte
	updated := !found
	if found {
		p = append([]byte(nil), e.Str()...)
	} else {
		p = hll.New()
	}
	sparseMax := c.lim().HLLSparseMaxBytes
	for _, ele := range args[2:] {
		var r int
		p, r = hll.Add(p, ele, sparseMax)
		if r < 0 {
			c.err(errInvalidHLL)
			return
		}
		updated = updated || r == 1
	}
	if updated {
		hll.Invalidate(p)
		storeHLL(c, sh, h, key, &e, found, p)
		c.notify(kseString, "pfadd", key)
	}
	c.boolInt(updated)
}

func cmdPFCount(c *Client, args [][]byte) {
	if len(args) > 2 {
		set := c.lockKeys(args[1:])
		defer c.unlock(set)
		var regs [hll.Registers]uint8
		for _, k := range args[1:] {
			sh, h := c.srv.store.ShardOf(k)
			e, found, ok := hllEntry(c, sh, h, k)
			if !ok {
				return
			}
			if found && !hll.Merge(&regs, e.Str()) {
				c.err(errInvalidHLL)
				return
			}
		}
		c.int(int64(hll.CountRegisters(&regs)))
		return
	}
	sh, h := c.lockKey(args[1])
	defer c.unlockKey(sh)
	e, found, ok := hllEntry(c, sh, h, args[1])
	if !ok {
		return
	}
	if !found {
		c.int(0)
		return
	}
	p := e.Str()
	if card, valid := hll.Cached(p); valid {
		c.int(int64(card))
		return
	}
	card, valid := hll.Count(p)
	if !valid {
		c.err(errInvalidHLL)
		return
	}
	// Caching the cardinality changes the string: a write, replicated as
	// the PFCOUNT itself, as in Redis.
	hll.SetCached(sh.DB(c.db).ModifyStr(&e), card)
	c.int(int64(card))
}

func cmdPFMerge(c *Client, args [][]byte) {
	set := c.lockKeys(args[1:])
	defer c.unlock(set)
	var regs [hll.Registers]uint8
	dense := false
	for _, k := range args[1:] {
		sh, h := c.srv.store.ShardOf(k)
		e, found, ok := hllEntry(c, sh, h, k)
		if !ok {
			return
		}
		if !found {
			continue
		}
		if hll.Encoding(e.Str()) == hll.Dense {
			dense = true
		}
		if !hll.Merge(&regs, e.Str()) {
			c.err(errInvalidHLL)
			return
		}
	}
	dst := args[1]
	sh, h := c.srv.store.ShardOf(dst)
	e, found := sh.Lookup(c.db, h, dst, now())
	var p []byte
	if found {
		p = append([]byte(nil), e.Str()...)
	} else {
		p = hll.New()
	}
	if dense {
		var ok bool
		if p, ok = hll.ToDense(p); !ok {
			c.err(errInvalidHLL)
			return
		}
	}
	sparseMax := c.lim().HLLSparseMaxBytes
	for i, v := range regs {
		if v == 0 {
			continue
		}
		if hll.Encoding(p) == hll.Dense {
			hll.DenseSet(p[hll.HeaderSize:], i, v)
		} else {
			p, _ = hll.SparseSet(p, i, v, sparseMax)
		}
	}
	hll.Invalidate(p)
	storeHLL(c, sh, h, dst, &e, found, p)
	c.notify(kseString, "pfadd", dst)
	c.ok()
}

func cmdPFDebug(c *Client, args [][]byte) {
	key := args[2]
	sh, h := c.lockKey(key)
	defer c.unlockKey(sh)
	e, found, ok := hllLookup(c, sh, h, key)
	if !ok {
		return
	}
	if !found {
		c.err("ERR The specified key does not exist")
		return
	}
	p := e.Str()
	toDense := func() ([]byte, bool) {
		d, ok := hll.ToDense(p)
		if !ok {
			c.err(errInvalidHLL)
			return nil, false
		}
		storeHLL(c, sh, h, key, &e, found, d)
		return d, true
	}
	switch {
	case eq(args[1], "getreg"):
		if hll.Encoding(p) == hll.Sparse {
			if p, ok = toDense(); !ok {
				return
			}
		}
		c.array(hll.Registers)
		for i := 0; i < hll.Registers; i++ {
			c.int(int64(hll.DenseGet(p[hll.HeaderSize:], i)))
		}
	case eq(args[1], "decode"):
		if hll.Encoding(p) != hll.Sparse {
			c.err("ERR HLL encoding is not sparse")
			return
		}
		c.bulkString(hll.Decode(p))
	case eq(args[1], "encoding"):
		if hll.Encoding(p) == hll.Dense {
			c.simple("dense")
		} else {
			c.simple("sparse")
		}
	case eq(args[1], "todense"):
		if hll.Encoding(p) == hll.Dense {
			c.int(0)
			return
		}
		if _, ok := toDense(); ok {
			c.int(1)
		}
	default:
		c.err("ERR Unknown PFDEBUG subcommand '" + string(args[1]) + "'")
	}
}

// cmdPFSelfTest checks the register packing and the estimator: dense and
// sparse HyperLogLogs fed the same elements must agree and stay within six
// standard errors of the true cardinality, as Redis's self test demands.
func cmdPFSelfTest(c *Client, args [][]byte) {
	rng := rand.New(rand.NewPCG(rand.Uint64(), rand.Uint64()))
	dense := make([]byte, hll.DenseSize)
	copy(dense, "HYLL")
	regs := dense[hll.HeaderSize:]
	var want [hll.Registers]uint8
	for cycle := 0; cycle < 100; cycle++ {
		for i := range want {
			want[i] = uint8(rng.IntN(64))
			hll.DenseSetReg(regs, i, want[i])
		}
		for i := range want {
			if got := hll.DenseGet(regs, i); got != want[i] {
				c.err("TESTFAILED Register " + itoa(int64(i)) + " should be " + itoa(int64(want[i])) + " but is " + itoa(int64(got)))
				return
			}
		}
	}
	clear(regs)
	sparse := hll.New()
	const relErr = 1.04 / 128 // 1.04/sqrt(registers)
	seed := rng.Uint64()
	var buf [8]byte
	checkpoint := 1
	for j := 1; j <= 1000000; j++ {
		v := uint64(j) ^ seed
		for k := range buf {
			buf[k] = byte(v >> (8 * k))
		}
		dense, _ = hll.Add(dense, buf[:], c.lim().HLLSparseMaxBytes)
		sparse, _ = hll.Add(sparse, buf[:], c.lim().HLLSparseMaxBytes)
		if j != checkpoint {
			continue
		}
		if j < c.lim().HLLSparseMaxBytes/2 && hll.Encoding(sparse) != hll.Sparse {
			c.err("TESTFAILED sparse encoding not used")
			return
		}
		dc, _ := hll.Count(dense)
		sc, _ := hll.Count(sparse)
		if dc != sc {
			c.err("TESTFAILED dense/sparse disagree")
			return
		}
		maxErr := int64(relErr*6*float64(checkpoint) + 0.999999)
		if j == 10 {
			maxErr = 1
		}
		if d := int64(checkpoint) - int64(dc); d > maxErr || -d > maxErr {
			c.err("TESTFAILED Too big error. card:" + itoa(int64(checkpoint)) + " abserr:" + itoa(max(d, -d)))
			return
		}
		checkpoint *= 10
	}
	c.ok()
}
