package server

import (
	"math"
	"strings"

	"github.com/damselflydb/damselfly/shard"
	"github.com/damselflydb/damselfly/shard/types"
)

// Consumer groups: XGROUP, XACK, XPENDING, XCLAIM, XAUTOCLAIM (see
// cmd_stream.go for the replication rules).

// --- XGROUP -------------------------------------------------------------------

var xgroupHelp = []string{
	"XGROUP <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
	"CREATE <key> <groupname> <id|$> [option]",
	"    Create a new consumer group. Options are:",
	"    * MKSTREAM",
	"      Create the empty stream if it does not exist.",
	"    * ENTRIESREAD entries_read",
	"      Set the group's entries_read counter (internal use).",
	"CREATECONSUMER <key> <groupname> <consumer>",
	"    Create a new consumer in the specified group.",
	"DELCONSUMER <key> <groupname> <consumer>",
	"    Remove the specified consumer.",
	"DESTROY <key> <groupname>",
	"    Remove the specified group.",
	"SETID <key> <groupname> <id|$> [ENTRIESREAD entries_read]",
	"    Set the current group ID and entries_read counter.",
	"HELP",
	"    Prints this help.",
}

func (c *Client) helpReply(lines []string) {
	c.array(len(lines))
	for _, l := range lines {
		c.simple(l)
	}
}

// subcommandArity returns the subcommand of a container command, checked
// against the command table (the dispatcher has already checked it; this
// guards calls that bypass it).
func (c *Client) subcommandArity(args [][]byte) (string, bool) {
	sub := lower(args[1])
	parent := lower(args[0])
	sc := c.srv.cmds[parent].subs[sub]
	if sc == nil {
		c.err("ERR unknown subcommand '" + sanitize(args[1], 128) + "'. Try " + strings.ToUpper(parent) + " HELP.")
		return "", false
	}
	if !sc.arityOK(args) {
		c.err("ERR wrong number of arguments for '" + sc.name + "' command")
		return "", false
	}
	return sub, true
}

func (c *Client) subcommandSyntaxError(args [][]byte) {
	c.err("ERR unknown subcommand or wrong number of arguments for '" + sanitize(args[1], 128) + "'. Try " + strings.ToUpper(string(args[0])) + " HELP.")
}

func cmdXGroup(c *Client, args [][]byte) {
	sub, ok := c.subcommandArity(args)
	if !ok {
		return
	}
	if sub == "help" {
		c.helpReply(xgroupHelp)
		return
	}
	mkstream, entriesRead, ok := parseXGroupOptions(c, sub, args)
	if !ok {
		return
	}
	x := xgroupTarget{key: args[2], gname: args[3], entriesRead: entriesRead}
	x.sh, x.h = c.lockKey(x.key)
	defer c.unlockKey(x.sh)
	var bad bool
	if x.e, x.s, bad = c.streamAt(x.sh, x.h, x.key); bad {
		return
	}
	if !mkstream {
		if x.s == nil {
			c.err("ERR The XGROUP subcommand requires the key to exist. Note that for CREATE you may want to use the MKSTREAM option to create an empty stream automatically.")
			return
		}
		x.g = x.s.Group(x.gname)
		if x.g == nil && (sub == "setid" || sub == "createconsumer" || sub == "delconsumer") {
			c.err("NOGROUP No such consumer group '" + string(x.gname) + "' for key name '" + string(x.key) + "'")
			return
		}
	}
	// Redis 7.0 invalidates WATCH only when CREATE ... MKSTREAM creates
	// the key (Put does that); group changes are ModifyUnwatched.
	if h := xgroupSubcommands[sub]; h != nil {
		h(c, args, &x)
	} else {
		c.subcommandSyntaxError(args)
	}
}

