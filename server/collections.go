package server

import (
	"math/rand/v2"
	"strconv"

	"github.com/damselflydb/damselfly/shard"
	"github.com/damselflydb/damselfly/shard/types"
)

// Helpers shared by the collection commands (lists, hashes, sets, sorted
// sets). Collections live in shard entries as objects from package types;
// a command finds the entry under its shard lock, checks its type, calls
// db.Modify before changing the object in place, and deletes the key when
// the collection becomes empty (Redis never keeps empty collections).

// defaultLimits are the encoding thresholds of redis-server 7.0, which has
// no listpack sets: set-max-listpack-entries 0 makes small non-integer sets
// "hashtable" as 7.0 reports them.
func defaultLimits() types.Limits {
	l := types.DefaultLimits
	l.SetMaxListpackEntries = 0
	return l
}

// lim returns the current encoding thresholds (replaced as a whole by
// CONFIG SET, so a command sees one consistent set).
func (c *Client) lim() *types.Limits { return c.srv.limits.Load() }

// getColl looks key up in the locked shard sh and checks its type. A
// missing key returns found=false; a key of another type is answered with
// WRONGTYPE and returns bad=true.
func (c *Client) getColl(sh *shard.Shard, h uint64, key []byte, t shard.Type) (e shard.Entry, found, bad bool) {
	e, found = sh.Lookup(c.db, h, key, c.nowMs())
	if found && e.Type() != t {
		c.errWrongType()
		return e, false, true
	}
	return e, found, false
}

// getCollAt is getColl for a command holding several shard locks.
func (c *Client) getCollAt(key []byte, t shard.Type) (sh *shard.Shard, h uint64, e shard.Entry, found, bad bool) {
	sh, h = c.srv.store.ShardOf(key)
	e, found, bad = c.getColl(sh, h, key, t)
	return
}

// peekType is like getColl but does not reply: wrong reports a type mismatch.
func (c *Client) peekType(key []byte, t shard.Type) (e shard.Entry, found, wrong bool) {
	sh, h := c.srv.store.ShardOf(key)
	e, found = sh.Lookup(c.db, h, key, c.nowMs())
	if found && e.Type() != t {
		return e, false, true
	}
	return e, found, false
}

// putColl stores a new collection under key (replacing whatever was there)
// and wakes clients blocked on it when it is a list or a sorted set.
func (c *Client) putColl(sh *shard.Shard, h uint64, key []byte, t shard.Type, obj any) {
	sh.DB(c.db).Put(h, key, shard.Value{Type: t, Obj: obj})
	if t == shard.TypeList || t == shard.TypeZSet {
		c.srv.signalReady(c.db, key)
	}
}

// storeColl replaces key with obj, a collection of n elements (a *STORE
// destination, whose shard is locked): an empty result deletes the key, as
// Redis does.
// It returns the keyspace event to raise (a *storeEvent) for the caller
// to raise where Redis does relative to its reply, which differs by
// command: event (of class) for a stored result, "del" for a deleted key.
func (c *Client) storeColl(key []byte, t shard.Type, obj any, n int, class uint32, event string) storeEvent {
	sh, h := c.srv.store.ShardOf(key)
	old, ok := sh.Lookup(c.db, h, key, c.nowMs())
	if n > 0 {
		// Put replaces what was there (no "new" event for an overwrite).
		c.putColl(sh, h, key, t, obj)
		return storeEvent{class, event, key}
	}
	if ok {
		sh.DB(c.db).Delete(&old)
		return storeEvent{kseGeneric, "del", key}
	}
	return storeEvent{}
}

// storeEvent is the keyspace event of a *STORE (storeColl); the zero
// value raises none.
type storeEvent struct {
	class uint32
	event string
	key   []byte
}

// raise raises e's event, if any.
func (e storeEvent) raise(c *Client) {
	if e.event != "" {
		c.notify(e.class, e.event, e.key)
	}
}

