package server

import (
	"github.com/damselflydb/damselfly/shard/types"
)

// XINFO STREAM [FULL], GROUPS and CONSUMERS.

var xinfoHelp = []string{
	"XINFO <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
	"CONSUMERS <key> <groupname>",
	"    Show consumers of <groupname>.",
	"GROUPS <key>",
	"    Show the stream consumer groups.",
	"STREAM <key> [FULL [COUNT <count>]",
	"    Show information about the stream.",
	"HELP",
	"    Prints this help.",
}

// --- XINFO --------------------------------------------------------------------

func cmdXInfo(c *Client, args [][]byte) {
	sub, ok := c.subcommandArity(args)
	if !ok {
		return
	}
	if sub == "help" {
		c.helpReply(xinfoHelp)
		return
	}
	key := args[2]
	sh, h := c.lockKey(key)
	defer c.unlockKey(sh)
	_, s, bad := c.readStream(sh, h, key)
	if bad {
		return
	}
	if s == nil {
		c.err("ERR no such key")
		return
	}
	switch sub {
	case "consumers":
		g := s.Group(args[3])
		if g == nil {
			c.err("NOGROUP No such consumer group '" + string(args[3]) + "' for key name '" + string(key) + "'")
			return
		}
		t := now()
		c.array(g.ConsumerCount())
		g.Consumers(func(sc *types.StreamConsumer) bool {
			c.mapHeader(3)
			c.bulkString("name")
			c.bulkString(sc.Name())
			c.bulkString("pending")
			c.int(int64(sc.PendingLen()))
			c.bulkString("idle")
			c.int(max(t-sc.SeenTime(), 0))
			return true
		})
	case "groups":
		c.array(s.GroupCount())
		s.Groups(func(g *types.StreamGroup) bool {
			c.mapHeader(6)
			c.bulkString("name")
			c.bulkString(g.Name())
			c.bulkString("consumers")
			c.int(int64(g.ConsumerCount()))
			c.bulkString("pending")
			c.int(int64(g.PendingLen()))
			c.bulkString("last-delivered-id")
			c.streamID(g.LastID())
			c.entriesRead(g)
			c.bulkString("lag")
			c.lag(s, g)
			return true
		})
	case "stream":
		c.xinfoStream(args, s)
	}
}

func (c *Client) entriesRead(g *types.StreamGroup) {
	c.bulkString("entries-read")
	if g.EntriesRead() != types.SCGInvalidEntriesRead {
		c.int(g.EntriesRead())
	} else {
		c.null()
	}
}

func (c *Client) lag(s *types.Stream, g *types.StreamGroup) {
	if l, ok := s.Lag(g); ok {
		c.int(l)
	} else {
		c.null()
	}
}

func (c *Client) xinfoStream(args [][]byte, s *types.Stream) {
	full, count, ok := c.parseXInfoStreamOpts(args)
	if !ok {
		return
	}
	if full {
		c.mapHeader(9)
	} else {
		c.mapHeader(10)
	}
	c.xinfoStreamCommon(s)
	if !full {
		c.xinfoStreamSummary(s)
		return
	}
	c.bulkString("entries")
	c.rangeReply(s, types.StreamID{}, types.MaxStreamID, count, false)
	c.bulkString("groups")
	c.array(s.GroupCount())
	s.Groups(func(g *types.StreamGroup) bool {
		c.xinfoGroupFull(s, g, count)
		return true
	})
}

// parseXInfoStreamOpts reads [FULL [COUNT n]] (count: 10 by default or
// when negative, 0 for all); false after answering the error.
func (c *Client) parseXInfoStreamOpts(args [][]byte) (full bool, count int64, ok bool) {
	count = 10
	opts := args[3:]
	if len(opts) == 0 {
		return false, count, true
	}
	if (len(opts) != 1 && len(opts) != 3) || !eq(opts[0], "full") {
		c.subcommandSyntaxError(args)
		return false, 0, false
	}
	if len(opts) == 3 {
		if !eq(opts[1], "count") {
			c.subcommandSyntaxError(args)
			return false, 0, false
		}
		n, ok := parseInt(opts[2])
		if !ok {
			c.errNotInteger()
			return false, 0, false
		}
		count = n
		if count < 0 {
			count = 10
		}
	}
	return true, count, true
}

