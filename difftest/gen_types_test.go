package difftest

import "strconv"

func (g *gen) strings() []string {
	k := g.key("str")
	switch g.n(24) {
	case 0:
		return []string{"GET", k}
	case 1, 2:
		args := []string{"SET", k, g.val()}
		for i := g.n(3); i > 0; i-- {
			switch g.n(9) {
			case 0:
				args = append(args, "EX", g.ttlSec())
			case 1:
				args = append(args, "PX", g.ttlMs())
			case 2:
				args = append(args, "EXAT", g.at(false))
			case 3:
				args = append(args, "PXAT", g.at(true))
			case 4:
				args = append(args, "NX")
			case 5:
				args = append(args, "XX")
			case 6:
				args = append(args, "KEEPTTL")
			case 7:
				args = append(args, "GET")
			default:
				args = append(args, g.pick("EX", "bogus", "PX"))
			}
		}
		return args
	case 3:
		return []string{"SETNX", k, g.val()}
	case 4:
		return []string{g.pick("SETEX", "PSETEX"), k, g.ttlSec(), g.val()}
	case 5:
		return []string{"GETSET", k, g.val()}
	case 6:
		return []string{"GETDEL", k}
	case 7:
		args := []string{"GETEX", k}
		switch g.n(6) {
		case 0:
			args = append(args, "EX", g.ttlSec())
		case 1:
			args = append(args, "PX", g.ttlMs())
		case 2:
			args = append(args, "EXAT", g.at(false))
		case 3:
			args = append(args, "PERSIST")
		case 4:
			args = append(args, "PXAT", g.at(true), g.pick("PERSIST", "EX"))
		}
		return args
	case 8:
		return append([]string{"MGET"}, g.keys("str", 1, 4)...)
	case 9, 10:
		args := []string{g.pick("MSET", "MSETNX")}
		for i := 1 + g.n(3); i > 0; i-- {
			args = append(args, g.key("str"), g.val())
		}
		if g.chance(0.05) {
			args = args[:len(args)-1]
		}
		return args
	case 11, 12:
		return []string{"APPEND", k, g.val()}
	case 13:
		return []string{"STRLEN", k}
	case 14:
		return []string{g.pick("GETRANGE", "SUBSTR"), k, g.idx(), g.idx()}
	case 15:
		// Offsets stay small: SETRANGE with a huge offset is issue 13 item
		// 10, fixed elsewhere.
		return []string{"SETRANGE", k, g.pick("0", "1", "3", "10", "-1", "100", "abc", "600"), g.pick(g.val(), "")}
	case 16, 17:
		return []string{g.pick("INCR", "DECR"), g.key("str")}
	case 18, 19:
		return []string{g.pick("INCRBY", "DECRBY"), g.key("str"), g.int()}
	case 20, 21:
		return []string{"INCRBYFLOAT", g.key("str"), g.float()}
	case 22:
		return []string{"SET", "n1", g.pick("10", "-5", "9223372036854775807", "-9223372036854775808", "1.5", "1e5", "0.1", "10.50", "-0", "3.0e2")}
	}
	return []string{"GET", k, "extra"}
}

