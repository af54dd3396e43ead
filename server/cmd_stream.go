package server

import (
	"bytes"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/tidwall/redcon"

	"github.com/damselflydb/damselfly/shard"
	"github.com/damselflydb/damselfly/shard/types"
)

// Stream commands (Redis 7.0's t_stream.c semantics, replies and errors).
//
// Replication follows Redis: XADD is replicated with the concrete ID (and
// MAXLEN/MINID ~ as = with the resulting length or first ID); XREADGROUP,
// XCLAIM and XAUTOCLAIM are not replicated themselves but as the XCLAIM ...
// FORCE JUSTID LASTID, XGROUP SETID and XGROUP CREATECONSUMER commands that
// reproduce their effect (several of them inside MULTI/EXEC).

func registerStreams(reg registrar) {
	reg("xadd", -5, "write|denyoom|fast", 1, 1, 1, "stream", cmdXAdd)
	reg("xlen", 2, "readonly|fast", 1, 1, 1, "stream", cmdXLen)
	reg("xrange", -4, "readonly", 1, 1, 1, "stream", func(c *Client, a [][]byte) { xrangeGeneric(c, a, false) })
	reg("xrevrange", -4, "readonly", 1, 1, 1, "stream", func(c *Client, a [][]byte) { xrangeGeneric(c, a, true) })
	reg("xdel", -3, "write|fast", 1, 1, 1, "stream", cmdXDel)
	reg("xtrim", -4, "write", 1, 1, 1, "stream", cmdXTrim)
	reg("xread", -4, "readonly|blocking|movablekeys", 0, 0, 0, "stream", cmdXRead)
	reg("xreadgroup", -7, "write|blocking|movablekeys", 0, 0, 0, "stream", cmdXRead)
	reg("xgroup", -2, "write", 2, 2, 1, "stream", cmdXGroup)
	reg("xsetid", -3, "write|denyoom|fast", 1, 1, 1, "stream", cmdXSetID)
	reg("xack", -4, "write|fast", 1, 1, 1, "stream", cmdXAck)
	reg("xpending", -3, "readonly", 1, 1, 1, "stream", cmdXPending)
	reg("xclaim", -6, "write|fast", 1, 1, 1, "stream", cmdXClaim)
	reg("xautoclaim", -6, "write|fast", 1, 1, 1, "stream", cmdXAutoClaim)
	reg("xinfo", -2, "readonly", 2, 2, 1, "stream", cmdXInfo)
}

const (
	errInvalidStreamID = "ERR Invalid stream ID specified as stream command argument"
	// xreadBlockedDefaultCount is the COUNT of a blocked XREAD without one.
	xreadBlockedDefaultCount = 1000
)

// --- IDs ------------------------------------------------------------------

// string2ull is Redis's string2ull: string2ll for non-negative values, else
// C's strtoull (leading spaces, a sign, no overflow, nothing after).
func string2ull(b []byte) (uint64, bool) {
	if v, ok := parseInt(b); ok {
		return uint64(v), v >= 0
	}
	i := 0
	for i < len(b) && isSpace(b[i]) {
		i++
	}
	neg := false
	if i < len(b) && (b[i] == '+' || b[i] == '-') {
		neg = b[i] == '-'
		i++
	}
	start := i
	var v uint64
	for ; i < len(b) && b[i] >= '0' && b[i] <= '9'; i++ {
		d := uint64(b[i] - '0')
		if v > (math.MaxUint64-d)/10 {
			return 0, false
		}
		v = v*10 + d
	}
	if i == start || i != len(b) {
		return 0, false
	}
	if neg {
		v = -v
	}
	return v, true
}

// parseStreamID is Redis's streamGenericParseIDOrReply without the reply:
// "ms-seq", "ms" (seq = missingSeq), "-" and "+" unless strict, "ms-*" when
// seqStar (then seqGiven is false).
func parseStreamID(b []byte, missingSeq uint64, strict, seqStar bool) (id types.StreamID, seqGiven, ok bool) {
	if len(b) > 127 {
		return id, false, false
	}
	if i := bytes.IndexByte(b, 0); i >= 0 { // Redis reads a C string
		b = b[:i]
	}
	if len(b) == 1 && (b[0] == '-' || b[0] == '+') {
		if strict {
			return id, false, false
		}
		if b[0] == '-' {
			return types.StreamID{}, true, true
		}
		return types.MaxStreamID, true, true
	}
	seqGiven = true
	msPart := b
	dot := bytes.IndexByte(b, '-')
	if dot >= 0 {
		msPart = b[:dot]
	}
	ms, ok := string2ull(msPart)
	if !ok {
		return id, false, false
	}
	seq := missingSeq
	if dot >= 0 {
		rest := b[dot+1:]
		if seqStar && len(rest) == 1 && rest[0] == '*' {
			seq, seqGiven = 0, false
		} else if seq, ok = string2ull(rest); !ok {
			return id, false, false
		}
	}
	return types.StreamID{Ms: ms, Seq: seq}, seqGiven, true
}

