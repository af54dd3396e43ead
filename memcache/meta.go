package memcache

import (
	"strconv"

	"github.com/damselflydb/damselfly/shard"
)

// The meta commands (mg ms md ma; mn is answered in dispatch), following
// memcached 1.6's protocol.txt: "<cmd> <key> [datalen] <flag>*", each flag
// one letter, some with a token glued to it (O123, T60). Return flags are
// echoed in the order the client gave them.

// metaOpts are a meta command's parsed flags.
type metaOpts struct {
	seen    uint64 // bit per flag letter
	ret     []byte // return-flag letters in request order
	opaque  []byte // O token (owned copy)
	q       bool
	mode    byte
	casCmp  uint64 // C
	casNew  uint64 // E
	flags   uint32 // F
	ttl     int64  // T (seconds)
	viv     int64  // N (seconds)
	init    uint64 // J
	delta   uint64 // D
	recache int64  // R (seconds)
	hasTTL  bool
	hasViv  bool
}

func (o *metaOpts) has(ch byte) bool { return o.seen&flagBit(ch) != 0 }

func flagBit(ch byte) uint64 {
	switch {
	case ch >= 'a' && ch <= 'z':
		return 1 << (ch - 'a')
	case ch >= 'A' && ch <= 'Z':
		return 1 << (26 + ch - 'A')
	}
	return 0
}

// Flags each command accepts, and which of them are echoed back.
const (
	mgFlags = "bcfhklNOqRstuvT"
	msFlags = "bcCEFIkOqsSTM"
	mdFlags = "bCEIkOqT"
	maFlags = "bCENJDTMqOktcv"
	retFlag = "bcfhklOst"
)

// parseMeta parses flag tokens; on error it returns memcached's message.
func parseMeta(toks [][]byte, allowed string, o *metaOpts, opaqueBuf []byte) string {
	*o = metaOpts{ret: o.ret[:0], opaque: opaqueBuf[:0]}
	for _, t := range toks {
		ch := t[0]
		arg := t[1:]
		bit := flagBit(ch)
		if bit == 0 || !containsByte(allowed, ch) {
			return "CLIENT_ERROR invalid flag"
		}
		if o.seen&bit != 0 {
			return "CLIENT_ERROR duplicate flag"
		}
		o.seen |= bit
		var ok = true
		switch ch {
		case 'q':
			o.q = true
		case 'O':
			if len(arg) > 32 {
				return "CLIENT_ERROR opaque token too long"
			}
			o.opaque = append(o.opaque, arg...)
		case 'M':
			if len(arg) != 1 {
				ok = false
			} else {
				o.mode = arg[0]
			}
		case 'C':
			o.casCmp, ok = parseUint64(arg)
		case 'E':
			o.casNew, ok = parseUint64(arg)
		case 'F':
			o.flags, ok = parseFlags(arg)
		case 'T':
			o.ttl, ok = parseExptime(arg)
			o.hasTTL = true
		case 'N':
			o.viv, ok = parseExptime(arg)
			o.hasViv = true
		case 'R':
			o.recache, ok = parseInt32(arg)
		case 'J':
			o.init, ok = parseUint64(arg)
		case 'D':
			o.delta, ok = parseUint64(arg)
		}
		if !ok {
			return "CLIENT_ERROR bad token in command line format"
		}
		if containsByte(retFlag, ch) || ch == 'O' {
			o.ret = append(o.ret, ch)
		}
	}
	return ""
}

func containsByte(s string, ch byte) bool {
	for i := 0; i < len(s); i++ {
		if s[i] == ch {
			return true
		}
	}
	return false
}

