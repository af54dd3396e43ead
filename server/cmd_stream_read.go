package server

import (
	"time"

	"github.com/damselflydb/damselfly/shard"
	"github.com/damselflydb/damselfly/shard/types"
)

// XREAD and XREADGROUP, synchronous and blocked (blockOn; new entries wake
// every reader of a key, signalStream).

// --- XREAD / XREADGROUP ---------------------------------------------------------

// xreadBlocks tells whether an XREAD/XREADGROUP call has a BLOCK option
// (and so must run off the event loop).
func xreadBlocks(args [][]byte) bool {
	for i := 1; i < len(args)-1; i++ {
		if eq(args[i], "block") {
			return true
		}
		if eq(args[i], "streams") {
			return false
		}
	}
	return false
}

type xreadArgs struct {
	block    bool
	timeout  int64 // ms
	count    int64
	keys     [][]byte
	idArgs   [][]byte
	group    []byte
	consumer []byte
	noack    bool
	isGroup  bool
}

func cmdXRead(c *Client, args [][]byte) {
	var a xreadArgs
	a.isGroup = len(args[0]) == 10
	streamsArg := 0
	for i := 1; i < len(args); i++ {
		more := len(args) - i - 1
		o := args[i]
		switch {
		case eq(o, "block") && more > 0:
			if c.sess.inScript {
				c.err("ERR " + string(args[0]) + " command is not allowed with BLOCK option from scripts")
				return
			}
			i++
			n, ok := parseInt(args[i])
			if !ok {
				c.err("ERR timeout is not an integer or out of range")
				return
			}
			if n < 0 {
				c.err("ERR timeout is negative")
				return
			}
			a.block, a.timeout = true, n
		case eq(o, "count") && more > 0:
			i++
			n, ok := parseInt(args[i])
			if !ok {
				c.errNotInteger()
				return
			}
			a.count = max(n, 0)
		case eq(o, "streams") && more > 0:
			streamsArg = i + 1
			n := len(args) - streamsArg
			if n%2 != 0 {
				c.err("ERR Unbalanced XREAD list of streams: for each stream key an ID or '$' must be specified.")
				return
			}
			a.keys = args[streamsArg : streamsArg+n/2]
			a.idArgs = args[streamsArg+n/2:]
			i = len(args)
		case eq(o, "group") && more >= 2:
			if !a.isGroup {
				c.err("ERR The GROUP option is only supported by XREADGROUP. You called XREAD instead.")
				return
			}
			a.group, a.consumer = args[i+1], args[i+2]
			i += 2
		case eq(o, "noack"):
			if !a.isGroup {
				c.err("ERR The NOACK option is only supported by XREADGROUP. You called XREAD instead.")
				return
			}
			a.noack = true
		default:
			c.errSyntax()
			return
		}
	}
	if streamsArg == 0 {
		c.errSyntax()
		return
	}
	if a.isGroup && a.group == nil {
		c.err("ERR Missing GROUP option for XREADGROUP")
		return
	}
	c.rewrite() // replicated only through the effects it propagates
	ids := make([]types.StreamID, len(a.keys))
	var props [][][]byte
	if !a.block {
		set := c.lockKeys(a.keys)
		if !c.xreadFirst(&a, ids, &props) {
			c.nullArray()
		}
		c.rewriteMany(props)
		c.unlock(set)
		return
	}
	timeout := time.Duration(a.timeout) * time.Millisecond
	c.blockOn(a.keys, timeout, func(firstTry bool) bool {
		props = props[:0]
		var ok bool
		if firstTry {
			ok = c.xreadFirst(&a, ids, &props)
		} else {
			ok = c.xreadWoken(&a, ids, &props)
		}
		c.rewriteMany(props)
		return ok
	}, c.nullArray)
}

// xreadFirst is XREAD's synchronous attempt (all keys locked): it parses
// the IDs against the current streams (errors are replied and count as
// served) and serves every stream with something to give.
func (c *Client) xreadFirst(a *xreadArgs, ids []types.StreamID, props *[][][]byte) bool {
	groups := make([]*types.StreamGroup, len(a.keys))
	for i, key := range a.keys {
		sh, h := c.srv.store.ShardOf(key)
		_, s, bad := c.readStream(sh, h, key)
		if bad {
			return true
		}
		if a.isGroup {
			var g *types.StreamGroup
			if s != nil {
				g = s.Group(a.group)
			}
			if g == nil {
				c.err("NOGROUP No such key '" + string(key) + "' or consumer group '" + string(a.group) + "' in XREADGROUP with GROUP option")
				return true
			}
			groups[i] = g
		}
		arg := a.idArgs[i]
		switch {
		case len(arg) == 1 && arg[0] == '$':
			if a.isGroup {
				c.err("ERR The $ ID is meaningless in the context of XREADGROUP: you want to read the history of this consumer by specifying a proper ID, or use the > ID to get new messages. The $ ID would just return an empty result set.")
				return true
			}
			ids[i] = types.StreamID{}
			if s != nil {
				ids[i] = s.LastID()
			}
		case len(arg) == 1 && arg[0] == '>':
			if !a.isGroup {
				c.err("ERR The > ID can be specified only when calling XREADGROUP using the GROUP <group> <consumer> option.")
				return true
			}
			ids[i] = types.MaxStreamID
		default:
			id, ok := c.streamIDArg(arg, true)
			if !ok {
				return true
			}
			ids[i] = id
		}
	}
	mark := len(c.out)
	served := 0
	for i, key := range a.keys {
		sh, h := c.srv.store.ShardOf(key)
		e, s, _ := c.readStream(sh, h, key)
		if s == nil {
			continue
		}
		gt := ids[i]
		sync, history := false, false
		if a.isGroup {
			if gt != types.MaxStreamID {
				sync, history = true, true
			} else if s.Len() > 0 {
				if last, _ := s.Last(); groups[i].LastID().Less(last) {
					sync, gt = true, groups[i].LastID()
				}
			}
		} else if s.Len() > 0 {
			last, _ := s.Last()
			sync = gt.Less(last)
		}
		if !sync {
			continue
		}
		served++
		if c.proto != 3 {
			c.array(2)
		}
		c.bulk(key)
		c.serveStream(sh, &e, s, key, gt, a, groups[i], a.count, history, props)
	}
	if served == 0 {
		c.out = c.out[:mark]
		return false
	}
	if c.proto == 3 {
		c.setMapLen(mark, served)
	} else {
		c.setArrayLen(mark, served)
	}
	return true
}

