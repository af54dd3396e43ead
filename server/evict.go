package server

import (
	"errors"
	"math/rand/v2"
	"strings"
	"sync/atomic"

	"github.com/damselflydb/damselfly/shard"
)

// Eviction (maxmemory-policy), Redis's approximated algorithms on a
// per-shard budget as Dragonfly does: past maxmemory, before a command that
// may grow memory runs (and before a memcached store), each shard it writes
// to deletes keys until its dataset fits its share of maxmemory. A shard
// only ever evicts its own keys under its own lock, so eviction needs no
// global lock and never waits for other shards.
//
// The share is (maxmemory - memory outside the datasets) / shards, where the
// memory outside (Go heap: connections, buffers, collection objects) is
// measured by the cron every 100 ms; a shard's dataset (its slab chunks and
// index) is exact at any time. A victim is the best of maxmemory-samples
// keys sampled from each database of the shard: the longest idle (LRU, from
// the entry's 24-bit clock), the soonest to expire (volatile-ttl) or any
// (random). Evicted keys are replicated as DEL, invalidate WATCH, and count
// in INFO's evicted_keys. Replicas do not evict (their primary's DELs do).

// evictionPolicy is a maxmemory-policy.
type evictionPolicy int32

const (
	noEviction evictionPolicy = iota
	allKeysLRU
	volatileLRU
	allKeysRandom
	volatileRandom
	volatileTTL
	allKeysLFU // lfu.go
	volatileLFU
)

var policyNames = []string{"noeviction", "allkeys-lru", "volatile-lru", "allkeys-random", "volatile-random", "volatile-ttl", "allkeys-lfu", "volatile-lfu"}

func (p evictionPolicy) String() string { return policyNames[p] }

func (p evictionPolicy) volatile() bool {
	return p == volatileLRU || p == volatileRandom || p == volatileTTL || p == volatileLFU
}

// CheckPolicy reports whether s is a maxmemory-policy Damselfly supports.
func CheckPolicy(s string) error {
	_, err := parsePolicy(s)
	return err
}

// parsePolicy parses a maxmemory-policy name.
func parsePolicy(s string) (evictionPolicy, error) {
	name := strings.ToLower(s)
	for i, n := range policyNames {
		if n == name {
			return evictionPolicy(i), nil
		}
	}
	return 0, errors.New("argument(s) must be one of the following: volatile-lru, volatile-lfu, volatile-random, volatile-ttl, allkeys-lru, allkeys-lfu, allkeys-random, noeviction")
}

// evictor holds eviction's settings and counters.
type evictor struct {
	policy  atomic.Int32 // evictionPolicy
	samples atomic.Int32 // maxmemory-samples
	budget  atomic.Int64 // dataset bytes each shard may hold (cron)
	evicted atomic.Int64 // INFO evicted_keys
	pools   []evictPool  // by shard ID, each used under its shard's lock
}

// updateBudget recomputes the shards' share of maxmemory from used memory
// and the datasets' size as the cron measured them.
func (s *Server) updateBudget(used, dataset int64) {
	limit := s.cfg.maxMemory.Load()
	outside := max(0, used-dataset)
	s.evict.budget.Store(max(0, limit-outside) / int64(len(s.store.Shards())))
}

// admitWrite decides, with sh locked, whether a write may add to sh: it
// evicts from sh as the policy says and reports false when memory is still
// over the limit (the write must then fail with an out-of-memory error).
func (s *Server) admitWrite(sh *shard.Shard) bool {
	limit := s.cfg.maxMemory.Load()
	if limit == 0 || sh.IsReplica() {
		return true
	}
	if s.pause.expiryPaused() {
		return true // CLIENT PAUSE keeps the dataset constant (clientadmin.go)
	}
	policy := evictionPolicy(s.evict.policy.Load())
	if policy == noEviction {
		return s.usedMem.Load() <= limit
	}
	budget := s.evict.budget.Load()
	for datasetBytes(sh) > budget {
		if !s.evictOne(sh, policy) {
			return false
		}
	}
	return true
}

func datasetBytes(sh *shard.Shard) int64 {
	var n int64
	for db := range sh.DBCount() {
		if d := sh.PeekDB(db); d != nil {
			n += d.MemoryUsed()
		}
	}
	return n
}