// metaRet appends the return flags for an item (e may be nil on a miss:
// then only O and k are echoed).
func (c *conn) metaRet(o *metaOpts, key []byte, e *shard.Entry, cas uint64, now int64, clock uint32) {
	for _, ch := range o.ret {
		if e == nil && ch != 'O' && ch != 'k' {
			continue
		}
		switch ch {
		case 'O':
			c.out = append(c.out, " O"...)
			c.out = append(c.out, o.opaque...)
		case 'k':
			c.out = append(c.out, " k"...)
			c.out = append(c.out, key...)
		case 'b':
		case 'c':
			c.out = append(c.out, " c"...)
			c.out = strconv.AppendUint(c.out, cas, 10)
		case 'f':
			c.out = append(c.out, " f"...)
			c.out = strconv.AppendUint(c.out, uint64(e.MCFlags()), 10)
		case 's':
			c.out = append(c.out, " s"...)
			c.out = strconv.AppendInt(c.out, int64(len(e.Str())), 10)
		case 't':
			c.out = append(c.out, " t"...)
			c.out = strconv.AppendInt(c.out, ttlSeconds(e.ExpireAt(), now), 10)
		case 'h':
			if e.MCFetched() {
				c.out = append(c.out, " h1"...)
			} else {
				c.out = append(c.out, " h0"...)
			}
		case 'l':
			c.out = append(c.out, " l"...)
			c.out = strconv.AppendInt(c.out, shard.IdleSeconds(e.Atime(), clock), 10)
		}
	}
}

// ttlSeconds is the remaining time to live memcached reports (-1: none).
func ttlSeconds(exp, now int64) int64 {
	if exp == 0 {
		return -1
	}
	return (exp - now + 999) / 1000
}

// metaStart is the common start of mg and md (ma words its flag error
// differently): count the command, check
// the key and parse the flags into o. It answers the error itself and
// reports false when the command cannot go on.
func (c *conn) metaStart(t [][]byte, allowed string, o *metaOpts) bool {
	return c.metaStartWith(t, allowed, o, "")
}

// metaStartWith is metaStart answering flag errors with flagErr (md words
// every flag error one way) unless it is empty.
func (c *conn) metaStartWith(t [][]byte, allowed string, o *metaOpts, flagErr string) bool {
	c.s.stats.metaCmds.Add(1)
	if len(t) < 2 {
		c.reply("ERROR\r\n")
		return false
	}
	if !validKey(t[1]) {
		c.reply("CLIENT_ERROR bad command line format\r\n")
		return false
	}
	if msg := parseMeta(t[2:], allowed, o, nil); msg != "" {
		if flagErr != "" && (msg == "CLIENT_ERROR invalid flag" || msg == "CLIENT_ERROR duplicate flag") {
			msg = flagErr
		}
		c.metaErr(msg)
		return false
	}
	return true
}

func (c *conn) metaErr(msg string) {
	c.out = append(c.out, msg...)
	c.out = append(c.out, "\r\n"...)
}

// mg <key> <flag>*
//
// Recache coordination (memcached's anti-stampede): on a miss with N the
// item is created empty and the client wins the right to fill it (W); a
// client also wins when the item is stale (X, after md I or ms I) or its TTL
// is below R's. Only one client wins until the item is written again: the
// others see Z.
func (c *conn) cmdMetaGet(t [][]byte) {
	var o metaOpts
	if !c.metaStart(t, mgFlags, &o) {
		return
	}
	key := t[1]
	sh, h := c.lock(key)
	defer sh.Unlock()
	now := c.nowMs()
	c.s.stats.cmdGet.Add(1)
	e, ok := lookup(sh, h, key, now)
	win := false
	if !ok {
		c.s.stats.getMisses.Add(1)
		exp := exptimeToDeadline(o.viv, now)
		if !o.hasViv || exp == expNow {
			if !o.q {
				c.out = append(c.out, "EN"...)
				c.out = append(c.out, "\r\n"...)
			}
			return
		}
		if !c.admit(sh) {
			c.reply(outOfMemory)
			return
		}
		e = c.putItem(sh, h, key, shard.Value{ExpireAt: exp, MCWon: true})
		c.s.stats.totalItems.Add(1)
		win = true
	} else {
		c.s.stats.getHits.Add(1)
	}
	if o.hasTTL {
		c.s.stats.cmdTouch.Add(1)
		c.s.stats.touchHits.Add(1)
		if !c.setExpiry(sh, h, &e, exptimeToDeadline(o.ttl, now)) {
			if !o.q {
				c.reply("EN\r\n")
			}
			return
		}
	}
	if !e.HasMeta() && (o.has('c') || o.has('h') || o.has('l') || o.has('R')) {
		c.stampMeta(sh, h, &e)
	}
	wonBefore := e.MCWon() && !win
	if !wonBefore && !win && (e.MCStale() ||
		o.has('R') && e.ExpireAt() != 0 && ttlSeconds(e.ExpireAt(), now) < o.recache) {
		win = true
		sh.DB(db).NoteWin(&e)
	}
	var cas uint64
	if o.has('c') {
		cas = c.casOf(sh, h, &e)
	}
	if o.has('v') {
		c.out = append(c.out, "VA "...)
		c.out = strconv.AppendInt(c.out, int64(len(e.Str())), 10)
	} else {
		c.out = append(c.out, "HD"...)
	}
	c.metaRet(&o, key, &e, cas, now, sh.Clock())
	if wonBefore {
		c.out = append(c.out, " Z"...)
	}
	if e.MCStale() {
		c.out = append(c.out, " X"...)
	}
	if win {
		c.out = append(c.out, " W"...)
	}
	c.out = append(c.out, "\r\n"...)
	if o.has('v') {
		c.out = append(c.out, e.Str()...)
		c.out = append(c.out, "\r\n"...)
	}
	if !o.has('u') {
		noteAccess(sh, &e)
	}
}