func (g *gen) keyspace() []string {
	k := g.anyKey()
	switch g.n(22) {
	case 0:
		return append([]string{g.pick("DEL", "UNLINK")}, g.keys("any", 1, 3)...)
	case 1:
		return append([]string{g.pick("EXISTS", "TOUCH")}, g.keys("any", 1, 4)...)
	case 2, 3:
		return []string{"TYPE", k}
	case 4:
		return []string{g.pick("RENAME", "RENAMENX"), k, g.anyKey()}
	case 5:
		args := []string{"COPY", k, g.anyKey()}
		if g.chance(0.5) {
			args = append(args, "REPLACE")
		}
		return args
	case 6:
		return g.expireFlags([]string{"EXPIRE", k, g.ttlSec()})
	case 7:
		return g.expireFlags([]string{"PEXPIRE", k, g.ttlMs()})
	case 8:
		return g.expireFlags([]string{"EXPIREAT", k, g.at(false)})
	case 9:
		return g.expireFlags([]string{"PEXPIREAT", k, g.at(true)})
	case 10, 11:
		return []string{g.pick("TTL", "PTTL", "EXPIRETIME", "PEXPIRETIME"), k}
	case 12:
		return []string{"PERSIST", k}
	case 13:
		return []string{"KEYS", g.pattern()}
	case 14:
		return []string{"RANDOMKEY"}
	case 15, 16:
		return []string{"OBJECT", "ENCODING", k}
	case 17:
		return []string{"DUMP", k}
	case 18:
		return []string{"DBSIZE"}
	case 19:
		if g.chance(0.5) {
			return []string{"OBJECT", g.pick("REFCOUNT", "FREQ", "IDLETIME"), k}
		}
		return []string{"OBJECT", g.pick("REFCOUNT", "bogus", "ENCODING")}
	case 20:
		return []string{"RESTORE", g.anyKey(), "0", g.pick("garbage", "", "\x00\x01\x02\x03\x04\x05\x06\x07\x08\x09\x0a")}
	}
	return []string{"EXISTS"}
}

func (g *gen) lists() []string {
	k := g.key("list")
	switch g.n(26) {
	case 0, 1, 2:
		return append([]string{g.pick("LPUSH", "RPUSH")}, append([]string{k}, g.members(1, 4)...)...)
	case 3:
		return append([]string{g.pick("LPUSHX", "RPUSHX")}, append([]string{k}, g.members(1, 3)...)...)
	case 4, 5:
		args := []string{g.pick("LPOP", "RPOP"), k}
		if g.chance(0.5) {
			args = append(args, g.cnt())
		}
		return args
	case 6:
		return []string{"LLEN", k}
	case 7, 8:
		return []string{"LRANGE", k, g.idx(), g.idx()}
	case 9:
		return []string{"LINDEX", k, g.idx()}
	case 10:
		return []string{"LSET", k, g.idx(), g.member()}
	case 11:
		return []string{"LINSERT", k, g.pick("BEFORE", "AFTER", "middle"), g.member(), g.member()}
	case 12:
		return []string{"LREM", k, g.pick("0", "1", "-1", "2", "-2", "abc"), g.member()}
	case 13:
		return []string{"LTRIM", k, g.idx(), g.idx()}
	case 14, 15:
		args := []string{"LPOS", k, g.member()}
		for i := g.n(3); i > 0; i-- {
			switch g.n(3) {
			case 0:
				args = append(args, "RANK", g.pick("1", "-1", "2", "-2", "0", "-9223372036854775808", "abc"))
			case 1:
				args = append(args, "COUNT", g.pick("0", "1", "2", "-1", "abc"))
			case 2:
				args = append(args, "MAXLEN", g.pick("0", "1", "3", "-1"))
			}
		}
		return args
	case 16, 17:
		return []string{"LMOVE", k, g.key("list"), g.pick("LEFT", "RIGHT"), g.pick("LEFT", "RIGHT", "UP")}
	case 18:
		return []string{"RPOPLPUSH", k, g.key("list")}
	case 19, 20:
		ks := g.keys("list", 1, 3)
		n := strconv.Itoa(len(ks))
		if g.chance(0.1) {
			n = g.pick("0", "-1", "5", "abc")
		}
		args := append([]string{"LMPOP", n}, ks...)
		args = append(args, g.pick("LEFT", "RIGHT", "MIDDLE"))
		if g.chance(0.5) {
			args = append(args, "COUNT", g.cnt())
		}
		return args
	case 21:
		return []string{"OBJECT", "ENCODING", k}
	case 22:
		return []string{"RPUSH", "dst", g.member()}
	case 23:
		return []string{"LRANGE", "dst", "0", "-1"}
	}
	return []string{"LPOP"}
}