// evictOne deletes the best victim of sh (locked) under policy; false when
// the shard has no candidate. Like Redis, LRU and TTL policies keep a pool
// of the best candidates seen (per shard), so every eviction chooses among
// many more keys than one round of samples.
func (s *Server) evictOne(sh *shard.Shard, policy evictionPolicy) bool {
	samples := int(s.evict.samples.Load())
	clock := sh.Clock()
	nowMs := now()
	score := func(e *shard.Entry) int64 {
		if policy == volatileTTL {
			return -e.ExpireAt()
		}
		if policy.lfu() {
			return 255 - int64(s.store.LFUCounter(e.Atime(), nowMs))
		}
		return shard.IdleSeconds(e.Atime(), clock)
	}
	random := policy == allKeysRandom || policy == volatileRandom
	pool := &s.evict.pools[sh.ID()]
	for db := range sh.DBCount() {
		d := sh.PeekDB(db)
		if d == nil || d.Len() == 0 || (policy.volatile() && d.ExpiresLen() == 0) {
			continue
		}
		n := 0
		consider := func(e *shard.Entry) bool {
			pool.offer(db, e.Key(), score(e), random)
			n++
			return n < samples && !random
		}
		if policy.volatile() {
			d.SampleExpires(rand.Uint64(), consider)
		} else {
			d.Sample(rand.Uint64(), consider)
		}
	}
	for len(pool.cands) > 0 {
		c := pool.pop()
		d := sh.PeekDB(c.db)
		if d == nil {
			continue
		}
		e, ok := d.Find(shard.Hash(c.key), c.key)
		if !ok || (policy.volatile() && e.ExpireAt() == 0) {
			continue // gone or persisted since it was sampled
		}
		if sc := score(&e); !random && sc < c.score {
			pool.offer(c.db, c.key, sc, false) // used since: not the best any more
			continue
		}
		d.Delete(&e)
		s.evict.evicted.Add(1)
		s.journal(c.db, [][]byte{[]byte("DEL"), c.key})
		s.notifyDB(c.db, kseEvicted, "evicted", c.key)
		return true
	}
	return false
}

// evictPool holds a shard's best eviction candidates, ascending by score
// (the best last); it is used under the shard's lock.
type evictPool struct {
	cands []candidate
	spare [][]byte // key buffers to reuse
}

type candidate struct {
	key   []byte
	db    int
	score int64
}

const evictPoolSize = 16

// offer adds a candidate unless the pool is full of better ones (random:
// the pool holds just the latest key).
func (p *evictPool) offer(db int, key []byte, score int64, random bool) {
	if random {
		p.reset()
	}
	for i := range p.cands {
		if p.cands[i].db == db && string(p.cands[i].key) == string(key) {
			p.remove(i)
			break
		}
	}
	if len(p.cands) == evictPoolSize {
		if score <= p.cands[0].score {
			return
		}
		p.remove(0)
	}
	i := len(p.cands)
	for i > 0 && p.cands[i-1].score > score {
		i--
	}
	var buf []byte
	if n := len(p.spare); n > 0 {
		buf, p.spare = p.spare[n-1][:0], p.spare[:n-1]
	}
	p.cands = append(p.cands, candidate{})
	copy(p.cands[i+1:], p.cands[i:])
	p.cands[i] = candidate{key: append(buf, key...), db: db, score: score}
}

// pop takes the best candidate; its key stays valid until the next offer.
func (p *evictPool) pop() candidate {
	n := len(p.cands) - 1
	c := p.cands[n]
	p.cands = p.cands[:n]
	p.spare = append(p.spare, c.key)
	return c
}

func (p *evictPool) remove(i int) {
	p.spare = append(p.spare, p.cands[i].key)
	p.cands = append(p.cands[:i], p.cands[i+1:]...)
}

func (p *evictPool) reset() {
	for len(p.cands) > 0 {
		p.remove(len(p.cands) - 1)
	}
}

// admitCommand decides whether a command that may grow memory may run
// (maxmemory set): under noeviction, whether used memory is within the
// limit; otherwise it runs admitWrite on the shards the command writes to
// (every shard for a command without key positions). false: refuse (-OOM).
func (c *Client) admitCommand(cmd *command, args [][]byte) bool {
	s := c.srv
	if evictionPolicy(s.evict.policy.Load()) == noEviction {
		return s.usedMem.Load() <= s.cfg.maxMemory.Load() || c.reclaimAndAdmit()
	}
	var set shard.Set
	c.sess.keyMem = cmd.appendKeys(c.sess.keyMem[:0], args)
	if len(c.sess.keyMem) > 0 {
		for _, k := range c.sess.keyMem {
			s.store.Add(&set, k)
		}
	} else {
		set = s.store.All()
	}
	shards := s.store.Shards()
	for _, id := range set.IDs() {
		sh := shards[id]
		if c.holds(sh) {
			if !s.admitWrite(sh) {
				return false
			}
			continue
		}
		sh.Lock()
		ok := s.admitWrite(sh)
		sh.Unlock()
		if !ok {
			return false
		}
	}
	return true
}