// streamIDArg parses a strict ID or replies the error.
func (c *Client) streamIDArg(b []byte, strict bool) (types.StreamID, bool) {
	id, _, ok := parseStreamID(b, 0, strict, false)
	if !ok {
		c.err(errInvalidStreamID)
	}
	return id, ok
}

// intervalID parses a range bound: "(" makes it exclusive (strict parse).
func (c *Client) intervalID(b []byte, missingSeq uint64, start bool) (types.StreamID, bool) {
	ex := len(b) > 1 && b[0] == '('
	var id types.StreamID
	var ok bool
	if ex {
		id, _, ok = parseStreamID(b[1:], missingSeq, true, false)
	} else {
		id, _, ok = parseStreamID(b, missingSeq, false, false)
	}
	if !ok {
		c.err(errInvalidStreamID)
		return id, false
	}
	if ex {
		if start {
			if id, ok = id.Incr(); !ok {
				c.err("ERR invalid start ID for the interval")
			}
		} else if id, ok = id.Decr(); !ok {
			c.err("ERR invalid end ID for the interval")
		}
	}
	return id, ok
}

func idArg(id types.StreamID) []byte { return id.Append(nil) }

// --- replies ----------------------------------------------------------------

func (c *Client) streamID(id types.StreamID) {
	var buf [44]byte
	c.bulk(id.Append(buf[:0]))
}

func (c *Client) streamEntry(id types.StreamID, fv [][]byte) {
	c.array(2)
	c.streamID(id)
	c.array(len(fv))
	for _, b := range fv {
		c.bulk(b)
	}
}

// setArrayLen inserts at mark (a length of c.out taken before the
// elements were written) the header of an array of n elements.
func (c *Client) setArrayLen(mark, n int) {
	var hdr [24]byte
	c.out = slices.Insert(c.out, mark, redcon.AppendArray(hdr[:0], n)...)
}

// setMapLen is setArrayLen for a map of n pairs.
func (c *Client) setMapLen(mark, n int) {
	if c.proto != 3 {
		c.setArrayLen(mark, 2*n)
		return
	}
	h := strconv.AppendInt([]byte{'%'}, int64(n), 10)
	c.out = slices.Insert(c.out, mark, append(h, '\r', '\n')...)
}

// rangeReply emits the entries of [start, end] (at most count, 0 = all)
// and returns how many it emitted.
func (c *Client) rangeReply(s *types.Stream, start, end types.StreamID, count int64, rev bool) int {
	mark := len(c.out)
	n := 0
	s.Range(start, end, rev, func(id types.StreamID, fv [][]byte) bool {
		c.streamEntry(id, fv)
		n++
		return count == 0 || int64(n) < count
	})
	c.setArrayLen(mark, n)
	return n
}

// --- lookups ----------------------------------------------------------------

// readStream finds the stream at key (shard locked by the caller); bad
// after a WRONGTYPE reply.
func (c *Client) readStream(sh *shard.Shard, h uint64, key []byte) (e shard.Entry, s *types.Stream, bad bool) {
	e, found, bad := c.getColl(sh, h, key, shard.TypeStream)
	if found {
		s = e.Obj().(*types.Stream)
	}
	return e, s, bad
}

// modifyStream marks the stream entry as about to change (snapshots).
func (c *Client) modifyStream(sh *shard.Shard, e *shard.Entry) {
	sh.DB(c.db).Modify(e)
}

// --- XADD / XTRIM -----------------------------------------------------------

type addTrimArgs struct {
	trim       types.TrimArgs
	argIdx     int // the MAXLEN/MINID value's index (for the rewrite)
	idPos      int
	id         types.StreamID
	idGiven    bool
	seqGiven   bool
	noMkStream bool
}