// rand is the client's random source (SPOP, SRANDMEMBER, HRANDFIELD ...).
func (c *Client) rand() *rand.Rand {
	if c.rnd == nil {
		c.rnd = rand.New(rand.NewPCG(randUint64(), randUint64()))
	}
	return c.rnd
}

// parseCount parses a count argument with Redis's "value is out of range,
// must be positive" rule (LPOP, SPOP, ZPOPMIN ... counts).
func parseCount(c *Client, b []byte) (int64, bool) {
	n, ok := parseInt(b)
	if !ok || n < 0 {
		c.err("ERR value is out of range, must be positive")
		return 0, false
	}
	return n, true
}

// scanOpts parses the [MATCH pattern] [COUNT count] options of HSCAN, SSCAN
// and ZSCAN; args start after the cursor.
func scanOpts(c *Client, args [][]byte) (pattern []byte, count int, ok bool) {
	count = 10
	for i := 0; i < len(args); i++ {
		switch {
		case eq(args[i], "count") && i+1 < len(args):
			n, ok := parseInt(args[i+1])
			if !ok {
				c.errNotInteger()
				return nil, 0, false
			}
			if n < 1 {
				c.errSyntax()
				return nil, 0, false
			}
			count = int(min(n, 1<<30))
			i++
		case eq(args[i], "match") && i+1 < len(args):
			pattern = args[i+1]
			if len(pattern) == 1 && pattern[0] == '*' {
				pattern = nil
			}
			i++
		default:
			c.errSyntax()
			return nil, 0, false
		}
	}
	return pattern, count, true
}

// parseCursor parses a SCAN-family cursor.
//
// Redis reads a cursor with strtoul: "" is 0, a sign is allowed and "-1"
// wraps to 2^64-1; only leading space, trailing bytes and overflow are
// refused.
func parseCursor(c *Client, b []byte) (uint64, bool) {
	s := string(b)
	neg := false
	if s != "" && (s[0] == '+' || s[0] == '-') {
		neg, s = s[0] == '-', s[1:]
	}
	cur, err := strconv.ParseUint(s, 10, 64)
	if len(b) == 0 {
		cur, err = 0, nil
	} else if s == "" || s[0] < '0' || s[0] > '9' {
		err = strconv.ErrSyntax // ParseUint would take "+5"; strtoul not "--5"
	}
	if err != nil {
		c.err("ERR invalid cursor")
		return 0, false
	}
	if neg {
		cur = -cur
	}
	return cur, true
}

// bytesArg formats an integer as a replication argument.
func bytesArg(n int64) []byte { return strconv.AppendInt(nil, n, 10) }

// collLen is LLEN, HLEN, SCARD and ZCARD: the length of the collection of
// type t at args[1], 0 for a missing key.
func collLen(t shard.Type) func(c *Client, args [][]byte) {
	return func(c *Client, args [][]byte) {
		sh, h := c.lockKey(args[1])
		defer c.unlockKey(sh)
		e, found, bad := c.getColl(sh, h, args[1], t)
		switch {
		case bad:
		case !found:
			c.keyMiss(args[1])
			c.int(0)
		default:
			c.int(int64(e.Obj().(interface{ Len() int }).Len()))
		}
	}
}

// firstNonEmpty finds, for a blocking pop, the first of keys that holds a
// collection of type t (their shards locked). A key of another type gets
// WRONGTYPE on the first attempt (done); when a waiter is woken later such
// keys are skipped, as Redis does.
func (c *Client) firstNonEmpty(keys [][]byte, t shard.Type, first bool) (k []byte, sh *shard.Shard, e shard.Entry, found, done bool) {
	for _, k := range keys {
		e, found, wrong := c.peekType(k, t)
		if wrong {
			if first {
				c.errWrongType()
				return nil, nil, e, false, true
			}
			continue
		}
		if found {
			sh, _ := c.srv.store.ShardOf(k)
			return k, sh, e, true, false
		}
	}
	return nil, nil, shard.Entry{}, false, false
}
