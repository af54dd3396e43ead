package server

import (
	"time"

	"github.com/damselflydb/damselfly/replication"
)

// Output buffer limits for ordinary clients (client-output-buffer-limit
// normal; the pubsub class is enforced by the subscriber's queue in
// pubsub.go, the replica class by the replication package's per-replica
// buffer, updated on CONFIG SET). After each command the replies not yet written are measured:
// past the hard limit, or past the soft limit continuously for longer than
// the soft seconds, the client is disconnected and its pending replies are
// dropped, as Redis does. A client that pipelines GETs of a large value
// without reading therefore costs at most about one reply past the limit.
// Between commands an event loop does not read a client whose output the
// socket does not take (netpoll), so output cannot grow while it waits.

// outputLimitReached applies the normal class's limits to the pending
// replies; true means the client was closed.
func (c *Client) outputLimitReached() bool {
	if c.sess.outq != nil || c.fromPrimary {
		return false
	}
	lim := c.srv.outLimits.Load().normal
	if lim.hard <= 0 && lim.soft <= 0 {
		return false
	}
	size := int64(len(c.out) - c.outPos)
	over := lim.hard > 0 && size >= lim.hard
	if !over && lim.soft > 0 && size >= lim.soft {
		now := time.Now().UnixNano()
		if c.obufSoftSince == 0 {
			c.obufSoftSince = now // the first time only starts the clock
		} else if time.Duration(now-c.obufSoftSince) > time.Duration(lim.softSecs)*time.Second {
			over = true
		}
	} else if !over {
		c.obufSoftSince = 0
	}
	if !over {
		return false
	}
	c.srv.log.Warn("client closed for overcoming of output buffer limits", "client", c.id, "addr", c.addr,
		"class", "normal", "bytes", size)
	c.srv.stats.outputLimitDisconnects.Add(1)
	c.out, c.outPos = nil, 0
	c.closed.Store(true)
	return true
}

// forReplication converts the replica class for the replication package.
func (o outLimit) forReplication() replication.OutputLimits {
	return replication.OutputLimits{Hard: o.hard, Soft: o.soft, SoftPeriod: time.Duration(o.softSecs) * time.Second}
}