// ms <key> <datalen> <flag>*
func (c *conn) cmdMetaSet(t [][]byte) {
	c.s.stats.metaCmds.Add(1)
	if len(t) < 3 {
		c.reply("ERROR\r\n")
		return
	}
	if !validKey(t[1]) {
		c.reply("CLIENT_ERROR bad command line format\r\n")
		return
	}
	vlen, ok := parseInt32(t[2])
	if !ok || vlen < 0 {
		c.reply("CLIENT_ERROR bad command line format\r\n")
		return
	}
	p := &c.pend
	msg := parseMeta(t[3:], msFlags, &p.opts, p.opts.opaque)
	if msg == "" {
		switch p.opts.mode {
		case 0, 'S', 's':
			p.mode = modeSet
		case 'E', 'e':
			p.mode = modeAdd
		case 'A', 'a':
			p.mode = modeAppend
		case 'P', 'p':
			p.mode = modePrepend
		case 'R', 'r':
			p.mode = modeReplace
		default:
			msg = "CLIENT_ERROR invalid mode for ms M token"
		}
	}
	if msg == "" && c.tooLarge(len(t[1]), int(vlen)) {
		c.s.stats.storeTooLarge.Add(1)
		msg = "SERVER_ERROR object too large for cache"
	}
	if msg != "" {
		c.metaErr(msg)
		c.swallow = int(vlen) + 2
		return
	}
	p.active, p.meta, p.n = true, true, int(vlen)
	p.key = append(p.key[:0], t[1]...)
	p.noreply = false
	p.exp = 0
	if p.opts.hasTTL {
		p.exp = exptimeToDeadline(p.opts.ttl, c.nowMs())
	}
}

func (c *conn) completeMetaSet(data []byte) {
	p := &c.pend
	o := &p.opts
	r := storeReq{mode: p.mode, key: p.key, val: data, flags: o.flags, exp: p.exp, cas: o.casCmp, newCAS: o.casNew,
		invalidate: o.has('I')}
	res := c.store(&r)
	switch res {
	case stored:
		if o.q {
			return
		}
		c.out = append(c.out, "HD"...)
	case notStored:
		c.out = append(c.out, "NS"...)
	case exists:
		c.out = append(c.out, "EX"...)
	case notFound:
		c.out = append(c.out, "NF"...)
	case noMemory:
		c.reply(outOfMemory)
		return
	}
	for _, ch := range o.ret {
		switch ch {
		case 'O':
			c.out = append(c.out, " O"...)
			c.out = append(c.out, o.opaque...)
		case 'k':
			c.out = append(c.out, " k"...)
			c.out = append(c.out, p.key...)
		case 'c':
			if res == stored {
				c.out = append(c.out, " c"...)
				c.out = strconv.AppendUint(c.out, r.outCAS, 10)
			}
		}
	}
	c.out = append(c.out, "\r\n"...)
}

