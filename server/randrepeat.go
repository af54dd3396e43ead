package server

import "time"

// Picks with repetition (a negative count to SRANDMEMBER, HRANDFIELD or
// ZRANDMEMBER) are independent of each other, so a count far larger than
// the collection needs no lock per pick: the collection is copied once
// under the shard lock (as long as SMEMBERS would hold it) and the picks
// are drawn from the copy after the lock is released. Without this a
// single `SRANDMEMBER s -200000000` held its shard for minutes.

// copyForRepeats reports whether count picks with repetition from a
// collection of size members should be drawn from a copy: only when the
// picks outnumber both the members and a small constant, so ordinary
// calls keep replying straight from the shard.
func copyForRepeats(count int64, size int) bool {
	const minPicks = 1024
	return count < 0 && -count > minPicks && -count > int64(size)
}

// randPool is a copy of a collection's members (and values or scores).
type randPool struct {
	members [][]byte
	values  [][]byte  // hash values, when asked for
	scores  []float64 // sorted-set scores
}

func (p *randPool) len() int { return len(p.members) }

// replyRepeats answers n picks with repetition from the pool, pairs as
// RESP3 two-element arrays or flat in RESP2 like randReplyHeader says.
func (c *Client) replyRepeats(p *randPool, n int64, withPairs bool) {
	// No shard is held while the picks are drawn: not the watchdog's concern.
	start := time.Now()
	defer func() { c.waitedNs += int64(time.Since(start)) }()
	c.randReplyHeader(-n, p.len(), withPairs)
	r := c.rand()
	for k := int64(0); k < n; k++ {
		if k&(1<<14-1) == 0 && k > 0 && !c.streamPartialReply() {
			return // the connection is gone: the rest of the reply has no reader
		}
		i := r.IntN(p.len())
		if withPairs && c.proto == 3 {
			c.array(2)
		}
		c.bulk(p.members[i])
		if !withPairs {
			continue
		}
		if p.scores != nil {
			c.double(p.scores[i])
		} else {
			c.bulk(p.values[i])
		}
	}
}

// manyRandPicks reports whether a *RANDMEMBER/HRANDFIELD call asks for so
// many picks with repetition that writing the reply could stall an event
// loop's other clients for a noticeable time; such calls run off the loop.
func manyRandPicks(args [][]byte) bool {
	const detachPicks = 1 << 16
	if len(args) < 3 {
		return false
	}
	n, ok := parseInt(args[2])
	return ok && n < -detachPicks
}

// streamPartialReply writes the reply built so far once it passes
// streamReplyBytes, when this goroutine owns the connection (a detached or
// goroutine-per-connection client) and nothing else shapes its output
// (CLIENT REPLY OFF/SKIP, a subscribed client's queue, a script capturing
// redis.call's reply in c.out, EXEC). Millions of picks so neither pile up
// in memory nor keep being drawn for a client that has gone: false means
// the connection is closed and the command should stop.
func (c *Client) streamPartialReply() bool {
	const streamReplyBytes = 1 << 20
	if c.closed.Load() || c.quit {
		return false
	}
	if len(c.out) < streamReplyBytes || c.loop != nil || c.nc == nil || c.reply.mode != replyOn ||
		c.sess.outq != nil || c.sess.held != nil || c.srv.scripts.busy.Load() != nil {
		return true
	}
	if _, err := c.nc.Write(c.out[c.outPos:]); err != nil {
		c.quit = true
		return false
	}
	c.out, c.outPos = c.out[:0], 0
	return true
}