// parseAddTrim is streamParseAddOrTrimArgsOrReply.
func (c *Client) parseAddTrim(args [][]byte, xadd bool) (a addTrimArgs, ok bool) {
	limitGiven := false
	var limit int64
	i := 2
	for ; i < len(args); i++ {
		more := len(args) - 1 - i
		opt := args[i]
		switch {
		case xadd && len(opt) == 1 && opt[0] == '*':
			goto done
		case (eq(opt, "maxlen") || eq(opt, "minid")) && more > 0:
			if a.trim.Enabled {
				c.err("ERR syntax error, MAXLEN and MINID options at the same time are not compatible")
				return a, false
			}
			maxlen := eq(opt, "maxlen")
			a.trim.Approx = false
			next := args[i+1]
			if more >= 2 && len(next) == 1 && (next[0] == '~' || next[0] == '=') {
				a.trim.Approx = next[0] == '~'
				i++
			}
			if maxlen {
				n, ok := parseInt(args[i+1])
				if !ok {
					c.errNotInteger()
					return a, false
				}
				if n < 0 {
					c.err("ERR The MAXLEN argument must be >= 0.")
					return a, false
				}
				a.trim.N = uint64(n)
			} else {
				id, ok := c.streamIDArg(args[i+1], true)
				if !ok {
					return a, false
				}
				a.trim.MinID = id
			}
			i++
			a.trim.Enabled, a.trim.MaxLen, a.argIdx = true, maxlen, i
		case eq(opt, "limit") && more > 0:
			n, ok := parseInt(args[i+1])
			if !ok {
				c.errNotInteger()
				return a, false
			}
			if n < 0 {
				c.err("ERR The LIMIT argument must be >= 0.")
				return a, false
			}
			limit, limitGiven = n, true
			i++
		case xadd && eq(opt, "nomkstream"):
			a.noMkStream = true
		case xadd:
			id, seqGiven, ok := parseStreamID(opt, 0, true, true)
			if !ok {
				c.err(errInvalidStreamID)
				return a, false
			}
			a.id, a.seqGiven, a.idGiven = id, seqGiven, true
			goto done
		default:
			c.errSyntax()
			return a, false
		}
	}
done:
	a.idPos = i
	if limit != 0 && !a.trim.Enabled {
		c.err("ERR syntax error, LIMIT cannot be used without specifying a trimming strategy")
		return a, false
	}
	if !xadd && !a.trim.Enabled {
		c.err("ERR syntax error, XTRIM must be called with a trimming strategy")
		return a, false
	}
	if c.fromPrimary {
		limit = 0
	} else if limitGiven {
		if !a.trim.Approx {
			c.err("ERR syntax error, LIMIT cannot be used without the special ~ option")
			return a, false
		}
	} else if a.trim.Approx {
		limit = 100 * int64(c.lim().StreamNodeMaxEntries)
		if limit <= 0 {
			limit = 10000
		}
		limit = min(limit, 1000000)
	} else {
		limit = 0
	}
	a.trim.Limit = limit
	return a, true
}

// trimRewrite makes the replicated form of an approximate trim exact.
func trimRewrite(args [][]byte, a *addTrimArgs, s *types.Stream) {
	args[a.argIdx-1] = []byte("=")
	if a.trim.MaxLen {
		args[a.argIdx] = bytesArg(int64(s.Len()))
	} else {
		id, _ := s.FirstEntryID()
		args[a.argIdx] = idArg(id)
	}
}

func cmdXAdd(c *Client, args [][]byte) {
	a, ok := c.parseAddTrim(args, true)
	if !ok {
		return
	}
	fieldPos := a.idPos + 1
	if n := len(args) - fieldPos; n < 2 || n%2 == 1 {
		c.err("ERR wrong number of arguments for 'xadd' command")
		return
	}
	if a.idGiven && a.seqGiven && a.id.IsZero() {
		c.err("ERR The ID specified in XADD must be greater than 0-0")
		return
	}
	key := args[1]
	sh, h := c.lockKey(key)
	defer c.unlockKey(sh)
	e, s, bad := c.readStream(sh, h, key)
	if bad {
		return
	}
	created := false
	if s == nil {
		if a.noMkStream {
			c.null()
			return
		}
		s = types.NewStream()
		e = sh.DB(c.db).Put(h, key, shard.Value{Type: shard.TypeStream, Obj: s})
		created = true
	}
	// Every check before the stream changes: a failed XADD is no write.
	last := s.LastID()
	if last == types.MaxStreamID {
		c.err("ERR The stream has exhausted the last possible ID, unable to add more items")
		return
	}
	var id types.StreamID
	switch {
	case !a.idGiven:
		id, _ = s.NextID(uint64(now()))
	case !a.seqGiven && last.Ms == a.id.Ms:
		if last.Seq == math.MaxUint64 {
			// Redis fails here without setting errno, so XADD reports the
			// other error.
			c.err("ERR " + types.ErrStreamTooBig.Error())
			return
		}
		id = types.StreamID{Ms: last.Ms, Seq: last.Seq + 1}
	default:
		id = a.id
	}
	if !last.Less(id) {
		c.err("ERR " + types.ErrStreamIDTooSmall.Error())
		return
	}
	tot := 0
	for _, b := range args[fieldPos:] {
		tot += len(b)
	}
	if tot > 1<<30 {
		c.err("ERR " + types.ErrStreamTooBig.Error())
		return
	}
	if !created {
		c.modifyStream(sh, &e)
	}
	if err := s.Add(id, args[fieldPos:], c.lim()); err != nil {
		c.err("ERR " + err.Error())
		return
	}
	c.streamID(id)
	// The replicated form: the concrete ID, exact trimming. Built in the
	// client's reusable buffers (the journal copies what it keeps).
	rw := args
	copied := false
	cp := func() {
		if !copied {
			rw = append(c.rwArgs[:0], args...)
			copied = true
		}
	}
	if a.trim.Enabled {
		s.Trim(a.trim)
		if a.trim.Approx {
			cp()
			trimRewrite(rw, &a, s)
		}
	}
	if !a.idGiven || !a.seqGiven {
		cp()
		c.rwID = id.Append(c.rwID[:0])
		rw[a.idPos] = c.rwID
	}
	if copied {
		c.rewrite(rw...)
		c.rwArgs = rw[:0]
	}
	c.srv.signalStream(c.db, key)
}