func (g *gen) hashes() []string {
	k := g.key("hash")
	switch g.n(22) {
	case 0, 1, 2:
		args := []string{g.pick("HSET", "HSET", "HMSET"), k}
		for i := 1 + g.n(3); i > 0; i-- {
			args = append(args, g.field(), g.val())
		}
		if g.chance(0.05) {
			args = args[:len(args)-1]
		}
		if g.chance(0.02) {
			for i := 0; i < 130; i++ {
				args = append(args, "f"+strconv.Itoa(i), "v")
			}
		}
		return args
	case 3:
		return []string{"HSETNX", k, g.field(), g.val()}
	case 4:
		return []string{"HGET", k, g.field()}
	case 5:
		return []string{"HMGET", k, g.field(), g.field()}
	case 6:
		return []string{"HDEL", k, g.field(), g.field()}
	case 7:
		return []string{"HLEN", k}
	case 8:
		return []string{"HSTRLEN", k, g.field()}
	case 9:
		return []string{"HEXISTS", k, g.field()}
	case 10:
		return []string{"HKEYS", k}
	case 11:
		return []string{"HVALS", k}
	case 12, 13:
		return []string{"HGETALL", k}
	case 14, 15:
		return []string{"HINCRBY", k, g.field(), g.int()}
	case 16, 17:
		return []string{"HINCRBYFLOAT", k, g.field(), g.float()}
	case 18:
		args := []string{"HRANDFIELD", k}
		if g.chance(0.7) {
			args = append(args, g.rcnt())
			if g.chance(0.5) {
				args = append(args, g.pick("WITHVALUES", "WITHVALUES", "bogus"))
			}
		}
		return args
	case 19:
		return []string{"OBJECT", "ENCODING", k}
	}
	return []string{"HGET", k}
}

func (g *gen) sets() []string {
	k := g.key("set")
	switch g.n(24) {
	case 0, 1, 2:
		return append([]string{"SADD", k}, g.members(1, 4)...)
	case 3:
		return append([]string{"SREM", k}, g.members(1, 3)...)
	case 4:
		return []string{"SCARD", k}
	case 5:
		return []string{"SISMEMBER", k, g.member()}
	case 6:
		return []string{"SMISMEMBER", k, g.member(), g.member()}
	case 7, 8:
		return []string{"SMEMBERS", k}
	case 9:
		if g.chance(0.5) {
			return []string{"SPOP", k, g.pick("1000", "0", "1000", "-1", "abc")}
		}
		if g.chance(0.5) {
			return []string{"SPOP", k}
		}
		return []string{"SPOP", k, g.rcnt()}
	case 10:
		args := []string{"SRANDMEMBER", k}
		if g.chance(0.7) {
			args = append(args, g.rcnt())
		}
		return args
	case 11:
		return []string{"SMOVE", k, g.key("set"), g.member()}
	case 12, 13:
		return append([]string{g.pick("SINTER", "SUNION", "SDIFF")}, g.keys("set", 1, 3)...)
	case 14, 15:
		return append([]string{g.pick("SINTERSTORE", "SUNIONSTORE", "SDIFFSTORE"), g.key("set")}, g.keys("set", 1, 3)...)
	case 16:
		ks := g.keys("set", 1, 3)
		n := strconv.Itoa(len(ks))
		if g.chance(0.1) {
			n = g.pick("0", "-1", "5", "abc")
		}
		args := append([]string{"SINTERCARD", n}, ks...)
		if g.chance(0.4) {
			args = append(args, "LIMIT", g.cnt())
		}
		return args
	case 17, 18:
		return []string{"OBJECT", "ENCODING", k}
	}
	return []string{"SADD", k}
}

