package server

// Transactions: MULTI, EXEC, DISCARD, WATCH, UNWATCH; and the per-connection
// session state shared with Pub/Sub and scripting.
//
// Design and invariants:
//   - Between MULTI and EXEC, commands are validated (unknown command, arity,
//     Pub/Sub context) and queued with private copies of their arguments; a
//     validation error marks the transaction so EXEC answers EXECABORT.
//   - EXEC locks, in ascending order, the shards of every queued command's
//     keys and of every watched key, or all shards when a queued command has
//     no key specification (FLUSHALL, KEYS, DBSIZE, EVAL...). With the locks
//     held it checks the WATCH registrations (shard.Watch), then runs the
//     queued handlers one by one. While it runs, c.sess.held marks the held
//     shards and the lock helpers of keyspace.go skip them, so handlers lock
//     nothing twice and no other client sees a partial transaction.
//   - Replication: the writes of an EXEC (or a script) are collected while
//     the locks are held and handed to the journal at the end, still under the
//     locks: one write as itself, several wrapped in MULTI ... EXEC, as Redis 7
//     propagates them.
//   - A runtime error (or a recovered panic) in one queued command is that
//     command's reply; the others still run.

import (
	"slices"

	"github.com/damselflydb/damselfly/shard"
)

func registerMulti(reg registrar) {
	reg("multi", 1, "noscript|loading|stale|fast|allow_busy|x-tx-control", 0, 0, 0, "transactions", cmdMulti)
	reg("exec", 1, "noscript|loading|stale|skip_slowlog|x-tx-control", 0, 0, 0, "transactions", cmdExec)
	reg("discard", 1, "noscript|loading|stale|fast|allow_busy|x-tx-control", 0, 0, 0, "transactions", cmdDiscard)
	reg("watch", -2, "noscript|loading|stale|fast|allow_busy|x-tx-control", 1, -1, 1, "transactions", cmdWatch)
	reg("unwatch", 1, "noscript|loading|stale|fast|allow_busy|x-no-data", 0, 0, 0, "transactions", cmdUnwatch)
}

// session is a connection's Pub/Sub, transaction and script state. Only the
// connection's goroutine touches it, except where noted.
type session struct {
	subs clientSubs
	outq *outQueue // queued output (set on first subscription)

	tx    *txState     // between MULTI and EXEC/DISCARD
	watch *shard.Watch // watched keys (nil: none)

	held     []bool // shards held by the running EXEC or script, by ID
	capture  bool   // collect writes for the journal (EXEC, script)
	inScript bool   // a script is running (its replies go to a scratch buffer)
	captured []journalRec

	// Storage reused by every transaction, so that MULTI/EXEC allocates
	// next to nothing: the queued commands' arguments (valid until the next
	// MULTI), the captured writes' arguments (until they are journalled),
	// the transaction itself, the held-shard flags and a key list.
	txArena, capArena argArena
	txMem             txState
	heldMem           []bool
	keyMem            [][]byte
}

type txState struct {
	queue  []queuedCmd
	failed bool
}

type queuedCmd struct {
	cmd  *command
	args [][]byte
}

type journalRec struct {
	db   int
	args [][]byte
}

// intercept runs before a command executes: it rejects what a RESP2
// subscriber may not run and queues commands inside MULTI. True means the
// command was handled.
func (c *Client) intercept(cmd *command, args [][]byte) bool {
	if c.sess.subs.Subscribed() && c.rejectInPubSub(cmd, args) {
		c.txFlag()
		return true
	}
	if c.sess.tx != nil && !cmd.txPass {
		if cmd.noMulti {
			c.err("ERR Command not allowed inside a transaction")
			c.txFlag()
			return true
		}
		c.sess.tx.queue = append(c.sess.tx.queue, queuedCmd{cmd: cmd, args: c.sess.txArena.copy(args)})
		c.view.multi.Store(int32(len(c.sess.tx.queue)))
		n := 0
		for _, a := range args {
			n += len(a)
		}
		c.view.multiMem.Add(int64(n))
		c.simple("QUEUED")
		return true
	}
	return false
}