func cmdXTrim(c *Client, args [][]byte) {
	a, ok := c.parseAddTrim(args, false)
	if !ok {
		return
	}
	sh, h := c.lockKey(args[1])
	defer c.unlockKey(sh)
	e, s, bad := c.readStream(sh, h, args[1])
	if bad {
		return
	}
	if s == nil {
		c.int(0)
		return
	}
	c.modifyStream(sh, &e)
	n := s.Trim(a.trim)
	switch {
	case n == 0:
		c.rewrite() // nothing changed: nothing to replicate
	case a.trim.Approx:
		rw := slices.Clone(args)
		trimRewrite(rw, &a, s)
		c.rewrite(rw...)
	}
	c.int(n)
}

// --- XLEN / XRANGE / XDEL -----------------------------------------------------

func cmdXLen(c *Client, args [][]byte) {
	sh, h := c.lockKey(args[1])
	defer c.unlockKey(sh)
	_, s, bad := c.readStream(sh, h, args[1])
	switch {
	case bad:
	case s == nil:
		c.int(0)
	default:
		c.int(int64(s.Len()))
	}
}

func xrangeGeneric(c *Client, args [][]byte, rev bool) {
	startArg, endArg := args[2], args[3]
	if rev {
		startArg, endArg = endArg, startArg
	}
	start, ok := c.intervalID(startArg, 0, true)
	if !ok {
		return
	}
	end, ok := c.intervalID(endArg, math.MaxUint64, false)
	if !ok {
		return
	}
	count := int64(-1)
	for j := 4; j < len(args); j++ {
		if eq(args[j], "count") && j+1 < len(args) {
			n, ok := parseInt(args[j+1])
			if !ok {
				c.errNotInteger()
				return
			}
			count = max(n, 0)
			j++
		} else {
			c.errSyntax()
			return
		}
	}
	sh, h := c.lockKey(args[1])
	defer c.unlockKey(sh)
	_, s, bad := c.readStream(sh, h, args[1])
	switch {
	case bad:
	case s == nil:
		c.array(0)
	case count == 0:
		c.nullArray()
	default:
		c.rangeReply(s, start, end, max(count, 0), rev)
	}
}

func cmdXDel(c *Client, args [][]byte) {
	sh, h := c.lockKey(args[1])
	defer c.unlockKey(sh)
	e, s, bad := c.readStream(sh, h, args[1])
	if bad {
		return
	}
	if s == nil {
		c.int(0)
		return
	}
	ids := make([]types.StreamID, 0, len(args)-2)
	for _, a := range args[2:] {
		id, ok := c.streamIDArg(a, true)
		if !ok {
			return
		}
		ids = append(ids, id)
	}
	n := 0
	for _, id := range ids {
		if s.Exists(id) {
			if n == 0 {
				c.modifyStream(sh, &e)
			}
			s.Delete(id)
			n++
		}
	}
	c.int(int64(n))
}

// --- XSETID -------------------------------------------------------------------

func cmdXSetID(c *Client, args [][]byte) {
	id, ok := c.streamIDArg(args[2], true)
	if !ok {
		return
	}
	entriesAdded := int64(-1)
	var maxDel types.StreamID
	for i := 3; i < len(args); i++ {
		more := len(args) - 1 - i
		switch {
		case eq(args[i], "entriesadded") && more > 0:
			n, ok := parseInt(args[i+1])
			if !ok {
				c.errNotInteger()
				return
			}
			if n < 0 {
				c.err("ERR entries_added must be positive")
				return
			}
			entriesAdded = n
			i++
		case eq(args[i], "maxdeletedid") && more > 0:
			md, ok := c.streamIDArg(args[i+1], true)
			if !ok {
				return
			}
			if id.Less(md) {
				c.err("ERR The ID specified in XSETID is smaller than the provided max_deleted_entry_id")
				return
			}
			maxDel = md
			i++
		default:
			c.errSyntax()
			return
		}
	}
	sh, h := c.lockKey(args[1])
	defer c.unlockKey(sh)
	e, s, bad := c.readStream(sh, h, args[1])
	if bad {
		return
	}
	if s == nil {
		c.err("ERR no such key")
		return
	}
	if s.Len() > 0 {
		if last, _ := s.Last(); id.Less(last) {
			c.err("ERR The ID specified in XSETID is smaller than the target stream top item")
			return
		}
		if entriesAdded != -1 && int64(s.Len()) > entriesAdded {
			c.err("ERR The entries_added specified in XSETID is smaller than the target stream length")
			return
		}
	}
	c.modifyStream(sh, &e)
	added := s.EntriesAdded()
	if entriesAdded != -1 {
		added = uint64(entriesAdded)
	}
	md := s.MaxDeletedID()
	if !maxDel.IsZero() {
		md = maxDel
	}
	s.SetLastID(id, added, md)
	c.ok()
}

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