func (g *gen) zsets() []string {
	k := g.key("zset")
	switch g.n(34) {
	case 0, 1, 2, 3:
		args := []string{"ZADD", k}
		for i := g.n(3); i > 0; i-- {
			args = append(args, g.pick("NX", "XX", "GT", "LT", "CH", "INCR"))
		}
		for i := 1 + g.n(3); i > 0; i-- {
			args = append(args, g.score(), g.member())
		}
		if g.chance(0.05) {
			args = args[:len(args)-1]
		}
		if g.chance(0.02) {
			for i := 0; i < 130; i++ {
				args = append(args, strconv.Itoa(i%7), "m"+strconv.Itoa(i))
			}
		}
		return args
	case 4:
		return []string{"ZINCRBY", k, g.score(), g.member()}
	case 5:
		return append([]string{"ZREM", k}, g.members(1, 3)...)
	case 6:
		return []string{"ZCARD", k}
	case 7:
		return []string{"ZCOUNT", k, g.rangeScore(), g.rangeScore()}
	case 8:
		return []string{"ZLEXCOUNT", g.lexKey(), g.lex(), g.lex()}
	case 9:
		return []string{"ZSCORE", k, g.member()}
	case 10:
		return []string{"ZMSCORE", k, g.member(), g.member()}
	case 11:
		return []string{g.pick("ZRANK", "ZREVRANK"), k, g.member()}
	case 12, 13, 14:
		var args []string
		switch g.n(3) {
		case 0:
			args = []string{"ZRANGE", k, g.idx(), g.idx()}
		case 1:
			args = []string{"ZRANGE", k, g.rangeScore(), g.rangeScore(), "BYSCORE"}
		default:
			args = []string{"ZRANGE", g.lexKey(), g.lex(), g.lex(), "BYLEX"}
		}
		if g.chance(0.3) {
			args = append(args, "REV")
		}
		if g.chance(0.3) {
			args = append(args, "LIMIT", g.idx(), g.idx())
		}
		if g.chance(0.4) {
			args = append(args, "WITHSCORES")
		}
		return args
	case 15:
		args := []string{g.pick("ZRANGEBYSCORE", "ZREVRANGEBYSCORE"), k, g.rangeScore(), g.rangeScore()}
		if g.chance(0.4) {
			args = append(args, "WITHSCORES")
		}
		if g.chance(0.3) {
			args = append(args, "LIMIT", g.idx(), g.idx())
		}
		return args
	case 16:
		args := []string{g.pick("ZRANGEBYLEX", "ZREVRANGEBYLEX"), g.lexKey(), g.lex(), g.lex()}
		if g.chance(0.3) {
			args = append(args, "LIMIT", g.idx(), g.idx())
		}
		return args
	case 17:
		args := []string{"ZREVRANGE", k, g.idx(), g.idx()}
		if g.chance(0.4) {
			args = append(args, "WITHSCORES")
		}
		return args
	case 18:
		args := []string{"ZRANGESTORE", g.key("zset"), k, g.rangeScore(), g.rangeScore()}
		if g.chance(0.5) {
			args = append(args, "BYSCORE")
		}
		return args
	case 19:
		return []string{"ZREMRANGEBYRANK", k, g.idx(), g.idx()}
	case 20:
		return []string{"ZREMRANGEBYSCORE", k, g.rangeScore(), g.rangeScore()}
	case 21:
		return []string{"ZREMRANGEBYLEX", g.lexKey(), g.lex(), g.lex()}
	case 22, 23:
		args := []string{g.pick("ZPOPMIN", "ZPOPMAX"), k}
		if g.chance(0.5) {
			args = append(args, g.cnt())
		}
		return args
	case 24:
		ks := g.keys("zset", 1, 3)
		n := strconv.Itoa(len(ks))
		if g.chance(0.1) {
			n = g.pick("0", "-1", "5", "abc")
		}
		args := append([]string{"ZMPOP", n}, ks...)
		args = append(args, g.pick("MIN", "MAX", "MID"))
		if g.chance(0.5) {
			args = append(args, "COUNT", g.cnt())
		}
		return args
	case 25:
		args := []string{"ZRANDMEMBER", k}
		if g.chance(0.7) {
			args = append(args, g.rcnt())
			if g.chance(0.5) {
				args = append(args, "WITHSCORES")
			}
		}
		return args
	case 26, 27, 28, 29:
		ks := g.keys("zset", 1, 3)
		if g.chance(0.3) {
			ks[0] = g.key("set") // sets take part with score 1
		}
		n := strconv.Itoa(len(ks))
		if g.chance(0.05) {
			n = g.pick("0", "-1", "5", "abc")
		}
		var args []string
		op := g.pick("ZUNION", "ZINTER", "ZDIFF", "ZUNIONSTORE", "ZINTERSTORE", "ZDIFFSTORE", "ZINTERCARD")
		switch op {
		case "ZUNIONSTORE", "ZINTERSTORE", "ZDIFFSTORE":
			args = append([]string{op, g.key("zset"), n}, ks...)
		default:
			args = append([]string{op, n}, ks...)
		}
		if op == "ZINTERCARD" {
			if g.chance(0.4) {
				args = append(args, "LIMIT", g.cnt())
			}
			return args
		}
		if op != "ZDIFF" && op != "ZDIFFSTORE" {
			if g.chance(0.3) {
				args = append(args, "WEIGHTS")
				for range ks {
					args = append(args, g.pick("1", "2", "-1", "0", "1.5", "inf", "abc"))
				}
			}
			if g.chance(0.3) {
				args = append(args, "AGGREGATE", g.pick("SUM", "MIN", "MAX", "AVG"))
			}
		}
		if (op == "ZUNION" || op == "ZINTER" || op == "ZDIFF") && g.chance(0.5) {
			args = append(args, "WITHSCORES")
		}
		return args
	case 30:
		return []string{"OBJECT", "ENCODING", k}
	case 31, 32:
		// All of zl's scores are 0: lex ranges are defined only then.
		args := []string{"ZADD", "zl"}
		for _, m := range g.members(1, 4) {
			args = append(args, "0", m)
		}
		return args
	}
	return []string{"ZRANGE", k, "0", "-1", "WITHSCORES"}
}

