package memcache

import (
	"strconv"
	"unsafe"

	"github.com/damselflydb/damselfly/shard"
)

// The memcached keyspace is database 0 of the shared store. Every operation
// below runs between lock and unlock of the key's shard; a write is
// committed (journal) before the unlock, so the journal follows the order in
// which writes were applied.

const db = 0

func (c *conn) lock(key []byte) (*shard.Shard, uint64) {
	sh, h := c.s.store.ShardOf(key)
	sh.Lock()
	return sh, h
}

// nextCAS advances the shard's CAS counter (shard locked).
func (c *conn) nextCAS(sh *shard.Shard) uint64 {
	ctr := &c.s.cas[sh.ID()]
	ctr.n++
	return ctr.n
}

// casOf returns the CAS unique of a string entry, stamping one on an entry
// that has none yet (written through RESP or loaded from a dump). The
// stamping rewrites the entry with the same value, expiry and flags; it is
// not a logical write and is not journalled. e is updated.
func (c *conn) casOf(sh *shard.Shard, h uint64, e *shard.Entry) uint64 {
	if e.HasMeta() && e.MCCAS() != 0 {
		return e.MCCAS()
	}
	c.stampMeta(sh, h, e)
	return e.MCCAS()
}

// stampMeta gives an entry without memcached meta (written through RESP or
// loaded) a CAS unique and an access time of now, so that its access state
// can be tracked from here on. Like casOf's stamping it is not a write.
func (c *conn) stampMeta(sh *shard.Shard, h uint64, e *shard.Entry) {
	c.scratch = append(c.scratch[:0], e.Str()...)
	key := append([]byte(nil), e.Key()...)
	*e = sh.DB(db).Put(h, key, shard.Value{Type: shard.TypeString, Str: c.scratch, ExpireAt: e.ExpireAt(),
		MCFlags: e.MCFlags(), MCCAS: c.nextCAS(sh), Meta: true})
}

// noteAccess records a hit on e (fetched, access time now); reads call it
// after answering, so that mg h and l report the state before this read,
// and mg u skips it.
func noteAccess(sh *shard.Shard, e *shard.Entry) {
	sh.DB(db).NoteAccess(e)
}

// peekCAS is the CAS unique an entry has without stamping one (0 = none).
func peekCAS(e *shard.Entry) uint64 {
	if e.HasMeta() {
		return e.MCCAS()
	}
	return 0
}

// put stores a memcached item with a fresh CAS unique (or cas, when
// non-zero: ms E) and journals it. val must not view shard memory.
func (c *conn) put(sh *shard.Shard, h uint64, key, val []byte, flags uint32, exp int64, cas uint64) shard.Entry {
	return c.putItem(sh, h, key, shard.Value{Str: val, ExpireAt: exp, MCFlags: flags, MCCAS: cas})
}

// putItem is put with the item state of v (MCStale, MCWon) as well.
func (c *conn) putItem(sh *shard.Shard, h uint64, key []byte, v shard.Value) shard.Entry {
	return c.replaceItem(sh, h, nil, key, v)
}

// replaceItem is putItem over old, the key's entry as just looked up (nil:
// look it up again), saving an index probe.
func (c *conn) replaceItem(sh *shard.Shard, h uint64, old *shard.Entry, key []byte, v shard.Value) shard.Entry {
	if v.MCCAS == 0 {
		v.MCCAS = c.nextCAS(sh)
	}
	v.Type, v.Meta = shard.TypeString, true
	var e shard.Entry
	if old != nil {
		e = sh.DB(db).Overwrite(old, key, v)
	} else {
		e = sh.DB(db).Put(h, key, v)
	}
	c.journalSet(key, v.Str, v.ExpireAt)
	return e
}

// remove deletes e and journals DEL.
func (c *conn) remove(sh *shard.Shard, e *shard.Entry) {
	c.keyBuf = append(c.keyBuf[:0], e.Key()...)
	sh.DB(db).Delete(e)
	c.journal(c.word("DEL"), c.keyBuf)
}

// word views a command word as bytes without copying it: the journal only
// reads its arguments.
func (c *conn) word(s string) []byte { return unsafe.Slice(unsafe.StringData(s), len(s)) }

// journal hands args to Config.Journal through a reused slice, so that a
// write allocates nothing here.
func (c *conn) journal(args ...[]byte) {
	if j := c.s.cfg.Journal; j != nil {
		c.jargs = append(c.jargs[:0], args...)
		j(db, c.jargs)
	}
}