// xgroupSubcommands are the XGROUP subcommands that change a group,
// called with the stream's shard locked.
var xgroupSubcommands = map[string]func(c *Client, args [][]byte, x *xgroupTarget){
	"create":         xgroupCreate,
	"setid":          xgroupSetID,
	"destroy":        xgroupDestroy,
	"createconsumer": xgroupCreateConsumer,
	"delconsumer":    xgroupDelConsumer,
}

// xgroupTarget is what an XGROUP subcommand works on: the locked shard,
// the stream's entry (s nil when the key is missing) and the group (g nil
// when it does not exist).
type xgroupTarget struct {
	sh          *shard.Shard
	h           uint64
	e           shard.Entry
	s           *types.Stream
	g           *types.StreamGroup
	key, gname  []byte
	entriesRead int64
}

// parseXGroupOptions parses CREATE's MKSTREAM and CREATE's or SETID's
// ENTRIESREAD, which follow the id (args[5:]).
func parseXGroupOptions(c *Client, sub string, args [][]byte) (mkstream bool, entriesRead int64, ok bool) {
	entriesRead = types.SCGInvalidEntriesRead
	for i := 5; i < len(args); {
		switch {
		case sub == "create" && eq(args[i], "mkstream"):
			mkstream = true
			i++
		case (sub == "create" || sub == "setid") && eq(args[i], "entriesread") && i+1 < len(args):
			n, ok := parseInt(args[i+1])
			if !ok {
				c.errNotInteger()
				return false, 0, false
			}
			if n < 0 && n != types.SCGInvalidEntriesRead {
				c.err("ERR value for ENTRIESREAD must be positive or -1")
				return false, 0, false
			}
			entriesRead = n
			i += 2
		default:
			c.subcommandSyntaxError(args)
			return false, 0, false
		}
	}
	return mkstream, entriesRead, true
}

// xgroupCreate is XGROUP CREATE key group id|$ [MKSTREAM] [ENTRIESREAD n].
func xgroupCreate(c *Client, args [][]byte, x *xgroupTarget) {
	if len(args) > 8 {
		c.subcommandSyntaxError(args)
		return
	}
	var id types.StreamID
	if len(args[4]) == 1 && args[4][0] == '$' {
		if x.s != nil {
			id = x.s.LastID()
		}
	} else {
		var ok bool
		if id, ok = c.streamIDArg(args[4], true); !ok {
			return
		}
	}
	if x.s != nil && x.s.Group(x.gname) != nil {
		c.err("BUSYGROUP Consumer Group name already exists")
		return
	}
	var w types.W
	if x.s == nil {
		x.s, w = types.NewStream()
		x.e = x.sh.DB(c.db).Put(x.h, x.key, shard.Value{Type: shard.TypeStream, Obj: x.s})
	} else {
		w = x.sh.DB(c.db).ModifyUnwatched(&x.e)
	}
	x.s.CreateGroup(w, x.gname, id, x.entriesRead)
	c.ok()
	c.notify(kseStream, "xgroup-create", x.key) // after the reply, as Redis
}

// xgroupSetID is XGROUP SETID key group id|$ [ENTRIESREAD n].
func xgroupSetID(c *Client, args [][]byte, x *xgroupTarget) {
	if len(args) != 5 && len(args) != 7 {
		c.subcommandSyntaxError(args)
		return
	}
	var id types.StreamID
	if len(args[4]) == 1 && args[4][0] == '$' {
		id = x.s.LastID()
	} else {
		var ok bool
		if id, _, ok = parseStreamID(args[4], 0, false, false); !ok {
			c.err(errInvalidStreamID)
			return
		}
	}
	w := x.sh.DB(c.db).ModifyUnwatched(&x.e)
	x.g.SetLastID(w, id)
	x.g.SetEntriesRead(w, x.entriesRead)
	c.ok()
	c.notify(kseStream, "xgroup-setid", x.key) // after the reply, as Redis
}