// streamID is mostly the next explicit ID, sometimes one already used.
func (g *gen) streamID() string {
	if g.chance(0.1) {
		return g.pick("0-0", "0-1", "1-*", "abc", "5-", "-1", "18446744073709551615-18446744073709551615", "1")
	}
	g.lastMS += int64(g.n(3))
	if g.chance(0.3) {
		return strconv.FormatInt(g.lastMS, 10) + "-*"
	}
	return strconv.FormatInt(g.lastMS, 10) + "-" + strconv.Itoa(g.n(3))
}

func (g *gen) rangeID() string {
	if g.chance(0.5) {
		return strconv.FormatInt(int64(g.n(int(g.lastMS)+2)), 10)
	}
	return g.pick("-", "+", "0", "(0-1", "(1", "0-0", "abc", "1-2", "(+", "18446744073709551615")
}

func (g *gen) streams() []string {
	k := g.key("strm")
	grp := g.pick("g1", "g1", "g2")
	consumer := g.pick("c1", "c2")
	switch g.n(30) {
	case 0, 1, 2, 3, 4:
		args := []string{"XADD", k}
		if g.chance(0.1) {
			args = append(args, "NOMKSTREAM")
		}
		if g.chance(0.15) {
			args = append(args, g.pick("MAXLEN", "MINID"), g.pick("=", "~", "3"), g.pick("2", "5", "0", "-1", "1-0"))
			if g.chance(0.2) {
				args = append(args, "LIMIT", g.pick("1", "0", "10"))
			}
		}
		args = append(args, g.streamID())
		for i := 1 + g.n(2); i > 0; i-- {
			args = append(args, g.field(), g.val())
		}
		if g.chance(0.03) {
			args = args[:len(args)-1]
		}
		return args
	case 5:
		return []string{"XLEN", k}
	case 6, 7:
		args := []string{g.pick("XRANGE", "XREVRANGE"), k, g.rangeID(), g.rangeID()}
		if g.chance(0.3) {
			args = append(args, "COUNT", g.cnt())
		}
		return args
	case 8:
		return []string{"XDEL", k, g.rangeID(), g.rangeID()}
	case 9:
		args := []string{"XTRIM", k, g.pick("MAXLEN", "MINID"), g.pick("=", "~", "2")}
		args = append(args, g.pick("2", "0", "1", strconv.FormatInt(g.lastMS, 10)))
		return args
	case 10, 11:
		args := []string{"XGROUP", "CREATE", k, grp, g.pick("$", "0", "0-0", "1", "abc")}
		if g.chance(0.3) {
			args = append(args, "MKSTREAM")
		}
		if g.chance(0.2) {
			args = append(args, "ENTRIESREAD", g.pick("0", "1", "-1", "100"))
		}
		return args
	case 12:
		return []string{"XGROUP", "SETID", k, grp, g.pick("$", "0", "1-1")}
	case 13:
		return []string{"XGROUP", g.pick("CREATECONSUMER", "DELCONSUMER"), k, grp, consumer}
	case 14:
		return []string{"XGROUP", "DESTROY", k, grp}
	case 15, 16, 17:
		args := []string{"XREADGROUP", "GROUP", grp, consumer}
		if g.chance(0.4) {
			args = append(args, "COUNT", g.cnt())
		}
		if g.chance(0.2) {
			args = append(args, "NOACK")
		}
		args = append(args, "STREAMS", k, g.pick(">", ">", "0", "1-1"))
		return args
	case 18:
		args := []string{"XREAD"}
		if g.chance(0.4) {
			args = append(args, "COUNT", g.cnt())
		}
		return append(args, "STREAMS", k, g.pick("0", "0-0", "1", "$", "abc"))
	case 19:
		return []string{"XACK", k, grp, g.rangeID(), g.rangeID()}
	case 20, 21:
		if g.chance(0.5) {
			return []string{"XPENDING", k, grp}
		}
		args := []string{"XPENDING", k, grp}
		if g.chance(0.2) {
			args = append(args, "IDLE", g.pick("0", "100000"))
		}
		args = append(args, g.pick("-", "0"), g.pick("+", "5"), g.pick("10", "1", "0", "-1"))
		if g.chance(0.3) {
			args = append(args, consumer)
		}
		return args
	case 22:
		args := []string{"XCLAIM", k, grp, consumer, g.pick("0", "0", "100000", "-1"), g.rangeID()}
		if g.chance(0.3) {
			args = append(args, "JUSTID")
		}
		if g.chance(0.2) {
			args = append(args, "RETRYCOUNT", g.pick("5", "-1"))
		}
		if g.chance(0.1) {
			args = append(args, "FORCE")
		}
		return args
	case 23:
		args := []string{"XAUTOCLAIM", k, grp, consumer, g.pick("0", "100000"), g.pick("0", "0-0", "1-1", "abc")}
		if g.chance(0.4) {
			args = append(args, "COUNT", g.pick("1", "2", "100", "0", "-1"))
		}
		if g.chance(0.3) {
			args = append(args, "JUSTID")
		}
		return args
	case 24, 25:
		switch g.n(3) {
		case 0:
			return []string{"XINFO", "GROUPS", k}
		case 1:
			return []string{"XINFO", "CONSUMERS", k, grp}
		}
		if g.chance(0.4) {
			args := []string{"XINFO", "STREAM", k, "FULL"}
			if g.chance(0.5) {
				args = append(args, "COUNT", g.pick("0", "1", "2", "-1", "abc"))
			}
			return args
		}
		return []string{"XINFO", "STREAM", k}
	case 26:
		return []string{"XSETID", k, g.pick("0-0", "100-0", strconv.FormatInt(g.lastMS, 10)+"-5", "abc")}
	}
	return []string{"XADD", k}
}