// txFlag marks the open transaction as failed (a command was rejected
// while queuing).
func (c *Client) txFlag() {
	if c.sess.tx != nil {
		c.sess.tx.failed = true
	}
}

// inTransaction reports whether the connection is inside MULTI or running
// EXEC or a script: blocking commands must not block then.
func (c *Client) inTransaction() bool { return c.sess.tx != nil || c.sess.held != nil }

func cmdMulti(c *Client, args [][]byte) {
	if c.sess.tx != nil {
		c.err("ERR MULTI calls can not be nested")
		return
	}
	// The previous transaction's storage is reused: its EXEC is over (no
	// command runs MULTI while EXEC runs its queue).
	c.sess.txArena.reset()
	clear(c.sess.txMem.queue)
	c.sess.txMem = txState{queue: c.sess.txMem.queue[:0]}
	c.setTx(&c.sess.txMem)
	c.ok()
}

func cmdDiscard(c *Client, args [][]byte) {
	if c.sess.tx == nil {
		c.err("ERR DISCARD without MULTI")
		return
	}
	c.setTx(nil)
	c.unwatchAll()
	c.ok()
}

func cmdWatch(c *Client, args [][]byte) {
	if c.sess.tx != nil {
		c.err("ERR WATCH inside MULTI is not allowed")
		return
	}
	if c.sess.watch == nil {
		c.sess.watch = &shard.Watch{}
	}
	t := now()
	for _, key := range args[1:] {
		sh, h := c.srv.store.ShardOf(key)
		sh.Lock()
		sh.Watch(c.sess.watch, c.db, h, key, t)
		sh.Unlock()
	}
	c.ok()
}

func cmdUnwatch(c *Client, args [][]byte) {
	c.unwatchAll()
	c.ok()
}

func (c *Client) unwatchAll() {
	if w := c.sess.watch; w != nil && w.Len() > 0 {
		c.srv.store.Unwatch(w)
	}
}

// resetSession is RESET's (and disconnection's) part: discard the
// transaction, forget watched keys, drop subscriptions.
func (c *Client) resetSession() {
	c.setTx(nil)
	c.unwatchAll()
	c.unsubscribeAll()
	c.stopMonitor() // monitor.go
	c.trackOff()    // tracking.go
}

// endSession runs when the connection ends: it releases everything and
// flushes the queued output.
func (c *Client) endSession() {
	c.resetSession()
	if q := c.sess.outq; q != nil {
		q.stop()
	}
}

func cmdExec(c *Client, args [][]byte) {
	tx := c.sess.tx
	if tx == nil {
		c.err("ERR EXEC without MULTI")
		return
	}
	c.setTx(nil)
	if tx.failed {
		c.unwatchAll()
		c.err("EXECABORT Transaction discarded because of previous errors.")
		return
	}
	store := c.srv.store
	var set shard.Set
	all := false
	for _, q := range tx.queue {
		if q.cmd.lockAll {
			all = true
			break
		}
		c.sess.keyMem = q.cmd.appendKeys(c.sess.keyMem[:0], q.args)
		for _, k := range c.sess.keyMem {
			store.Add(&set, k)
		}
	}
	w := c.sess.watch
	if all {
		set = store.All()
	} else if w != nil {
		w.Shards(&set)
	}
	if b := c.beginTxScripts(tx.queue); b != nil { // script.go
		defer c.srv.scripts.end(b)
	}
	store.LockMany(&set)
	defer store.UnlockMany(&set)
	if w != nil && w.Len() > 0 {
		changed := w.Changed(now())
		w.ReleaseLocked()
		if changed {
			c.nullArray()
			return
		}
	}
	c.runHeld(&set, func() {
		c.array(len(tx.queue))
		for _, q := range tx.queue {
			if q.cmd.ownLocks {
				c.runUnheld(&set, q.cmd, q.args)
				continue
			}
			c.runQueued(q.cmd, q.args)
		}
	})
}

