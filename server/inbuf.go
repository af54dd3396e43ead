package server

// Input buffers grown for big requests.
//
// Growth. A request larger than the 16 KiB input buffer grows it. Once the
// parser has read a bulk's header it knows the size the request needs
// (RequestReader.Need); the buffer is then allocated at exactly that size,
// once, as Redis reads a big argument into an exactly sized string. Doubling
// a 10 MB request's buffer from 16 KiB instead allocated, zeroed and copied
// ten buffers (26 MB allocated, 16 MB copied per request: 58% of the
// server's CPU for 10 MB SETs in a pprof profile). An announced size is not
// proof that the bytes will come, so an exact buffer is charged to a
// server-wide budget (aheadInBudget) until its request has run: many
// clients announcing huge bulks and sending nothing hold at most that much
// together. Past the budget, the buffer grows by doubling, never past twice
// what was received (makeRoom), as before.
//
// Retention. Giving the grown buffer back as soon as the request ran made a
// client that keeps sending 100 KB values allocate, zero and fill 32, 64 and
// 128 KiB buffers for every request: 39% of the server's CPU for 100 KB SETs
// in a pprof profile. So a buffer of up to keepInBytes stays while the
// client's batches still fill a quarter of it, within a server-wide budget
// (retainInBudget): many idle clients whose last request was big hold at
// most that much together. The first small batch, or a full budget, gives
// the buffer back. Keeping a 10 MB SET's exact buffer for the next one
// took its cost from 10.4 to 6.5 ms and its allocations from 10.2 MB to
// 0.25 MB (BenchmarkBigSet): fewer garbage collections, each of which a
// big allocation may have to wait for (its assist).

const (
	keepInBytes    = 16 << 20
	retainInBudget = 64 << 20
	aheadInBudget  = 256 << 20
)

// growExact replaces the full input buffer (compacted: the command starts
// at 0) with one of exactly need bytes if the budget has room for it;
// false leaves the buffer as it was.
func (c *Client) growExact(need int) bool {
	delta := int64(need) - c.inAhead
	if c.srv.inAhead.Add(delta) > aheadInBudget {
		c.srv.inAhead.Add(-delta)
		return false
	}
	c.inAhead = int64(need)
	buf := make([]byte, need)
	copy(buf, c.in[:c.w])
	c.setIn(buf)
	return true
}

// inputDrained resets the input buffer once every request in it ran
// (r == w), keeping or giving back a grown buffer as above.
func (c *Client) inputDrained() {
	used, size := c.w, len(c.in)
	c.r, c.w = 0, 0
	c.releaseAheadIn()
	if size <= 4*readBufSize {
		c.releaseRetainedIn()
		return
	}
	if size <= keepInBytes && used >= size/4 {
		delta := int64(size) - c.inHeld
		if delta <= 0 || c.srv.inRetained.Add(delta) <= retainInBudget {
			if delta < 0 {
				c.srv.inRetained.Add(delta)
			}
			c.inHeld = int64(size)
			return
		}
		c.srv.inRetained.Add(-delta)
	}
	c.releaseRetainedIn()
	c.setIn(make([]byte, readBufSize))
}

// releaseRetainedIn returns the client's shares of both budgets (when its
// buffer is given back or the client goes away).
func (c *Client) releaseRetainedIn() {
	c.releaseAheadIn()
	if c.inHeld != 0 {
		c.srv.inRetained.Add(-c.inHeld)
		c.inHeld = 0
	}
}

// releaseAheadIn returns the client's share of aheadInBudget: its request
// ran (or it went away), so its buffer is no longer a bet on bytes to come.
func (c *Client) releaseAheadIn() {
	if c.inAhead != 0 {
		c.srv.inAhead.Add(-c.inAhead)
		c.inAhead = 0
	}
}