// xinfoStreamCommon writes the fields both forms of XINFO STREAM start with.
func (c *Client) xinfoStreamCommon(s *types.Stream) {
	c.bulkString("length")
	c.int(int64(s.Len()))
	c.bulkString("radix-tree-keys")
	c.int(int64(s.NodeCount()))
	c.bulkString("radix-tree-nodes")
	c.int(int64(s.RaxNodes()))
	c.bulkString("last-generated-id")
	c.streamID(s.LastID())
	c.bulkString("max-deleted-entry-id")
	c.streamID(s.MaxDeletedID())
	c.bulkString("entries-added")
	c.int(int64(s.EntriesAdded()))
	c.bulkString("recorded-first-entry-id")
	c.streamID(s.FirstID())
}

// xinfoStreamSummary is the short form's tail: the group count and the
// first and last entries.
func (c *Client) xinfoStreamSummary(s *types.Stream) {
	c.bulkString("groups")
	c.int(int64(s.GroupCount()))
	for _, rev := range []bool{false, true} {
		if rev {
			c.bulkString("last-entry")
		} else {
			c.bulkString("first-entry")
		}
		found := false
		s.Range(types.StreamID{}, types.MaxStreamID, rev, func(id types.StreamID, fv [][]byte) bool {
			c.streamEntry(id, fv)
			found = true
			return false
		})
		if !found {
			c.null()
		}
	}
}

// xinfoGroupFull writes one group of XINFO STREAM FULL: its state, up to
// count pending entries (0: all) and its consumers.
func (c *Client) xinfoGroupFull(s *types.Stream, g *types.StreamGroup, count int64) {
	c.mapHeader(7)
	c.bulkString("name")
	c.bulkString(g.Name())
	c.bulkString("last-delivered-id")
	c.streamID(g.LastID())
	c.entriesRead(g)
	c.bulkString("lag")
	c.lag(s, g)
	c.bulkString("pel-count")
	c.int(int64(g.PendingLen()))
	c.bulkString("pending")
	mark := len(c.out)
	n := 0
	g.PendingAscend(types.StreamID{}, func(p *types.PendingEntry, owner *types.StreamConsumer) bool {
		if count != 0 && int64(n) >= count {
			return false
		}
		c.array(4)
		c.streamID(p.ID())
		c.bulkString(owner.Name())
		c.int(p.DeliveryTime())
		c.int(int64(p.DeliveryCount()))
		n++
		return true
	})
	c.setArrayLen(mark, n)
	c.bulkString("consumers")
	c.array(g.ConsumerCount())
	g.Consumers(func(sc *types.StreamConsumer) bool {
		c.xinfoConsumerFull(g, sc, count)
		return true
	})
}

// xinfoConsumerFull writes one consumer of XINFO STREAM FULL with up to
// count of its pending entries (0: all).
func (c *Client) xinfoConsumerFull(g *types.StreamGroup, sc *types.StreamConsumer, count int64) {
	c.mapHeader(4)
	c.bulkString("name")
	c.bulkString(sc.Name())
	c.bulkString("seen-time")
	c.int(sc.SeenTime())
	c.bulkString("pel-count")
	c.int(int64(sc.PendingLen()))
	c.bulkString("pending")
	mark := len(c.out)
	n := 0
	sc.Pending(types.StreamID{}, func(id types.StreamID) bool {
		if count != 0 && int64(n) >= count {
			return false
		}
		p := g.Pending(id)
		c.array(3)
		c.streamID(id)
		c.int(p.DeliveryTime())
		c.int(int64(p.DeliveryCount()))
		n++
		return true
	})
	c.setArrayLen(mark, n)
}