// xreadWoken serves a blocked XREAD/XREADGROUP after a wake-up: the first
// of its keys whose stream grew past what the client waits for.
func (c *Client) xreadWoken(a *xreadArgs, ids []types.StreamID, props *[][][]byte) bool {
	for i, key := range a.keys {
		sh, h := c.srv.store.ShardOf(key)
		e, ok := sh.Lookup(c.db, h, key, now())
		if !ok || e.Type() != shard.TypeStream {
			if a.isGroup {
				// Its group went with it (DEL and UNLINK signal this;
				// Redis also on overwrite, expiry and flushes).
				c.err("UNBLOCKED the stream key no longer exists")
				return true
			}
			continue
		}
		s := e.Obj().(*types.Stream)
		gt := ids[i]
		var g *types.StreamGroup
		if a.isGroup {
			if g = s.Group(a.group); g == nil {
				c.err("NOGROUP the consumer group this client was blocked on no longer exists")
				return true
			}
			gt = g.LastID()
		}
		if !gt.Less(s.LastID()) {
			continue
		}
		count := a.count
		if count == 0 {
			count = xreadBlockedDefaultCount
		}
		if c.proto == 3 {
			c.mapHeader(1)
		} else {
			c.array(1)
			c.array(2)
		}
		c.bulk(key)
		c.serveStream(sh, &e, s, key, gt, a, g, count, false, props)
		return true
	}
	return false
}

// serveStream emits the entries after gt of one stream (a group's delivery
// when g is set: PEL entries, consumer creation, last ID), recording what
// must be replicated in props.
func (c *Client) serveStream(sh *shard.Shard, e *shard.Entry, s *types.Stream, key []byte, gt types.StreamID,
	a *xreadArgs, g *types.StreamGroup, count int64, history bool, props *[][][]byte) {
	if g == nil {
		start, _ := gt.Incr()
		c.rangeReply(s, start, types.MaxStreamID, count, false)
		return
	}
	w := c.modifyStream(sh, e)
	t := now()
	sc := g.Consumer(a.consumer)
	if sc == nil {
		sc, _ = g.CreateConsumer(w, a.consumer, t, t)
		c.notify(kseStream, "xgroup-createconsumer", key)
		if a.noack {
			*props = append(*props, [][]byte{[]byte("XGROUP"), []byte("CREATECONSUMER"), key, a.group, a.consumer})
		}
	} else {
		g.SetSeen(w, sc, t)
	}
	start, _ := gt.Incr()
	if history {
		// The consumer's own PEL from start: entries deleted meanwhile are
		// reported with a null body.
		mark := len(c.out)
		n := 0
		var pend []types.StreamID
		sc.Pending(start, func(id types.StreamID) bool {
			if count != 0 && int64(len(pend)) >= count {
				return false
			}
			pend = append(pend, id)
			return true
		})
		for _, id := range pend {
			found := false
			s.Range(id, id, false, func(id types.StreamID, fv [][]byte) bool {
				c.streamEntry(id, fv)
				found = true
				return false
			})
			if found {
				if p := g.Pending(id); p != nil {
					g.SetDelivery(w, p, t, p.DeliveryCount()+1)
				}
			} else {
				c.array(2)
				c.streamID(id)
				c.nullArray()
			}
			n++
		}
		c.setArrayLen(mark, n)
		return
	}
	mark := len(c.out)
	n := 0
	advanced := false
	type delivery struct{ id, last types.StreamID }
	var delivered []delivery
	s.Range(start, types.MaxStreamID, false, func(id types.StreamID, fv [][]byte) bool {
		if g.LastID().Less(id) {
			s.NoteDelivered(w, g, id)
			advanced = true
		}
		c.streamEntry(id, fv)
		if !a.noack {
			delivered = append(delivered, delivery{id, g.LastID()})
		}
		n++
		return count == 0 || int64(n) < count
	})
	c.setArrayLen(mark, n)
	for _, d := range delivered {
		// A new PEL entry, or one taken over (its count starts again).
		g.Deliver(w, sc, d.id, t, false)
		p := g.Pending(d.id)
		g.SetDelivery(w, p, p.DeliveryTime(), 1)
		*props = append(*props, xclaimProp(key, a.group, sc.Name(), d.id, p, d.last))
	}
	if a.noack && advanced {
		*props = append(*props, xsetidProp(key, a.group, g))
	}
}
