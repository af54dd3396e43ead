package server

// Input buffers grown for big requests. A request larger than the 16 KiB
// input buffer grows it by doubling (makeRoom). Giving the grown buffer
// back as soon as the request ran made a client that keeps sending 100 KB
// values allocate, zero and fill 32, 64 and 128 KiB buffers for every
// request: 39% of the server's CPU for 100 KB SETs in a pprof profile. So a
// buffer of up to keepInBytes stays while the client's batches still fill
// a quarter of it, within a server-wide budget (retainInBudget): many idle
// clients whose last request was big hold at most that much together. The
// first small batch, or a full budget, gives the buffer back.

const (
	keepInBytes    = 1 << 20
	retainInBudget = 64 << 20
)

// inputDrained resets the input buffer once every request in it ran
// (r == w), keeping or giving back a grown buffer as above.
func (c *Client) inputDrained() {
	used, size := c.w, len(c.in)
	c.r, c.w = 0, 0
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

// releaseRetainedIn returns the client's share of the budget (when its
// buffer is given back or the client goes away).
func (c *Client) releaseRetainedIn() {
	if c.inHeld != 0 {
		c.srv.inRetained.Add(-c.inHeld)
		c.inHeld = 0
	}
}