func (c *Client) helpReply(lines []string) {
	c.array(len(lines))
	for _, l := range lines {
		c.simple(l)
	}
}

// subcommandArity checks a container command's subcommand like Redis 7.0's
// dispatcher: unknown names and wrong arities are errors.
func (c *Client) subcommandArity(args [][]byte, arities map[string]int) (string, bool) {
	sub := lower(args[1])
	ar, ok := arities[sub]
	parent := lower(args[0])
	if !ok {
		c.err("ERR unknown subcommand '" + sanitize(args[1], 128) + "'. Try " + strings.ToUpper(parent) + " HELP.")
		return "", false
	}
	if (ar > 0 && len(args) != ar) || (ar < 0 && len(args) < -ar) {
		c.err("ERR wrong number of arguments for '" + parent + "|" + sub + "' command")
		return "", false
	}
	return sub, true
}

func (c *Client) subcommandSyntaxError(args [][]byte) {
	c.err("ERR unknown subcommand or wrong number of arguments for '" + sanitize(args[1], 128) + "'. Try " + strings.ToUpper(string(args[0])) + " HELP.")
}

var xgroupArity = map[string]int{"create": -5, "setid": -5, "destroy": 4, "createconsumer": 5, "delconsumer": 5, "help": 2}

func cmdXGroup(c *Client, args [][]byte) {
	sub, ok := c.subcommandArity(args, xgroupArity)
	if !ok {
		return
	}
	if sub == "help" {
		c.helpReply(xgroupHelp)
		return
	}
	mkstream := false
	entriesRead := int64(types.SCGInvalidEntriesRead)
	for i := 5; i < len(args); {
		switch {
		case sub == "create" && eq(args[i], "mkstream"):
			mkstream = true
			i++
		case (sub == "create" || sub == "setid") && eq(args[i], "entriesread") && i+1 < len(args):
			n, ok := parseInt(args[i+1])
			if !ok {
				c.errNotInteger()
				return
			}
			if n < 0 && n != types.SCGInvalidEntriesRead {
				c.err("ERR value for ENTRIESREAD must be positive or -1")
				return
			}
			entriesRead = n
			i += 2
		default:
			c.subcommandSyntaxError(args)
			return
		}
	}
	key, gname := args[2], args[3]
	sh, h := c.lockKey(key)
	defer c.unlockKey(sh)
	e, s, bad := c.readStream(sh, h, key)
	if bad {
		return
	}
	var g *types.StreamGroup
	if !mkstream {
		if s == nil {
			c.err("ERR The XGROUP subcommand requires the key to exist. Note that for CREATE you may want to use the MKSTREAM option to create an empty stream automatically.")
			return
		}
		g = s.Group(gname)
		if g == nil && (sub == "setid" || sub == "createconsumer" || sub == "delconsumer") {
			c.err("NOGROUP No such consumer group '" + string(gname) + "' for key name '" + string(key) + "'")
			return
		}
	}
	switch {
	case sub == "create" && len(args) <= 8:
		var id types.StreamID
		if len(args[4]) == 1 && args[4][0] == '$' {
			if s != nil {
				id = s.LastID()
			}
		} else if id, ok = c.streamIDArg(args[4], true); !ok {
			return
		}
		if s == nil {
			s = types.NewStream()
			e = sh.DB(c.db).Put(h, key, shard.Value{Type: shard.TypeStream, Obj: s})
		} else if s.Group(gname) == nil {
			c.modifyStream(sh, &e)
		}
		if s.CreateGroup(gname, id, entriesRead) == nil {
			c.err("BUSYGROUP Consumer Group name already exists")
			return
		}
		c.ok()
	case sub == "setid" && (len(args) == 5 || len(args) == 7):
		var id types.StreamID
		if len(args[4]) == 1 && args[4][0] == '$' {
			id = s.LastID()
		} else if id, _, ok = parseStreamID(args[4], 0, false, false); !ok {
			c.err(errInvalidStreamID)
			return
		}
		c.modifyStream(sh, &e)
		g.LastID, g.EntriesRead = id, entriesRead
		c.ok()
	case sub == "destroy":
		if g == nil {
			c.int(0)
			return
		}
		c.modifyStream(sh, &e)
		s.DeleteGroup(gname)
		c.int(1)
		c.srv.signalStream(c.db, key) // blocked XREADGROUPs get NOGROUP
	case sub == "createconsumer":
		if g.Consumer(args[4]) != nil {
			c.int(0)
			return
		}
		c.modifyStream(sh, &e)
		t := now()
		g.CreateConsumer(args[4], t, t)
		c.int(1)
	case sub == "delconsumer":
		if g.Consumer(args[4]) == nil {
			c.int(0)
			return
		}
		c.modifyStream(sh, &e)
		n, _ := g.DeleteConsumer(args[4])
		c.int(int64(n))
	default:
		c.subcommandSyntaxError(args)
	}
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
	for _, id := range ids {
		if g.Pending(id) != nil {
			if n == 0 {
				c.modifyStream(sh, &e)
			}
			g.Ack(id)
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
	var start, end types.StreamID
	var count, minIdle int64
	var consumer []byte
	if len(args) >= 6 {
		si := 3
		if eq(args[3], "idle") {
			n, ok := parseInt(args[4])
			if !ok {
				c.errNotInteger()
				return
			}
			minIdle = n
			if len(args) < 8 {
				c.errSyntax()
				return
			}
			si += 2
		}
		n, ok := parseInt(args[si+2])
		if !ok {
			c.errNotInteger()
			return
		}
		count = max(n, 0)
		if start, ok = c.intervalID(args[si], 0, true); !ok {
			return
		}
		if end, ok = c.intervalID(args[si+1], math.MaxUint64, false); !ok {
			return
		}
		if si+3 < len(args) {
			consumer = args[si+3]
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
				first = p.ID
			}
			last = p.ID
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
		return
	}
	var sc *types.StreamConsumer
	if consumer != nil {
		if sc = g.Consumer(consumer); sc == nil {
			c.array(0)
			return
		}
	}
	t := now()
	mark := len(c.out)
	n := 0
	emit := func(p *types.PendingEntry) bool {
		if end.Less(p.ID) || count == 0 {
			return false
		}
		if minIdle != 0 && t-p.DeliveryTime < minIdle {
			return true
		}
		n++
		count--
		c.array(4)
		c.streamID(p.ID)
		c.bulkString(g.Owner(p).Name())
		c.int(max(t-p.DeliveryTime, 0))
		c.int(int64(p.DeliveryCount))
		return true
	}
	if sc != nil {
		sc.Pending(start, func(id types.StreamID) bool { return emit(g.Pending(id)) })
	} else {
		g.PendingAscend(start, func(p *types.PendingEntry, _ *types.StreamConsumer) bool { return emit(p) })
	}
	c.setArrayLen(mark, n)
}

// --- XCLAIM / XAUTOCLAIM --------------------------------------------------------

// xclaimProp is the XCLAIM Redis propagates for a PEL change:
// XCLAIM key group consumer 0 id TIME t RETRYCOUNT n FORCE JUSTID LASTID last.
func xclaimProp(key, group []byte, consumer string, id types.StreamID, p *types.PendingEntry, last types.StreamID) [][]byte {
	return [][]byte{[]byte("XCLAIM"), key, group, []byte(consumer), []byte("0"), idArg(id),
		[]byte("TIME"), bytesArg(p.DeliveryTime), []byte("RETRYCOUNT"), bytesArg(int64(p.DeliveryCount)),
		[]byte("FORCE"), []byte("JUSTID"), []byte("LASTID"), idArg(last)}
}

func xsetidProp(key, group []byte, g *types.StreamGroup) [][]byte {
	return [][]byte{[]byte("XGROUP"), []byte("SETID"), key, group, idArg(g.LastID), []byte("ENTRIESREAD"), bytesArg(g.EntriesRead)}
}

func cmdXClaim(c *Client, args [][]byte) {
	key, gname := args[1], args[2]
	sh, h := c.lockKey(key)
	defer c.unlockKey(sh)
	e, s, bad := c.readStream(sh, h, key)
	if bad {
		return
	}
	var g *types.StreamGroup
	if s != nil {
		g = s.Group(gname)
	}
	if g == nil {
		c.err(noGroupErr(key, gname))
		return
	}
	minIdle, ok := parseInt(args[4])
	if !ok {
		c.err("ERR Invalid min-idle-time argument for XCLAIM")
		return
	}
	minIdle = max(minIdle, 0)
	var ids []types.StreamID
	j := 5
	for ; j < len(args); j++ {
		id, _, ok := parseStreamID(args[j], 0, true, false)
		if !ok {
			break
		}
		ids = append(ids, id)
	}
	t := now()
	var lastID types.StreamID
	retry, delivery := int64(-1), int64(-1)
	force, justID := false, false
	for ; j < len(args); j++ {
		more := len(args) - 1 - j
		opt := args[j]
		switch {
		case eq(opt, "force"):
			force = true
		case eq(opt, "justid"):
			justID = true
		case eq(opt, "idle") && more > 0:
			j++
			n, ok := parseInt(args[j])
			if !ok {
				c.err("ERR Invalid IDLE option argument for XCLAIM")
				return
			}
			delivery = t - n
		case eq(opt, "time") && more > 0:
			j++
			n, ok := parseInt(args[j])
			if !ok {
				c.err("ERR Invalid TIME option argument for XCLAIM")
				return
			}
			delivery = n
		case eq(opt, "retrycount") && more > 0:
			j++
			n, ok := parseInt(args[j])
			if !ok {
				c.err("ERR Invalid RETRYCOUNT option argument for XCLAIM")
				return
			}
			retry = n
		case eq(opt, "lastid") && more > 0:
			j++
			id, ok := c.streamIDArg(args[j], true)
			if !ok {
				return
			}
			lastID = id
		default:
			c.err("ERR Unrecognized XCLAIM option '" + string(opt) + "'")
			return
		}
	}
	modified := false
	modify := func() {
		if !modified {
			c.modifyStream(sh, &e)
			modified = true
		}
	}
	var props [][][]byte
	propLast := false
	if g.LastID.Less(lastID) {
		modify()
		g.LastID = lastID
		propLast = true
	}
	if delivery != -1 {
		if delivery < 0 || delivery > t {
			delivery = t
		}
	} else {
		delivery = t
	}
	var sc *types.StreamConsumer
	mark := len(c.out)
	n := 0
	for _, id := range ids {
		p := g.Pending(id)
		if !s.Exists(id) {
			if p != nil {
				modify()
				props = append(props, xclaimProp(key, gname, g.Owner(p).Name(), id, p, g.LastID))
				propLast = false
				g.Ack(id)
			}
			continue
		}
		if p != nil && minIdle > 0 && t-p.DeliveryTime < minIdle {
			continue
		}
		if p == nil && !force {
			continue
		}
		modify()
		if sc == nil {
			if sc = g.Consumer(args[3]); sc == nil {
				sc, _ = g.CreateConsumer(args[3], t, t)
			} else {
				sc.SeenTime = t
			}
		}
		g.Deliver(sc, id, delivery, false) // a FORCE-created entry starts at count 1
		p = g.Pending(id)
		if retry >= 0 {
			p.DeliveryCount = uint64(retry)
		} else if !justID {
			p.DeliveryCount++
		}
		if justID {
			c.streamID(id)
		} else {
			s.Range(id, id, false, func(id types.StreamID, fv [][]byte) bool { c.streamEntry(id, fv); return false })
		}
		n++
		props = append(props, xclaimProp(key, gname, sc.Name(), id, p, g.LastID))
		propLast = false
	}
	if propLast {
		props = append(props, xsetidProp(key, gname, g))
	}
	c.setArrayLen(mark, n)
	c.rewriteMany(props)
}

func cmdXAutoClaim(c *Client, args [][]byte) {
	key, gname := args[1], args[2]
	minIdle, ok := parseInt(args[4])
	if !ok {
		c.err("ERR Invalid min-idle-time argument for XAUTOCLAIM")
		return
	}
	minIdle = max(minIdle, 0)
	start, ok := c.intervalID(args[5], 0, true)
	if !ok {
		return
	}
	count := int64(100)
	justID := false
	for j := 6; j < len(args); j++ {
		more := len(args) - 1 - j
		switch {
		case eq(args[j], "count") && more > 0:
			n, ok := parseInt(args[j+1])
			if !ok || n < 1 || n > math.MaxInt64/16 {
				c.err("ERR COUNT must be > 0")
				return
			}
			count = n
			j++
		case eq(args[j], "justid"):
			justID = true
		default:
			c.errSyntax()
			return
		}
	}
	sh, h := c.lockKey(key)
	defer c.unlockKey(sh)
	e, s, bad := c.readStream(sh, h, key)
	if bad {
		return
	}
	var g *types.StreamGroup
	if s != nil {
		g = s.Group(gname)
	}
	if g == nil {
		c.err(noGroupErr(key, gname))
		return
	}
	// Collect the candidates first: claiming changes the PEL.
	attempts := count * 10
	type cand struct {
		id      types.StreamID
		exists  bool
		claimed bool
	}
	var cands []cand
	var next types.StreamID
	t := now()
	left := count
	g.PendingAscend(start, func(p *types.PendingEntry, _ *types.StreamConsumer) bool {
		if attempts == 0 || left == 0 {
			next = p.ID
			return false
		}
		attempts--
		if !s.Exists(p.ID) {
			cands = append(cands, cand{id: p.ID})
			left--
			return true
		}
		if minIdle > 0 && t-p.DeliveryTime < minIdle {
			return true
		}
		cands = append(cands, cand{id: p.ID, exists: true})
		left--
		return true
	})
	var props [][][]byte
	if len(cands) > 0 {
		c.modifyStream(sh, &e)
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
			props = append(props, xclaimProp(key, gname, g.Owner(p).Name(), cd.id, p, g.LastID))
			g.Ack(cd.id)
			deleted = append(deleted, cd.id)
			continue
		}
		if sc == nil {
			if sc = g.Consumer(args[3]); sc == nil {
				sc, _ = g.CreateConsumer(args[3], t, t)
			} else {
				sc.SeenTime = t
			}
		}
		g.Deliver(sc, cd.id, t, !justID)
		p = g.Pending(cd.id)
		if justID {
			c.streamID(cd.id)
		} else {
			s.Range(cd.id, cd.id, false, func(id types.StreamID, fv [][]byte) bool { c.streamEntry(id, fv); return false })
		}
		n++
		props = append(props, xclaimProp(key, gname, sc.Name(), cd.id, p, g.LastID))
	}
	c.setArrayLen(mark, n)
	c.array(len(deleted))
	for _, id := range deleted {
		c.streamID(id)
	}
	c.rewriteMany(props)
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
				if last, _ := s.Last(); groups[i].LastID.Less(last) {
					sync, gt = true, groups[i].LastID
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
			gt = g.LastID
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
	c.modifyStream(sh, e)
	t := now()
	sc := g.Consumer(a.consumer)
	if sc == nil {
		sc, _ = g.CreateConsumer(a.consumer, t, t)
		if a.noack {
			*props = append(*props, [][]byte{[]byte("XGROUP"), []byte("CREATECONSUMER"), key, a.group, a.consumer})
		}
	} else {
		sc.SeenTime = t
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
					p.DeliveryTime = t
					p.DeliveryCount++
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
		if g.LastID.Less(id) {
			s.NoteDelivered(g, id)
			advanced = true
		}
		c.streamEntry(id, fv)
		if !a.noack {
			delivered = append(delivered, delivery{id, g.LastID})
		}
		n++
		return count == 0 || int64(n) < count
	})
	c.setArrayLen(mark, n)
	for _, d := range delivered {
		// A new PEL entry, or one taken over (its count starts again).
		g.Deliver(sc, d.id, t, false)
		p := g.Pending(d.id)
		p.DeliveryCount = 1
		*props = append(*props, xclaimProp(key, a.group, sc.Name(), d.id, p, d.last))
	}
	if a.noack && advanced {
		*props = append(*props, xsetidProp(key, a.group, g))
	}
}

// --- XINFO --------------------------------------------------------------------

var xinfoArity = map[string]int{"stream": -3, "groups": 3, "consumers": 4, "help": 2}

func cmdXInfo(c *Client, args [][]byte) {
	sub, ok := c.subcommandArity(args, xinfoArity)
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
			c.int(max(t-sc.SeenTime, 0))
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
			c.streamID(g.LastID)
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
	if g.EntriesRead != types.SCGInvalidEntriesRead {
		c.int(g.EntriesRead)
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
	full := false
	count := int64(10)
	opts := args[3:]
	if len(opts) > 0 {
		if (len(opts) != 1 && len(opts) != 3) || !eq(opts[0], "full") {
			c.subcommandSyntaxError(args)
			return
		}
		full = true
		if len(opts) == 3 {
			if !eq(opts[1], "count") {
				c.subcommandSyntaxError(args)
				return
			}
			n, ok := parseInt(opts[2])
			if !ok {
				c.errNotInteger()
				return
			}
			count = n
			if count < 0 {
				count = 10
			}
		}
	}
	if full {
		c.mapHeader(9)
	} else {
		c.mapHeader(10)
	}
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
	if !full {
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
		return
	}
	c.bulkString("entries")
	c.rangeReply(s, types.StreamID{}, types.MaxStreamID, count, false)
	c.bulkString("groups")
	c.array(s.GroupCount())
	s.Groups(func(g *types.StreamGroup) bool {
		c.mapHeader(7)
		c.bulkString("name")
		c.bulkString(g.Name())
		c.bulkString("last-delivered-id")
		c.streamID(g.LastID)
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
			c.streamID(p.ID)
			c.bulkString(owner.Name())
			c.int(p.DeliveryTime)
			c.int(int64(p.DeliveryCount))
			n++
			return true
		})
		c.setArrayLen(mark, n)
		c.bulkString("consumers")
		c.array(g.ConsumerCount())
		g.Consumers(func(sc *types.StreamConsumer) bool {
			c.mapHeader(4)
			c.bulkString("name")
			c.bulkString(sc.Name())
			c.bulkString("seen-time")
			c.int(sc.SeenTime)
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
				c.int(p.DeliveryTime)
				c.int(int64(p.DeliveryCount))
				n++
				return true
			})
			c.setArrayLen(mark, n)
			return true
		})
		return true
	})
}