// xgroupDestroy is XGROUP DESTROY key group.
func xgroupDestroy(c *Client, _ [][]byte, x *xgroupTarget) {
	if x.g == nil {
		c.int(0)
		return
	}
	w := x.sh.DB(c.db).ModifyUnwatched(&x.e)
	x.s.DeleteGroup(w, x.gname)
	c.int(1)
	c.notify(kseStream, "xgroup-destroy", x.key) // after the reply, as Redis
	c.srv.signalStream(c.db, x.key)              // blocked XREADGROUPs get NOGROUP
}

// xgroupCreateConsumer is XGROUP CREATECONSUMER key group consumer.
func xgroupCreateConsumer(c *Client, args [][]byte, x *xgroupTarget) {
	if x.g.Consumer(args[4]) != nil {
		c.int(0)
		return
	}
	w := x.sh.DB(c.db).ModifyUnwatched(&x.e)
	t := now()
	x.g.CreateConsumer(w, args[4], t, t)
	c.notify(kseStream, "xgroup-createconsumer", x.key)
	c.int(1)
}

// xgroupDelConsumer is XGROUP DELCONSUMER key group consumer: the number
// of entries the consumer still had pending.
func xgroupDelConsumer(c *Client, args [][]byte, x *xgroupTarget) {
	if x.g.Consumer(args[4]) == nil {
		c.int(0)
		return
	}
	w := x.sh.DB(c.db).ModifyUnwatched(&x.e)
	n, _ := x.g.DeleteConsumer(w, args[4])
	c.notify(kseStream, "xgroup-delconsumer", x.key)
	c.int(int64(n))
}

// --- XACK / XPENDING ----------------------------------------------------------

func cmdXAck(c *Client, args [][]byte) {
	sh, h := c.lockKey(args[1])
	defer c.unlockKey(sh)
	e, s, bad := c.readStream(sh, h, args[1])
	if bad {
		return
	}
	var g *types.StreamGroup
	if s != nil {
		g = s.Group(args[2])
	}
	if g == nil {
		c.int(0)
		return
	}
	ids := make([]types.StreamID, 0, len(args)-3)
	for _, a := range args[3:] {
		id, ok := c.streamIDArg(a, true)
		if !ok {
			return
		}
		ids = append(ids, id)
	}
	n := 0
	var w types.W
	for _, id := range ids {
		if g.Pending(id) != nil {
			if n == 0 {
				w = c.modifyStream(sh, &e)
			}
			g.Ack(w, id)
			n++
		}
	}
	c.int(int64(n))
}

func noGroupErr(key, group []byte) string {
	return "NOGROUP No such key '" + string(key) + "' or consumer group '" + string(group) + "'"
}

func cmdXPending(c *Client, args [][]byte) {
	justInfo := len(args) == 3
	if len(args) != 3 && (len(args) < 6 || len(args) > 9) {
		c.errSyntax()
		return
	}
	var r xpendingRange
	if !justInfo {
		var ok bool
		if r, ok = parseXPendingRange(c, args); !ok {
			return
		}
	}
	sh, h := c.lockKey(args[1])
	defer c.unlockKey(sh)
	_, s, bad := c.readStream(sh, h, args[1])
	if bad {
		return
	}
	var g *types.StreamGroup
	if s != nil {
		g = s.Group(args[2])
	}
	if g == nil {
		c.err(noGroupErr(args[1], args[2]))
		return
	}
	if justInfo {
		c.xpendingSummary(g)
		return
	}
	c.xpendingEntries(g, &r)
}

// xpendingRange is XPENDING's extended form: [IDLE min] start end count
// [consumer].
type xpendingRange struct {
	start, end types.StreamID
	count      int64
	minIdle    int64
	consumer   []byte // nil: every consumer
}

