package server

// client-query-buffer-limit. The parser bounds each argument
// (proto-max-bulk-len) and the argument count, not a whole request: one
// request of many big arguments, or a huge one announced and sent, would
// otherwise sit in a client's input buffer whatever its size. As Redis
// does, a connection whose received but not yet executed input passes the
// limit (default 1 GiB, at least 1 MiB) is closed without a reply and the
// server logs why. The primary's replication stream is exempt.

const (
	defaultQueryBufferLimit = 1 << 30
	minQueryBufferLimit     = 1 << 20
)

// overQueryLimit reports whether the client's pending input passed
// client-query-buffer-limit (the caller then closes the connection); it is
// checked after every read, before the input runs.
func (c *Client) overQueryLimit() bool {
	if c.fromPrimary {
		return false
	}
	limit := c.srv.cfg.queryBufLimit.Load()
	if int64(c.w-c.r) <= limit {
		return false
	}
	c.srv.log.Warn("closing client that reached max query buffer length", "client", c.id, "pending", c.w-c.r, "limit", limit)
	return true
}