// runUnheld runs a queued command that takes locks or waits for other
// goroutines itself (x-own-locks: REPLICAOF, DEBUG): holding shards while
// it runs would deadlock it against itself or against the goroutine it
// waits for. The transaction's locks are released around it and taken
// again (in order) before the next queued command, so such a command is
// the one point where another client's command may run between the
// transaction's commands.
func (c *Client) runUnheld(set *shard.Set, cmd *command, args [][]byte) {
	held := c.sess.held
	c.sess.held = nil
	c.srv.store.UnlockMany(set)
	defer func() {
		c.srv.store.LockMany(set)
		c.sess.held = held
	}()
	c.runQueued(cmd, args)
}

// runHeld runs fn with the shards of set (locked by the caller) marked as
// held, collecting its writes and handing them to the journal at the end.
func (c *Client) runHeld(set *shard.Set, fn func()) {
	if c.sess.heldMem == nil {
		c.sess.heldMem = make([]bool, len(c.srv.store.Shards()))
	}
	held := c.sess.heldMem
	clear(held)
	for _, id := range set.IDs() {
		held[id] = true
	}
	c.sess.held = held
	c.sess.capture = true
	saved := c.propagate
	defer func() {
		c.propagate = saved
		c.sess.held = nil
		c.sess.capture = false
		c.flushCaptured()
	}()
	fn()
}

// runQueued runs one queued command; a panic becomes its error reply.
func (c *Client) runQueued(cmd *command, args [][]byte) {
	defer func() {
		if r := recover(); r != nil {
			c.srv.log.Error("panic in command", "command", cmd.name, "panic", r)
			c.err("ERR internal error while running '" + cmd.name + "'")
		}
	}()
	if c.aclExecDenied(cmd, args) { // acl.go
		return
	}
	c.propagate = args
	start, errs := c.cmdBegin(cmd, args), c.errCount
	if c.track.on || c.admin.noTouch.Load() {
		c.beforeCommand(cmd, args) // clientadmin.go
	}
	cmd.fn(c, args)
	c.cmdDone(cmd, args, start, errs, callQueued)
}

// captureWrite records a committed write of the running EXEC or script.
func (c *Client) captureWrite() {
	c.sess.captured = append(c.sess.captured, journalRec{db: c.db, args: c.sess.capArena.copy(c.propagate)})
}

// flushCaptured hands the collected writes to the journal (locks held).
func (c *Client) flushCaptured() {
	recs := c.sess.captured
	defer func() {
		clear(recs)
		c.sess.captured = recs[:0]
		c.sess.capArena.reset()
	}()
	j := c.srv.journal
	if len(recs) == 0 {
		return
	}
	if len(recs) == 1 {
		c.woff = j(recs[0].db, recs[0].args)
		return
	}
	j(recs[0].db, c.srv.words.multi)
	for _, r := range recs {
		j(r.db, r.args)
	}
	c.woff = j(recs[len(recs)-1].db, c.srv.words.exec)
}

// holds reports whether the running EXEC or script holds sh.
func (c *Client) holds(sh *shard.Shard) bool {
	return c.sess.held != nil && c.sess.held[sh.ID()]
}

// lockShard locks one shard for a command that visits shards one at a time
// (KEYS, SCAN, DBSIZE, INFO): a no-op when EXEC or a script holds it.
func (c *Client) lockShard(sh *shard.Shard) {
	if c == nil || !c.holds(sh) {
		sh.Lock()
	}
}

func (c *Client) unlockShard(sh *shard.Shard) {
	if c == nil || !c.holds(sh) {
		sh.Unlock()
	}
}

// lockUnheld locks, in ascending order, the shards of set the running
// EXEC or script does not hold. Those it holds cover every key a correctly
// specified command uses; anything else is locked here as a last resort.
func (c *Client) lockUnheld(set *shard.Set) {
	ids := set.IDs()
	slices.Sort(ids)
	shards := c.srv.store.Shards()
	for _, id := range ids {
		if !c.sess.held[id] {
			shards[id].Lock()
		}
	}
}

func (c *Client) unlockUnheld(set *shard.Set) {
	ids := set.IDs()
	shards := c.srv.store.Shards()
	for i := len(ids) - 1; i >= 0; i-- {
		if !c.sess.held[ids[i]] {
			shards[ids[i]].Unlock()
		}
	}
}