// parseXPendingRange reads the extended form; false after answering the
// error.
func parseXPendingRange(c *Client, args [][]byte) (xpendingRange, bool) {
	var r xpendingRange
	si := 3
	if eq(args[3], "idle") {
		n, ok := parseInt(args[4])
		if !ok {
			c.errNotInteger()
			return r, false
		}
		r.minIdle = n
		if len(args) < 8 {
			c.errSyntax()
			return r, false
		}
		si += 2
	}
	n, ok := parseInt(args[si+2])
	if !ok {
		c.errNotInteger()
		return r, false
	}
	r.count = max(n, 0)
	if r.start, ok = c.intervalID(args[si], 0, true); !ok {
		return r, false
	}
	if r.end, ok = c.intervalID(args[si+1], math.MaxUint64, false); !ok {
		return r, false
	}
	if si+3 < len(args) {
		r.consumer = args[si+3]
	}
	return r, true
}

// xpendingSummary replies XPENDING key group: the count, the smallest and
// largest pending IDs and each consumer's count.
func (c *Client) xpendingSummary(g *types.StreamGroup) {
	c.array(4)
	c.int(int64(g.PendingLen()))
	if g.PendingLen() == 0 {
		c.null()
		c.null()
		c.nullArray()
		return
	}
	var first, last types.StreamID
	k := 0
	g.PendingAscend(types.StreamID{}, func(p *types.PendingEntry, _ *types.StreamConsumer) bool {
		if k == 0 {
			first = p.ID()
		}
		last = p.ID()
		k++
		return true
	})
	c.streamID(first)
	c.streamID(last)
	mark := len(c.out)
	n := 0
	g.Consumers(func(sc *types.StreamConsumer) bool {
		if sc.PendingLen() > 0 {
			c.array(2)
			c.bulkString(sc.Name())
			c.bulkInt(int64(sc.PendingLen()))
			n++
		}
		return true
	})
	c.setArrayLen(mark, n)
}

// xpendingEntries replies the extended form: the pending entries in r,
// with owner, idle time and delivery count.
func (c *Client) xpendingEntries(g *types.StreamGroup, r *xpendingRange) {
	var sc *types.StreamConsumer
	if r.consumer != nil {
		if sc = g.Consumer(r.consumer); sc == nil {
			c.array(0)
			return
		}
	}
	t := now()
	mark := len(c.out)
	n := 0
	count := r.count
	emit := func(p *types.PendingEntry) bool {
		if r.end.Less(p.ID()) || count == 0 {
			return false
		}
		if r.minIdle != 0 && t-p.DeliveryTime() < r.minIdle {
			return true
		}
		n++
		count--
		c.array(4)
		c.streamID(p.ID())
		c.bulkString(g.Owner(p).Name())
		c.int(max(t-p.DeliveryTime(), 0))
		c.int(int64(p.DeliveryCount()))
		return true
	}
	if sc != nil {
		sc.Pending(r.start, func(id types.StreamID) bool { return emit(g.Pending(id)) })
	} else {
		g.PendingAscend(r.start, func(p *types.PendingEntry, _ *types.StreamConsumer) bool { return emit(p) })
	}
	c.setArrayLen(mark, n)
}

// --- XCLAIM / XAUTOCLAIM --------------------------------------------------------

// xclaimProp is the XCLAIM Redis propagates for a PEL change:
// XCLAIM key group consumer 0 id TIME t RETRYCOUNT n FORCE JUSTID LASTID last.
func xclaimProp(key, group []byte, consumer string, id types.StreamID, p *types.PendingEntry, last types.StreamID) [][]byte {
	return [][]byte{[]byte("XCLAIM"), key, group, []byte(consumer), []byte("0"), idArg(id),
		[]byte("TIME"), bytesArg(p.DeliveryTime()), []byte("RETRYCOUNT"), bytesArg(int64(p.DeliveryCount())),
		[]byte("FORCE"), []byte("JUSTID"), []byte("LASTID"), idArg(last)}
}

func xsetidProp(key, group []byte, g *types.StreamGroup) [][]byte {
	return [][]byte{[]byte("XGROUP"), []byte("SETID"), key, group, idArg(g.LastID()), []byte("ENTRIESREAD"), bytesArg(g.EntriesRead())}
}

