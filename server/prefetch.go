package server

import (
	"unsafe"

	"github.com/damselflydb/damselfly/resp"
	"github.com/damselflydb/damselfly/shard"
)

// Key prefetching for pipelined requests (issue 20). With a keyspace larger
// than the CPU caches, a GET or SET spends much of its time waiting for two
// cache misses: the index bucket and the stored key it compares. Run one
// request after the other, each waits in turn. When the input buffer holds
// several complete requests, the client first peeks at up to aheadMax of
// them (resp.PeekKey: name and first argument only), and for those whose
// first argument is a key reads their index buckets (home, neighbour and,
// for a key kept in a stash bucket, that bucket), then the first 512
// bytes of the entries a lookup would compare, each step in a tight loop
// (shard.DB.PrefetchLookups), so the CPU overlaps the misses; the commands
// then run as before and find their data in cache.
//
// A hash command's field (a command registered x-field: HSET, HGET...) is
// the next miss once the hash is found: for a hash in the hashtable
// encoding, after the keys, the window reads the fields' index slots, then
// their entries (shard.DB.PrefetchFields), all fields of one hash together.
// Set and sorted set commands whose argument after the key is a member
// (SADD, SISMEMBER, SREM, ZSCORE, ZREM, ZRANK...) take the same path: their
// hashtable encodings use the same table.
//
// The window also keeps, for each request, its key's shard and hash (a
// keyHint): when the request runs, lockKey takes them from there instead
// of hashing and routing the key a second time.
//
// Invariants: prefetching is a hint and changes nothing. It reads under the
// shard lock, taken with TryLock so that it never waits (a busy script or a
// long lock holder is left to dispatch, which answers it as before). A
// request it cannot peek at (inline, partial, many arguments) ends the
// window. A lone request (nothing buffered after it) is never prefetched.

// aheadMax is the most requests one lookahead covers: enough to overlap the
// misses of a redis-benchmark -P 16 batch, few enough to stay in L1.
const aheadMax = 16

// lookahead is a client's prefetch window, allocated when the client first
// pipelines (about a kilobyte: not for every connection).
type lookahead struct {
	names  [aheadMax][]byte
	keys   [aheadMax][]byte
	args   [aheadMax][]byte // the argument after the key
	fields [aheadMax][]byte // by key slot: a hash field to prefetch, or nil
	fkeys  [aheadMax][]byte // by key slot: the key, when fields has one
	group  [aheadMax][]byte // one hash's fields
	shards [aheadMax]*shard.Shard
	hashes [aheadMax]uint64
	batch  [aheadMax]uint64       // one shard's hashes
	owner  [aheadMax]*shard.Shard // by key slot: its shard, while prefetchKeys runs
	hints  [aheadMax]keyHint
	seen   int // requests in the window
}

// keyHint is a request's first key as it lies in the input buffer (its
// first byte's address and its length) with its shard and hash. It is
// valid while the request runs: the input bytes it names do not change
// within a batch (processInput clears it), so a key slice with the same
// address and length has the same bytes. The address is a uintptr so that
// a window's hints do not keep an old input buffer alive; only the current
// window's hints are ever read. p 0 matches no key.
type keyHint struct {
	p  uintptr
	n  int
	sh *shard.Shard
	h  uint64
}

// shardOf is store.ShardOf(key), taken from the running request's hint
// when key is that request's key.
func (c *Client) shardOf(key []byte) (*shard.Shard, uint64) {
	if k := &c.keyHint; k.p != 0 && k.n == len(key) && uintptr(unsafe.Pointer(unsafe.SliceData(key))) == k.p {
		return k.sh, k.h
	}
	return c.srv.store.ShardOf(key)
}

