package server

import (
	"github.com/damselflydb/damselfly/netpoll"
	"github.com/damselflydb/damselfly/shard"
	"github.com/damselflydb/damselfly/snapshot"
)

// The save's writer gate (snapshot.WriterGate): a connection whose write
// took a running save's memory budget past its soft limit (a big value
// overwritten or deleted before the save wrote it) waits at the gate
// before its next write command, holding no shard lock, until the budget
// is back under the soft limit or the save ends. So the overwriter is
// slowed, not the other clients of its shard or event loop, which the
// budget's last resort (waiting for room with the shard locked) stalled.
//
// Who: the snapshot marks the shard under the writer's lock
// (shard.Shard.MarkGate); unlockKey and unlock (keyspace.go) move the mark
// to the client (gateWait). Where: dispatch, before a command that writes
// (the write flag, EXEC, EVAL, EVALSHA, FCALL), after MULTI queuing. A
// loop-owned client is detached from its loop (as for a blocking command)
// and waits on its own goroutine, then is adopted by a loop again
// (serveFrom, reattach); a goroutine-per-connection client simply waits.
// The replica's link to its primary and the AOF loader never wait here
// (they must apply the stream in order and have no client to slow), nor
// does the memcached front end (its handlers have no such pause point):
// they stay bounded by the budget's hard limit, the last resort.

// saveGate is the gate every save uses (nil while disabled by a test).
func (s *Server) saveGate() *snapshot.WriterGate {
	if s.noWriterGate.Load() {
		return nil
	}
	return &s.writerGate
}

// takeGateMark moves the shard's gate mark to c (shard locked by c).
func (c *Client) takeGateMark(sh *shard.Shard) {
	if sh.TakeGateMark() && !c.fromPrimary && !c.aofLoading {
		c.gateWait = true
	}
}

// gated reports whether cmd writes, for the gate: write commands, and the
// commands that run others that may (EXEC, EVAL, EVALSHA, FCALL).
func gated(cmd *command) bool {
	if cmd.write {
		return true
	}
	switch cmd.name {
	case "exec", "eval", "evalsha", "fcall":
		return true
	}
	return false
}

// waitAtGate holds c (marked, about to run a write) at the save's gate.
// It returns false when c was detached from its loop to wait on its own
// goroutine (the command stays buffered and runs there).
func (c *Client) waitAtGate() bool {
	g := c.srv.saveGate()
	if g == nil {
		c.gateWait = false
		return true
	}
	if c.loop != nil {
		if !g.Closed() {
			c.gateWait = false
			return true
		}
		c.detach, c.waitDetached = true, true
		c.srv.gateDetaches.Add(1)
		return false
	}
	c.clockBreak() // cmdclock.go: the wait is not the command's time
	if ch := g.Wait(); ch != nil {
		<-ch
	}
	c.gateWait = false
	return true
}

// reattach hands c, detached from its loop only to wait at the gate, back
// to a loop (true: a loop owns it now; the caller must not touch it). Its
// goroutine calls it after executing the input it had and writing the
// replies, so what is buffered is at most the start of a request, which
// the loop completes when the rest arrives. A client that took up
// something a loop does not serve (Pub/Sub, MONITOR, TLS) stays.
func (c *Client) reattach() bool {
	if c.gateWait {
		if g := c.srv.saveGate(); g != nil && g.Closed() {
			return false // it is to wait before its next write
		}
		c.gateWait = false
	}
	if c.srv.loops == nil || c.sess.outq != nil || c.monitoring || c.handoff != nil ||
		c.quit || c.closed.Load() || len(c.out) > 0 {
		return false
	}
	c.waitDetached = false
	pc, ok := c.nc.(netpoll.Conn)
	if !ok {
		return false
	}
	srv := c.srv
	if srv.adopt(c, pc) != nil {
		return false // the goroutine keeps serving it
	}
	srv.gateReattaches.Add(1) // c is the loop's now: not touched again
	return true
}