func cmdXClaim(c *Client, args [][]byte) {
	key, gname := args[1], args[2]
	sh, h := c.lockKey(key)
	defer c.unlockKey(sh)
	e, s, g, ok := c.readGroup(sh, h, key, gname)
	if !ok {
		return
	}
	t := now()
	o, ok := parseXClaimArgs(c, args, t)
	if !ok {
		return
	}
	cl := &xclaimRun{c: c, sh: sh, e: &e, s: s, g: g, key: key, group: gname, consumer: args[3], t: t, o: &o}
	propLast := false
	if g.LastID().Less(o.lastID) {
		cl.modify()
		g.SetLastID(cl.w, o.lastID)
		propLast = true
	}
	mark := len(c.out)
	n := 0
	for _, id := range o.ids {
		switch cl.claim(id) {
		case xclaimDropped:
			propLast = false
		case xclaimClaimed:
			n++
			propLast = false
		}
	}
	if propLast {
		cl.props = append(cl.props, xsetidProp(key, gname, g))
	}
	c.setArrayLen(mark, n)
	c.rewriteMany(cl.props)
}

// xclaimArgs are XCLAIM's arguments after the consumer.
type xclaimArgs struct {
	minIdle       int64
	ids           []types.StreamID
	delivery      int64 // the delivery time to set, clamped to [0, now]
	retry         int64 // -1: count the delivery instead
	force, justID bool
	lastID        types.StreamID
}

// parseXClaimArgs reads min-idle-time, the IDs and the options; false
// after answering the error. t is the command's time.
func parseXClaimArgs(c *Client, args [][]byte, t int64) (xclaimArgs, bool) {
	o := xclaimArgs{retry: -1}
	minIdle, ok := parseInt(args[4])
	if !ok {
		c.err("ERR Invalid min-idle-time argument for XCLAIM")
		return o, false
	}
	o.minIdle = max(minIdle, 0)
	j := 5
	for ; j < len(args); j++ {
		id, _, ok := parseStreamID(args[j], 0, true, false)
		if !ok {
			break
		}
		o.ids = append(o.ids, id)
	}
	delivery := int64(-1)
	for ; j < len(args); j++ {
		more := len(args) - 1 - j
		opt := args[j]
		switch {
		case eq(opt, "force"):
			o.force = true
		case eq(opt, "justid"):
			o.justID = true
		case eq(opt, "idle") && more > 0:
			j++
			n, ok := parseInt(args[j])
			if !ok {
				c.err("ERR Invalid IDLE option argument for XCLAIM")
				return o, false
			}
			delivery = t - n
		case eq(opt, "time") && more > 0:
			j++
			n, ok := parseInt(args[j])
			if !ok {
				c.err("ERR Invalid TIME option argument for XCLAIM")
				return o, false
			}
			delivery = n
		case eq(opt, "retrycount") && more > 0:
			j++
			n, ok := parseInt(args[j])
			if !ok {
				c.err("ERR Invalid RETRYCOUNT option argument for XCLAIM")
				return o, false
			}
			o.retry = n
		case eq(opt, "lastid") && more > 0:
			j++
			id, ok := c.streamIDArg(args[j], true)
			if !ok {
				return o, false
			}
			o.lastID = id
		default:
			c.err("ERR Unrecognized XCLAIM option '" + string(opt) + "'")
			return o, false
		}
	}
	if delivery < 0 || delivery > t {
		delivery = t // none given (-1), or out of range
	}
	o.delivery = delivery
	return o, true
}

// xclaimRun is one XCLAIM at work on a locked stream's group.
type xclaimRun struct {
	c        *Client
	sh       *shard.Shard
	e        *shard.Entry
	s        *types.Stream
	g        *types.StreamGroup
	key      []byte
	group    []byte
	consumer []byte
	t        int64
	o        *xclaimArgs

	modified bool
	w        types.W               // the right to change s, once modified
	sc       *types.StreamConsumer // the claiming consumer, once needed
	props    [][][]byte            // what is propagated instead of XCLAIM
}

