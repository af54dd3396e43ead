package server

// Shard channels in cluster mode: when a topology change leaves this node
// serving a slot no longer (neither as its primary nor as the primary's
// replica), the shard channels of that slot are dropped and each of their
// subscribers is told with SUNSUBSCRIBE, as Redis 7.0 does
// (removeChannelsInSlot). The registry (package pubsub) does the dropping
// under its lock; this file only decides which channels and formats the
// confirmations, pushed to the subscribers' queues.

import (
	"strconv"

	"github.com/tidwall/redcon"

	"github.com/damselflydb/damselfly/cluster"
)

// dropUnservedShardChannels runs after a topology change, with no shard
// lock held.
func (s *Server) dropUnservedShardChannels() {
	if s.cluster == nil {
		return
	}
	v := s.cluster.view.Load()
	if v == nil || v.topo == nil {
		return
	}
	s.pubsub.UnsubscribeShardWhere(func(ch string) bool {
		return !v.servesShardChannel(cluster.KeySlot([]byte(ch)))
	}, func(sub *clientSubs, ch []byte, count int) {
		c := sub.Owner
		if q := c.sess.outq; q != nil { // set before its first subscription
			q.push(c, appendUnsubscribed(nil, int(q.proto.Load()), unsubVerb[kindShard], ch, count))
		}
	})
}

// servesShardChannel reports whether this node serves slot's shard
// channels: it owns the slot or replicates its owner.
func (v *clusterView) servesShardChannel(slot int) bool {
	owner := v.topo.Owner(slot)
	if v.me == nil || owner == nil {
		return false
	}
	return owner == v.me || (!v.me.Primary && v.me.MasterID == owner.ID)
}

// appendUnsubscribed encodes an unsubscribe confirmation [verb, channel,
// count] as an array (RESP2) or a push (RESP3).
func appendUnsubscribed(b []byte, proto int, verb string, ch []byte, count int) []byte {
	if proto == 3 {
		b = append(b, ">3\r\n"...)
	} else {
		b = redcon.AppendArray(b, 3)
	}
	b = redcon.AppendBulkString(b, verb)
	b = redcon.AppendBulk(b, ch)
	b = append(b, ':')
	b = strconv.AppendInt(b, int64(count), 10)
	return append(b, '\r', '\n')
}