// md <key> <flag>*
func (c *conn) cmdMetaDelete(t [][]byte) {
	var o metaOpts
	if !c.metaStartWith(t, mdFlags, &o, "CLIENT_ERROR invalid or duplicate flag") {
		return
	}
	key := t[1]
	res := func() storeResult {
		sh, h := c.lock(key)
		defer sh.Unlock()
		now := c.nowMs()
		e, ok := lookup(sh, h, key, now)
		if !ok {
			return notFound
		}
		if o.casCmp != 0 && peekCAS(&e) != o.casCmp {
			return exists
		}
		if o.has('I') {
			// Invalidate: keep the item but mark it stale with a new CAS
			// unique (or E's), and T's TTL; the next mg wins the recache.
			exp := e.ExpireAt()
			if o.hasTTL {
				exp = exptimeToDeadline(o.ttl, now)
			}
			if exp != expNow {
				c.scratch = append(c.scratch[:0], e.Str()...)
				c.putItem(sh, h, key, shard.Value{Str: c.scratch, ExpireAt: exp, MCFlags: e.MCFlags(),
					MCCAS: o.casNew, MCStale: true})
				return stored
			}
		}
		c.remove(sh, &e)
		return stored
	}()
	switch res {
	case stored:
		c.s.stats.deleteHits.Add(1)
		if o.q {
			return
		}
		c.out = append(c.out, "HD"...)
	case notFound:
		c.s.stats.deleteMisses.Add(1)
		c.out = append(c.out, "NF"...)
	case exists:
		c.out = append(c.out, "EX"...)
	}
	c.metaRet(&o, key, nil, 0, 0, 0)
	c.out = append(c.out, "\r\n"...)
}

// ma <key> <flag>*
func (c *conn) cmdMetaArith(t [][]byte) {
	c.s.stats.metaCmds.Add(1)
	if len(t) < 2 {
		c.reply("ERROR\r\n")
		return
	}
	if !validKey(t[1]) {
		c.reply("CLIENT_ERROR bad command line format\r\n")
		return
	}
	var o metaOpts
	if msg := parseMeta(t[2:], maFlags, &o, nil); msg != "" {
		c.metaErr("CLIENT_ERROR invalid or duplicate flag")
		return
	}
	a := arithReq{key: t[1], incr: true, delta: 1, cas: o.casCmp, initial: o.init}
	if o.has('D') {
		a.delta = o.delta
	}
	switch o.mode {
	case 0, 'I', 'i', '+':
	case 'D', 'd', '-':
		a.incr = false
	default:
		c.metaErr("CLIENT_ERROR invalid mode for ma M token")
		return
	}
	now := c.nowMs()
	if o.hasViv {
		a.vivify, a.vivifyExp = true, exptimeToDeadline(o.viv, now)
	}
	if o.hasTTL {
		a.touch, a.exp = true, exptimeToDeadline(o.ttl, now)
	}
	switch c.arith(&a) {
	case notFound:
		c.out = append(c.out, "NF"...)
	case notStored:
		c.reply("CLIENT_ERROR cannot increment or decrement non-numeric value\r\n")
		return
	case noMemory:
		c.reply(outOfMemory)
		return
	case exists:
		c.out = append(c.out, "EX"...)
	default:
		if o.q {
			return
		}
		if o.has('v') {
			c.out = append(c.out, "VA "...)
			c.out = strconv.AppendInt(c.out, int64(len(strconv.AppendUint(c.num2[:0], a.value, 10))), 10)
		} else {
			c.out = append(c.out, "HD"...)
		}
		for _, ch := range o.ret {
			switch ch {
			case 'O':
				c.out = append(c.out, " O"...)
				c.out = append(c.out, o.opaque...)
			case 'k':
				c.out = append(c.out, " k"...)
				c.out = append(c.out, a.key...)
			case 'c':
				c.out = append(c.out, " c"...)
				c.out = strconv.AppendUint(c.out, a.outCAS, 10)
			case 't':
				c.out = append(c.out, " t"...)
				c.out = strconv.AppendInt(c.out, ttlSeconds(a.outExp, now), 10)
			}
		}
		c.out = append(c.out, "\r\n"...)
		if o.has('v') {
			c.out = strconv.AppendUint(c.out, a.value, 10)
			c.out = append(c.out, "\r\n"...)
		}
		return
	}
	c.metaRet(&o, a.key, nil, 0, 0, 0)
	c.out = append(c.out, "\r\n"...)
}