// modify makes the stream writable, once (the snapshot's pre-change hook).
func (r *xclaimRun) modify() {
	if !r.modified {
		r.w = r.c.modifyStream(r.sh, r.e)
		r.modified = true
	}
}

const (
	xclaimSkipped = iota // not pending, or not idle long enough
	xclaimDropped        // pending but deleted from the stream: acknowledged
	xclaimClaimed        // now owned by the consumer; its reply was written
)

// claim claims one ID, writing its reply element when it is claimed.
func (r *xclaimRun) claim(id types.StreamID) int {
	g, o := r.g, r.o
	p := g.Pending(id)
	if !r.s.Exists(id) {
		if p == nil {
			return xclaimSkipped
		}
		r.modify()
		r.props = append(r.props, xclaimProp(r.key, r.group, g.Owner(p).Name(), id, p, g.LastID()))
		g.Ack(r.w, id)
		return xclaimDropped
	}
	if p != nil && o.minIdle > 0 && r.t-p.DeliveryTime() < o.minIdle {
		return xclaimSkipped
	}
	if p == nil && !o.force {
		return xclaimSkipped
	}
	r.modify()
	sc := r.claimer()
	g.Deliver(r.w, sc, id, o.delivery, false) // a FORCE-created entry starts at count 1
	p = g.Pending(id)
	if o.retry >= 0 {
		g.SetDelivery(r.w, p, p.DeliveryTime(), uint64(o.retry))
	} else if !o.justID {
		g.SetDelivery(r.w, p, p.DeliveryTime(), p.DeliveryCount()+1)
	}
	if o.justID {
		r.c.streamID(id)
	} else {
		r.s.Range(id, id, false, func(id types.StreamID, fv [][]byte) bool { r.c.streamEntry(id, fv); return false })
	}
	r.props = append(r.props, xclaimProp(r.key, r.group, sc.Name(), id, p, g.LastID()))
	return xclaimClaimed
}

// claimer is the consumer claiming, created (and notified) on first use.
func (r *xclaimRun) claimer() *types.StreamConsumer {
	if r.sc == nil {
		if r.sc = r.g.Consumer(r.consumer); r.sc == nil {
			r.sc, _ = r.g.CreateConsumer(r.w, r.consumer, r.t, r.t)
			r.c.notify(kseStream, "xgroup-createconsumer", r.key)
		} else {
			r.g.SetSeen(r.w, r.sc, r.t)
		}
	}
	return r.sc
}

func cmdXAutoClaim(c *Client, args [][]byte) {
	key, gname := args[1], args[2]
	o, ok := parseXAutoClaim(c, args)
	if !ok {
		return
	}
	sh, h := c.lockKey(key)
	defer c.unlockKey(sh)
	e, s, g, ok := c.readGroup(sh, h, key, gname)
	if !ok {
		return
	}
	t := now()
	// Collect the candidates first: claiming changes the PEL.
	cands, next := o.candidates(s, g, t)
	var props [][][]byte
	var w types.W
	if len(cands) > 0 {
		w = c.modifyStream(sh, &e)
	}
	var sc *types.StreamConsumer
	c.array(3)
	c.streamID(next)
	mark := len(c.out)
	n := 0
	var deleted []types.StreamID
	for _, cd := range cands {
		p := g.Pending(cd.id)
		if !cd.exists {
			props = append(props, xclaimProp(key, gname, g.Owner(p).Name(), cd.id, p, g.LastID()))
			g.Ack(w, cd.id)
			deleted = append(deleted, cd.id)
			continue
		}
		if sc == nil {
			if sc = g.Consumer(args[3]); sc == nil {
				sc, _ = g.CreateConsumer(w, args[3], t, t)
				c.notify(kseStream, "xgroup-createconsumer", args[1])
			} else {
				g.SetSeen(w, sc, t)
			}
		}
		g.Deliver(w, sc, cd.id, t, !o.justID)
		p = g.Pending(cd.id)
		if o.justID {
			c.streamID(cd.id)
		} else {
			s.Range(cd.id, cd.id, false, func(id types.StreamID, fv [][]byte) bool { c.streamEntry(id, fv); return false })
		}
		n++
		props = append(props, xclaimProp(key, gname, sc.Name(), cd.id, p, g.LastID()))
	}
	c.setArrayLen(mark, n)
	c.array(len(deleted))
	for _, id := range deleted {
		c.streamID(id)
	}
	c.rewriteMany(props)
}