// prefetchNext is called before each request of a batch, n bytes long: at
// the start of a window it prefetches the keys of the requests ahead. A
// request with nothing buffered after it (no pipelining) costs a compare.
func (c *Client) prefetchNext(n int) {
	if c.aheadLeft > 0 {
		c.aheadLeft--
		c.keyHint = c.ahead.hints[c.ahead.seen-1-c.aheadLeft]
		return
	}
	c.keyHint = keyHint{}
	if c.r+n >= c.w {
		return
	}
	c.aheadLeft = c.prefetchAhead() - 1
	if c.aheadLeft > 0 {
		c.keyHint = c.ahead.hints[0]
	}
}

// prefetchAhead prefetches the keys of the complete requests at the start
// of the unconsumed input and returns how many requests the window covers
// (at least 1).
func (c *Client) prefetchAhead() int {
	buf := c.in[c.r:c.w]
	if c.ahead == nil {
		c.ahead = new(lookahead)
	}
	a := c.ahead
	seen := 0
	for seen < aheadMax {
		name, key, arg, n, ok := resp.PeekKeyArg(buf)
		if !ok {
			break
		}
		a.names[seen], a.keys[seen], a.args[seen] = name, key, arg
		buf = buf[n:]
		seen++
	}
	if seen < 2 {
		return 1 // not pipelined: nothing to overlap
	}
	keys := 0
	a.seen = seen
	for i := 0; i < seen; i++ {
		a.hints[i] = keyHint{}
		if cmd := c.lookupCommand(a.names[i]); cmd != nil && cmd.firstKey == 1 && len(a.keys[i]) > 0 {
			sh, h := c.srv.store.ShardOf(a.keys[i])
			a.shards[keys], a.hashes[keys] = sh, h
			a.hints[i] = keyHint{p: uintptr(unsafe.Pointer(unsafe.SliceData(a.keys[i]))), n: len(a.keys[i]), sh: sh, h: h}
			a.fields[keys], a.fkeys[keys], a.owner[keys] = nil, nil, nil
			if cmd.fieldArg && a.args[i] != nil {
				a.fields[keys], a.fkeys[keys] = a.args[i], a.keys[i]
			}
			keys++
		}
		a.names[i], a.keys[i], a.args[i] = nil, nil, nil // views of the input: not kept
	}
	if keys > 1 {
		c.prefetchKeys(keys)
	}
	for i := 0; i < keys; i++ {
		a.fields[i], a.fkeys[i] = nil, nil
	}
	return seen
}

// prefetchKeys prefetches the first n keys of the window, one shard (one
// lock) at a time.
func (c *Client) prefetchKeys(n int) {
	a := c.ahead
	for i := 0; i < n; i++ {
		sh := a.shards[i]
		if sh == nil {
			continue
		}
		batch := a.batch[:0]
		for j := i; j < n; j++ {
			if a.shards[j] == sh {
				batch = append(batch, a.hashes[j])
				a.shards[j] = nil
				a.owner[j] = sh
			}
		}
		if !sh.TryLock() {
			continue
		}
		if d := sh.PeekDB(c.db); d != nil {
			d.PrefetchLookups(batch)
			c.prefetchFields(d, i, n, sh)
		}
		sh.Unlock()
	}
}

// prefetchFields prefetches the hash fields of the window's key slots i..n-1
// that lie in shard sh (locked, d its database), the fields of one hash in
// one call.
func (c *Client) prefetchFields(d *shard.DB, i, n int, sh *shard.Shard) {
	a := c.ahead
	for j := i; j < n; j++ {
		if a.fields[j] == nil || a.owner[j] != sh {
			continue
		}
		group := append(a.group[:0], a.fields[j])
		for k := j + 1; k < n; k++ {
			if a.fields[k] != nil && a.owner[k] == sh && a.hashes[k] == a.hashes[j] && string(a.fkeys[k]) == string(a.fkeys[j]) {
				group = append(group, a.fields[k])
				a.fields[k] = nil
			}
		}
		d.PrefetchFields(a.hashes[j], a.fkeys[j], group)
		a.fields[j] = nil
		clear(group)
	}
}