// blocking: the blocking pops and XREAD(GROUP) BLOCK. sync: with a timeout
// of a few milliseconds (or invalid), read at once; otherwise with no
// timeout (parked until served or CLIENT UNBLOCK).
func (g *gen) blocking(sync bool) []string {
	t := "0"
	ms := "0"
	if sync {
		t = g.pick("0.01", "0.02", "0.005", "-1", "abc", "0.001")
		ms = g.pick("10", "5", "-1", "abc")
	}
	switch g.n(11) {
	case 0, 1:
		return append(append([]string{g.pick("BLPOP", "BRPOP")}, g.keys("list", 1, 2)...), t)
	case 2:
		// Destination "dst" is always a list (see keyFamilies).
		return []string{"BLMOVE", g.key("list"), "dst", g.pick("LEFT", "RIGHT"), g.pick("LEFT", "RIGHT"), t}
	case 3:
		return []string{"BRPOPLPUSH", g.key("list"), "dst", t}
	case 4:
		ks := g.keys("list", 1, 2)
		args := append([]string{"BLMPOP", t, strconv.Itoa(len(ks))}, ks...)
		args = append(args, g.pick("LEFT", "RIGHT"))
		if g.chance(0.4) {
			args = append(args, "COUNT", g.pick("1", "2", "10"))
		}
		return args
	case 5, 6:
		return append(append([]string{g.pick("BZPOPMIN", "BZPOPMAX")}, g.keys("zset", 1, 2)...), t)
	case 7:
		ks := g.keys("zset", 1, 2)
		args := append([]string{"BZMPOP", t, strconv.Itoa(len(ks))}, ks...)
		args = append(args, g.pick("MIN", "MAX"))
		if g.chance(0.4) {
			args = append(args, "COUNT", g.pick("1", "2", "10"))
		}
		return args
	case 8:
		args := []string{"XREAD", "BLOCK", ms}
		if g.chance(0.3) {
			args = append(args, "COUNT", "2")
		}
		return append(args, "STREAMS", g.key("strm"), g.pick("$", "$", "0", "1"))
	}
	args := []string{"XREADGROUP", "GROUP", g.pick("g1", "g2"), g.pick("c1", "c2"), "BLOCK", ms}
	if g.chance(0.3) {
		args = append(args, "COUNT", "2")
	}
	return append(args, "STREAMS", g.key("strm"), g.pick(">", ">", "0"))
}