// xautoclaimOptions is a parsed XAUTOCLAIM key group consumer min-idle
// start [COUNT n] [JUSTID].
type xautoclaimOptions struct {
	minIdle int64
	start   types.StreamID
	count   int64
	justID  bool
}

func parseXAutoClaim(c *Client, args [][]byte) (o xautoclaimOptions, ok bool) {
	if o.minIdle, ok = parseInt(args[4]); !ok {
		c.err("ERR Invalid min-idle-time argument for XAUTOCLAIM")
		return o, false
	}
	o.minIdle = max(o.minIdle, 0)
	if o.start, ok = c.intervalID(args[5], 0, true); !ok {
		return o, false
	}
	o.count = 100
	for j := 6; j < len(args); j++ {
		more := len(args) - 1 - j
		switch {
		case eq(args[j], "count") && more > 0:
			n, ok := parseInt(args[j+1])
			if !ok || n < 1 || n > math.MaxInt64/16 {
				c.err("ERR COUNT must be > 0")
				return o, false
			}
			o.count = n
			j++
		case eq(args[j], "justid"):
			o.justID = true
		default:
			c.errSyntax()
			return o, false
		}
	}
	return o, true
}

// xautoclaimCandidate is a pending entry XAUTOCLAIM takes; exists is false
// when its stream entry was deleted (it is acknowledged instead).
type xautoclaimCandidate struct {
	id     types.StreamID
	exists bool
}

// candidates scans the group's PEL from start, looking at most 10*count
// entries, for up to count entries idle for minIdle or deleted; next is
// where the next call should start (0-0 when the scan reached the end).
func (o *xautoclaimOptions) candidates(s *types.Stream, g *types.StreamGroup, t int64) (cands []xautoclaimCandidate, next types.StreamID) {
	attempts := o.count * 10
	left := o.count
	g.PendingAscend(o.start, func(p *types.PendingEntry, _ *types.StreamConsumer) bool {
		if attempts == 0 || left == 0 {
			next = p.ID()
			return false
		}
		attempts--
		if !s.Exists(p.ID()) {
			cands = append(cands, xautoclaimCandidate{id: p.ID()})
			left--
			return true
		}
		if o.minIdle > 0 && t-p.DeliveryTime() < o.minIdle {
			return true
		}
		cands = append(cands, xautoclaimCandidate{id: p.ID(), exists: true})
		left--
		return true
	})
	return cands, next
}

// rewriteMany replaces the running command's replicated form by cmds (none:
// not replicated; several: inside MULTI/EXEC), like Redis's alsoPropagate
// with preventCommandPropagation.
func (c *Client) rewriteMany(cmds [][][]byte) {
	switch len(cmds) {
	case 0:
		c.rewrite()
	case 1:
		c.rewrite(cmds[0]...)
	default:
		c.propagateMany = cmds
	}
}

// readGroup finds consumer group gname of the stream at key (shard locked),
// answering the error itself (wrong type, or NOGROUP) when there is none.
func (c *Client) readGroup(sh *shard.Shard, h uint64, key, gname []byte) (e shard.Entry, s *types.Stream, g *types.StreamGroup, ok bool) {
	e, s, bad := c.readStream(sh, h, key)
	if bad {
		return e, s, nil, false
	}
	if s != nil {
		g = s.Group(gname)
	}
	if g == nil {
		c.err(noGroupErr(key, gname))
		return e, s, nil, false
	}
	return e, s, g, true
}
