package server

import (
	"time"

	"github.com/damselflydb/damselfly/shard"
)

// now is the clock expiry is judged by (unix ms).
func now() int64 { return time.Now().UnixMilli() }

// Every command touches data between a lock call and its matching unlock
// call below (normally deferred). The pair is also where a write is
// committed to the replication stream: if the command changed any locked
// shard, its propagated form (by default its own arguments; see rewrite) is
// appended while the locks are still held, so the stream follows the order
// in which writes were applied.

// lockKey locks the shard of key and returns it with the key's hash; the
// caller must call c.unlockKey(sh).
func (c *Client) lockKey(key []byte) (*shard.Shard, uint64) {
	sh, h := c.shardOf(key) // prefetch.go: hashed once per pipelined request
	if !c.holds(sh) {
		sh.Lock()
	}
	if c.fromPrimary {
		sh.SetPrimaryView(true)
	}
	if c.admin.skipTouch {
		c.noTouchLock(sh) // clientadmin.go: CLIENT NO-TOUCH
	}
	c.dirtyMark = sh.Dirty()
	return sh, h
}

// unlockKey commits what the command wrote and unlocks the shard.
func (c *Client) unlockKey(sh *shard.Shard) {
	if sh.Dirty() != c.dirtyMark {
		c.srv.commitWrite(c)
		if c.srv.track.users.Load() > 0 {
			c.srv.trackFlush(sh, c) // tracking.go
		}
	}
	if c.fromPrimary {
		sh.SetPrimaryView(false)
	}
	if c.admin.skipTouch {
		c.noTouchUnlock(sh)
	}
	c.takeGateMark(sh) // writergate.go
	if !c.holds(sh) {
		sh.Unlock()
	}
}

// lockKeys locks the shards of all keys in ascending order.
func (c *Client) lockKeys(keys ...[][]byte) *shard.Set {
	set := &shard.Set{}
	for _, ks := range keys {
		for _, k := range ks {
			c.srv.store.Add(set, k)
		}
	}
	return c.lockSet(set)
}

// lockAll locks every shard (FLUSHALL, SWAPDB, EXEC of many keys).
func (c *Client) lockAll() *shard.Set {
	set := c.srv.store.All()
	return c.lockSet(&set)
}

func (c *Client) lockSet(set *shard.Set) *shard.Set {
	if c.sess.held != nil {
		c.lockUnheld(set) // inside EXEC or a script
	} else {
		c.srv.store.LockMany(set)
	}
	if c.fromPrimary {
		c.primaryView(set, true)
	}
	if c.admin.skipTouch {
		c.noTouchSet(set, true) // clientadmin.go: CLIENT NO-TOUCH
	}
	c.dirtyMark = c.srv.store.DirtySum(set)
	return set
}

// unlock commits what the command wrote and unlocks the set.
func (c *Client) unlock(set *shard.Set) {
	if c.srv.store.DirtySum(set) != c.dirtyMark {
		c.srv.commitWrite(c)
		if c.srv.track.users.Load() > 0 {
			c.srv.trackFlushSet(set, c) // tracking.go
		}
	}
	if c.fromPrimary {
		c.primaryView(set, false)
	}
	if c.admin.skipTouch {
		c.noTouchSet(set, false)
	}
	shards := c.srv.store.Shards()
	for _, id := range set.IDs() {
		c.takeGateMark(shards[id]) // writergate.go
	}
	if c.sess.held != nil {
		c.unlockUnheld(set)
	} else {
		c.srv.store.UnlockMany(set)
	}
}

// primaryView marks the locked shards of set as applying the primary's
// stream (on) or not: on a replica, the master client must see keys that
// expired by our clock but not yet by the primary's (shard.Shard.Lookup).
func (c *Client) primaryView(set *shard.Set, on bool) {
	shards := c.srv.store.Shards()
	for _, id := range set.IDs() {
		shards[id].SetPrimaryView(on)
	}
}

// rewrite replaces the form in which the running command is replicated
// (e.g. EXPIRE as PEXPIREAT), as Redis does for non-deterministic commands.
func (c *Client) rewrite(args ...[]byte) { c.propagate = args }

// commitWrite records that c's current command changed data: it counts
// towards the save schedule and is handed to the replication journal.
// Called with the command's shard locks held.
func (s *Server) commitWrite(c *Client) {
	s.dirty.Add(1)
	s.noteAOFWrite(c)
	switch {
	case c.fromPrimary:
		// The primary's exact bytes join our own stream (chained replicas,
		// promotion); see replication.Node.CommitFromPrimary.
		s.aofFeedFromPrimary(c)
		s.repl.CommitFromPrimary()
	case c.propagateMany != nil:
		cmds := c.propagateMany
		c.propagateMany = nil
		if c.sess.capture {
			for _, args := range cmds {
				c.sess.captured = append(c.sess.captured, journalRec{db: c.db, args: c.sess.capArena.copy(args)})
			}
			return
		}
		s.journal(c.db, s.words.multi)
		for _, args := range cmds {
			s.journal(c.db, args)
		}
		c.woff = s.journal(c.db, s.words.exec)
	case c.propagate == nil:
	case c.sess.capture: // EXEC or a script: journaled at its end
		c.captureWrite()
	default:
		c.woff = s.journal(c.db, c.propagate)
	}
}

// lookup finds key in the client's database (shard locked by the caller).
func (c *Client) lookup(key []byte) (*shard.Shard, shard.Entry, bool) {
	sh, h := c.srv.store.ShardOf(key)
	e, ok := sh.Lookup(c.db, h, key, c.nowMs())
	return sh, e, ok
}

// commitMemcached commits a write of the memcached front end (called with
// its shard locks held): counted like a RESP write and journalled in its
// RESP form.
func (s *Server) commitMemcached(db int, args [][]byte) {
	s.dirty.Add(1)
	s.journal(db, args)
}