// scan: SCAN or one of the type scans from cursor 0, or with a bad cursor.
func (g *gen) scan() []string {
	var args []string
	switch g.n(4) {
	case 0:
		args = []string{"SCAN", "0"}
	case 1:
		args = []string{"SSCAN", g.key("set"), "0"}
	case 2:
		args = []string{"HSCAN", g.key("hash"), "0"}
	default:
		args = []string{"ZSCAN", g.key("zset"), "0"}
	}
	if g.chance(0.05) {
		args[len(args)-1] = g.pick("abc", "", "+0", "18446744073709551616") // not "-1": cursors are each server's own
	}
	if g.chance(0.4) {
		args = append(args, "MATCH", g.pattern())
	}
	if g.chance(0.4) {
		args = append(args, "COUNT", g.pick("1", "2", "10", "1000", "0", "-1", "abc"))
	}
	if args[0] == "SCAN" && g.chance(0.3) {
		args = append(args, "TYPE", g.pick("string", "list", "hash", "set", "zset", "stream", "bogus"))
	}
	return args
}

// lexKey is the key of the lex range commands: "zl", whose members all
// score 0 (Redis leaves lex ranges over different scores undefined), or
// now and then a key of another type or none.
func (g *gen) lexKey() string {
	if g.chance(0.9) {
		return "zl"
	}
	return g.pick("s1", "l1", "nokey")
}
