package server

import (
	"bytes"
	"math"
	"slices"
	"strconv"

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
	reg("xread", -4, "readonly|blocking|movablekeys|x-block-option", 0, 0, 0, "stream", cmdXRead)
	reg("xreadgroup", -7, "write|blocking|movablekeys|x-block-option", 0, 0, 0, "stream", cmdXRead)
	reg("xgroup", -2, "write", 2, 2, 1, "stream", cmdXGroup)
	reg("xgroup|create", -5, "write|denyoom", 2, 2, 1, "stream", cmdXGroup)
	reg("xgroup|setid", -5, "write", 2, 2, 1, "stream", cmdXGroup)
	reg("xgroup|destroy", 4, "write", 2, 2, 1, "stream", cmdXGroup)
	reg("xgroup|createconsumer", 5, "write|denyoom", 2, 2, 1, "stream", cmdXGroup)
	reg("xgroup|delconsumer", 5, "write", 2, 2, 1, "stream", cmdXGroup)
	reg("xgroup|help", 2, "loading|stale", 0, 0, 0, "stream", cmdXGroup)
	reg("xsetid", -3, "write|denyoom|fast", 1, 1, 1, "stream", cmdXSetID)
	reg("xack", -4, "write|fast", 1, 1, 1, "stream", cmdXAck)
	reg("xpending", -3, "readonly", 1, 1, 1, "stream", cmdXPending)
	reg("xclaim", -6, "write|fast", 1, 1, 1, "stream", cmdXClaim)
	reg("xautoclaim", -6, "write|fast", 1, 1, 1, "stream", cmdXAutoClaim)
	reg("xinfo", -2, "readonly", 2, 2, 1, "stream", cmdXInfo)
	reg("xinfo|consumers", 4, "readonly", 2, 2, 1, "stream", cmdXInfo)
	reg("xinfo|groups", 3, "readonly", 2, 2, 1, "stream", cmdXInfo)
	reg("xinfo|stream", -3, "readonly", 2, 2, 1, "stream", cmdXInfo)
	reg("xinfo|help", 2, "loading|stale", 0, 0, 0, "stream", cmdXInfo)
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
// after a WRONGTYPE reply. A missing key raises keymiss, as Redis's read
// lookup: the writers that look up as Redis's lookupKeyWrite use streamAt.
func (c *Client) readStream(sh *shard.Shard, h uint64, key []byte) (e shard.Entry, s *types.Stream, bad bool) {
	e, s, bad = c.streamAt(sh, h, key)
	if s == nil && !bad {
		c.keyMiss(key)
	}
	return e, s, bad
}

// streamAt is readStream without the keymiss event.
func (c *Client) streamAt(sh *shard.Shard, h uint64, key []byte) (e shard.Entry, s *types.Stream, bad bool) {
	e, found, bad := c.getColl(sh, h, key, shard.TypeStream)
	if found {
		s = e.Obj().(*types.Stream)
	}
	return e, s, bad
}

// modifyStream marks the stream entry as about to change (snapshots).
func (c *Client) modifyStream(sh *shard.Shard, e *shard.Entry) types.W {
	return sh.DB(c.db).Modify(e)
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
	e, s, bad := c.streamAt(sh, h, key)
	if bad {
		return
	}
	created := false
	var w types.W
	if s == nil {
		if a.noMkStream {
			c.null()
			return
		}
		s, w = types.NewStream()
		e = sh.DB(c.db).Put(h, key, shard.Value{Type: shard.TypeStream, Obj: s})
		created = true
	}
	// Every check before the stream changes: a failed XADD is no write.
	id, ok := xaddNextID(c, s, &a)
	if !ok {
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
		w = c.modifyStream(sh, &e)
	}
	if err := s.Add(w, id, args[fieldPos:], c.lim()); err != nil {
		c.err("ERR " + err.Error())
		return
	}
	c.streamID(id)
	c.notify(kseStream, "xadd", key)
	c.xaddTrimAndRewrite(args, &a, s, w, id)
	c.srv.signalStream(c.db, key)
}

// xaddNextID is the ID XADD gives the new entry (the next one, or the
// given ID, completed with a sequence), checked to be above the stream's
// last.
func xaddNextID(c *Client, s *types.Stream, a *addTrimArgs) (types.StreamID, bool) {
	last := s.LastID()
	if last == types.MaxStreamID {
		c.err("ERR The stream has exhausted the last possible ID, unable to add more items")
		return types.StreamID{}, false
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
			return types.StreamID{}, false
		}
		id = types.StreamID{Ms: last.Ms, Seq: last.Seq + 1}
	default:
		id = a.id
	}
	if !last.Less(id) {
		c.err("ERR " + types.ErrStreamIDTooSmall.Error())
		return types.StreamID{}, false
	}
	return id, true
}

// xaddTrimAndRewrite trims the stream as XADD asked and sets the
// replicated form: the concrete ID, exact trimming. It is built in the
// client's reusable buffers (the journal copies what it keeps).
func (c *Client) xaddTrimAndRewrite(args [][]byte, a *addTrimArgs, s *types.Stream, w types.W, id types.StreamID) {
	key := args[1]
	rw := args
	copied := false
	cp := func() {
		if !copied {
			rw = append(c.rwArgs[:0], args...)
			copied = true
		}
	}
	if a.trim.Enabled {
		if s.Trim(w, a.trim) > 0 {
			c.notify(kseStream, "xtrim", key)
		}
		if a.trim.Approx {
			cp()
			trimRewrite(rw, a, s)
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
}

func cmdXTrim(c *Client, args [][]byte) {
	a, ok := c.parseAddTrim(args, false)
	if !ok {
		return
	}
	sh, h := c.lockKey(args[1])
	defer c.unlockKey(sh)
	e, s, bad := c.streamAt(sh, h, args[1])
	if bad {
		return
	}
	if s == nil {
		c.int(0)
		return
	}
	// Trimming nothing is no change for WATCH (Redis signals the key only
	// when entries go); the snapshot hook runs either way.
	db := sh.DB(c.db)
	n := s.Trim(db.ModifyUnwatched(&e), a.trim)
	if n > 0 {
		db.SignalModified(args[1])
		c.notify(kseStream, "xtrim", args[1])
	}
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
	e, s, bad := c.streamAt(sh, h, args[1])
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
	var w types.W
	for _, id := range ids {
		if s.Exists(id) {
			if n == 0 {
				w = c.modifyStream(sh, &e)
			}
			s.Delete(w, id)
			n++
		}
	}
	if n > 0 {
		c.notify(kseStream, "xdel", args[1])
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
	e, s, bad := c.streamAt(sh, h, args[1])
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
	w := sh.DB(c.db).ModifyUnwatched(&e) // Redis 7.0's XSETID does not touch WATCH
	added := s.EntriesAdded()
	if entriesAdded != -1 {
		added = uint64(entriesAdded)
	}
	md := s.MaxDeletedID()
	if !maxDel.IsZero() {
		md = maxDel
	}
	s.SetLastID(w, id, added, md)
	c.ok()
	c.notify(kseStream, "xsetid", args[1]) // after the reply, as Redis
}