// journalSet journals SET key val [PXAT exp].
func (c *conn) journalSet(key, val []byte, exp int64) {
	if c.s.cfg.Journal == nil {
		return
	}
	if exp > 0 {
		c.journal(c.word("SET"), key, val, c.word("PXAT"), strconv.AppendInt(c.num[:0], exp, 10))
		return
	}
	c.journal(c.word("SET"), key, val)
}

// journalExpire journals an expiry change: PEXPIREAT key exp, or PERSIST.
func (c *conn) journalExpire(key []byte, exp int64) {
	if c.s.cfg.Journal == nil {
		return
	}
	if exp > 0 {
		c.journal(c.word("PEXPIREAT"), key, strconv.AppendInt(c.num[:0], exp, 10))
		return
	}
	c.journal(c.word("PERSIST"), key)
}

// lookup finds a live string item; collections count as misses. It does
// not record an access (see noteAccess).
func lookup(sh *shard.Shard, h uint64, key []byte, now int64) (shard.Entry, bool) {
	sh.Tick(now)
	e, ok := sh.LookupNoTouch(db, h, key, now)
	if !ok || e.Type() != shard.TypeString {
		return shard.Entry{}, false
	}
	return e, true
}

type storeMode uint8

const (
	modeSet storeMode = iota
	modeAdd
	modeReplace
	modeAppend
	modePrepend
	modeCAS
)

type storeResult uint8

const (
	stored storeResult = iota
	notStored
	exists
	notFound
	noMemory // maxmemory reached and nothing (more) may be evicted
)

const outOfMemory = "SERVER_ERROR out of memory storing object\r\n"

// admit asks the server (Config.Admit) whether a store may add to sh
// (locked); on false it counts the refusal.
func (c *conn) admit(sh *shard.Shard) bool {
	if a := c.s.cfg.Admit; a != nil && !a(sh) {
		c.s.stats.storeNoMem.Add(1)
		return false
	}
	return true
}

// storeReq is one storage operation (classic commands and ms).
type storeReq struct {
	mode   storeMode
	key    []byte
	val    []byte
	flags  uint32
	exp    int64  // deadline (exptimeToDeadline)
	cas    uint64 // compare with the item's CAS when non-zero (or modeCAS)
	newCAS uint64 // ms E: CAS unique to give the item
	// invalidate (ms I): a cas lower than the item's is accepted too, and
	// then the new item is stale (and keeps a handed-out recache win).
	invalidate bool
	vivify     bool
	outCAS     uint64 // the item's CAS after the operation
	outExp     int64
	outFlag    uint32
}

// store applies a storage operation under the key's shard lock.
func (c *conn) store(r *storeReq) storeResult {
	sh, h := c.lock(r.key)
	defer sh.Unlock()
	if !c.admit(sh) {
		return noMemory
	}
	now := c.nowMs()
	e, ok := sh.Lookup(db, h, r.key, now)
	isStr := ok && e.Type() == shard.TypeString
	stale := false
	if r.mode == modeCAS || r.cas != 0 {
		if !ok {
			c.s.stats.casMisses.Add(1)
			return notFound
		}
		cas := peekCAS(&e)
		stale = r.invalidate && isStr && r.cas < cas
		if !isStr || cas == 0 || (cas != r.cas && !stale) {
			c.s.stats.casBadval.Add(1)
			return exists
		}
		c.s.stats.casHits.Add(1)
	}
	val, flags, exp := r.val, r.flags, r.exp
	switch r.mode {
	case modeAdd:
		if ok {
			return notStored
		}
	case modeReplace:
		if !isStr {
			return notStored
		}
	case modeAppend, modePrepend:
		if !isStr {
			return notStored
		}
		c.scratch = c.scratch[:0]
		if r.mode == modeAppend {
			c.scratch = append(append(c.scratch, e.Str()...), r.val...)
		} else {
			c.scratch = append(append(c.scratch, r.val...), e.Str()...)
		}
		val, flags, exp = c.scratch, e.MCFlags(), e.ExpireAt()
	}
	if exp == expNow {
		if ok {
			c.remove(sh, &e)
		}
		r.outCAS = 0
		return stored
	}
	var old *shard.Entry
	if ok {
		old = &e
	}
	ne := c.replaceItem(sh, h, old, r.key, shard.Value{Str: val, ExpireAt: exp, MCFlags: flags, MCCAS: r.newCAS,
		MCStale: stale, MCWon: stale && e.MCWon()})
	r.outCAS, r.outExp, r.outFlag = ne.MCCAS(), ne.ExpireAt(), ne.MCFlags()
	c.s.stats.totalItems.Add(1)
	return stored
}
