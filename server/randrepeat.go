package server

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
	c.randReplyHeader(-n, p.len(), withPairs)
	r := c.rand()
	for k := int64(0); k < n; k++ {
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
