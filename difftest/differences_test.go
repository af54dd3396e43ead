package difftest

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
)

// This file is the one place that lists where Damselfly's replies may
// differ from Redis 7.0's by design, each with its reason. Everything not
// listed here is compared byte for byte.
//
//  1. Order: SMEMBERS, SINTER, SUNION, SDIFF, KEYS, HKEYS, HVALS and
//     HGETALL (and HELLO 3's map and set forms of them) answer in the
//     order of each server's hash table, which Redis leaves unspecified:
//     compared as sorted lists. SCAN, SSCAN, HSCAN and ZSCAN are iterated
//     to cursor 0 and the union compared (runner.scan): cursors are each
//     server's own and Redis may return an element twice.
//  2. Randomness: RANDOMKEY, SRANDMEMBER, HRANDFIELD, ZRANDMEMBER and SPOP
//     pick at random: compared by shape (types, lengths, nulls, errors
//     exactly), and a random SPOP is followed by deleting its key on both
//     sides (stResync) so the states stay equal. With a count of 1000
//     (more than any generated collection) they return every element,
//     compared as a sorted list.
//  3. Time: the two servers see a relative TTL a few microseconds apart,
//     so TTL and EXPIRETIME may differ by 1 s at a boundary and PTTL and
//     PEXPIRETIME by a few ms: compared within 1 s / 100 ms. OBJECT
//     IDLETIME is compared by shape. XPENDING's
//     and XINFO CONSUMERS' idle times are milliseconds since a delivery:
//     compared as "idle"; so are XINFO STREAM FULL's seen and delivery
//     times. Short TTLs are followed by a sleep past them and
//     a read of the key (gen.shortExpiry): until a key is reclaimed, DBSIZE
//     counts it in Redis as in Damselfly, and the two reclaim at different
//     moments. Blocking commands block either for a few ms (then answer
//     nil on both) or with no timeout until CLIENT UNBLOCK (runner.block,
//     runner.unblock), never on a race between a timeout and a push.
//  4. DUMP payloads are compared by the type their RDB type byte names
//     (string, list, set, ...), not byte for byte: a set or hash in a hash
//     table lists its elements in the table's order; Redis's LZF
//     compressor (liblzf) decides differently from Damselfly's when
//     compression saves only a few bytes; and Damselfly's RDB writer
//     picks a collection's encoding from its contents under the default
//     limits, where Redis writes the live encoding (after CONFIG SET of
//     smaller limits Damselfly may write a listpack where Redis writes a
//     hash table). Both payloads are valid RDB that either server loads;
//     RESTORE round trips are tested in the snapshot package.
//  5. OBJECT ENCODING of a string: Redis reports "raw" for a string APPEND
//     or SETRANGE has changed in place, whatever its content; Damselfly
//     keeps no such flag and names the encoding from the content (int,
//     embstr up to 44 bytes, raw). The three compare equal; the other
//     types' encodings must match. For the same reason OBJECT REFCOUNT
//     (INT_MAX for the shared integers 0..9999, but 1 for such a number
//     APPEND made) is compared by shape; server/testdata/difftest.txt
//     checks it for SET and INCR.
//  6. Identity: HELLO names the server and its version; it is sent only at
//     the start of a sequence and not compared. CLIENT ID, INFO, TIME and
//     the like are not generated. XADD with "*" is not generated (IDs
//     from the clock); explicit and "ms-*" IDs are.
//
// Not generated because Redis leaves it undefined: lex ranges
// (ZRANGEBYLEX, ZLEXCOUNT, ZREMRANGEBYLEX, ZRANGE BYLEX) over a sorted
// set whose scores differ; they go to "zl", whose scores are all 0.
//
// Known, not fixed here: Redis fails a blocked XREADGROUP with
// "-UNBLOCKED the stream key no longer exists" whenever its stream goes
// (DEL, UNLINK, an overwrite by SET or RENAME, expiry, FLUSHDB, SWAPDB);
// Damselfly does it for DEL and UNLINK only and leaves the others blocked.
// runner.checkParked accepts that case and releases Damselfly's client.
//
// Known, not fixed here: Redis 7 checks a subcommand's arity when MULTI
// queues it ("OBJECT REFCOUNT" is refused and the transaction aborts);
// Damselfly's command table has no subcommand arities, so it queues it
// and answers the error in EXEC. Not generated inside MULTI.
//
// Known bugs being fixed on other branches (issue 13) are not generated:
// glob patterns with many stars (at most two here), SETRANGE with huge
// offsets, MULTI with SAVE/SHUTDOWN/REPLICAOF/DEBUG, EVAL, and
// BLMOVE/BRPOPLPUSH into a destination of another type ("dst" is always a
// list). Neither are commands Damselfly does not implement (bitmaps,
// HyperLogLog, GEO, SORT, LCS, FUNCTION...).

// normalize renders a reply to compare, applying the differences above
// for the command in args.
func normalize(args []string, v value) string {
	if v.kind == '-' || v.kind == '!' {
		return v.render()
	}
	name := strings.ToLower(args[0])
	all := len(args) > 2 && args[2] == "1000"
	switch name {
	case "smembers", "sinter", "sunion", "sdiff", "keys", "hkeys", "hvals":
		return sorted(v).render()
	case "hgetall":
		return sortedPairs(v).render()
	case "randomkey":
		return shape(v).render()
	case "spop", "srandmember":
		if all {
			return sorted(v).render()
		}
		return shape(v).render()
	case "hrandfield", "zrandmember":
		if all {
			if len(args) > 3 {
				return sortedPairs(v).render()
			}
			return sorted(v).render()
		}
		return shape(v).render()
	case "dump":
		if (v.kind == '$' || v.kind == '=') && len(v.str) > 0 {
			return "DUMP of a " + rdbFamily(v.str[0])
		}
	case "object":
		if v.kind == '$' && (v.str == "raw" || v.str == "embstr" || v.str == "int") {
			return "(a string encoding)"
		}
		if len(args) > 1 && (strings.EqualFold(args[1], "idletime") || strings.EqualFold(args[1], "refcount")) {
			return shape(v).render()
		}
	case "xpending":
		if len(args) > 3 && v.kind == '*' {
			for i := range v.elems {
				if e := v.elems[i]; e.kind == '*' && len(e.elems) == 4 {
					e.elems[2] = value{kind: '+', str: "idle"}
				}
			}
		}
	case "xinfo":
		if len(args) > 3 && strings.EqualFold(args[1], "stream") {
			fullTimes(&v)
		}
		if len(args) > 1 && strings.EqualFold(args[1], "consumers") {
			for i := range v.elems {
				e := v.elems[i]
				for j := 0; j+1 < len(e.elems); j += 2 {
					if e.elems[j].str == "idle" {
						e.elems[j+1] = value{kind: '+', str: "idle"}
					}
				}
			}
		}
	}
	return v.render()
}

// closeTimes: TTL-like integer replies within their tolerance (1 s, or
// 100 ms for the P forms) count as equal.
func closeTimes(args []string, a, b value) bool {
	name := strings.ToLower(args[0])
	switch name {
	case "ttl", "expiretime", "pttl", "pexpiretime":
	default:
		return false
	}
	if a.kind != ':' || b.kind != ':' {
		return false
	}
	x, err1 := strconv.ParseInt(a.str, 10, 64)
	y, err2 := strconv.ParseInt(b.str, 10, 64)
	if err1 != nil || err2 != nil || x < 0 || y < 0 {
		return false
	}
	tol := int64(1)
	if name[0] == 'p' {
		tol = 100
	}
	return x-y <= tol && y-x <= tol
}

// sorted returns an aggregate with its elements in a fixed order.
func sorted(v value) value {
	if v.elems == nil {
		return v
	}
	out := v
	out.elems = append([]value(nil), v.elems...)
	sort.Slice(out.elems, func(i, j int) bool { return out.elems[i].render() < out.elems[j].render() })
	return out
}

// sortedPairs orders a flat field/value array or a map by pairs; an array
// of [field value] arrays (RESP3 HRANDFIELD) by element.
func sortedPairs(v value) value {
	if len(v.elems) == 0 || v.elems[0].kind == '*' {
		return sorted(v)
	}
	type pair struct{ k, v value }
	ps := make([]pair, 0, len(v.elems)/2)
	for i := 0; i+1 < len(v.elems); i += 2 {
		ps = append(ps, pair{v.elems[i], v.elems[i+1]})
	}
	sort.Slice(ps, func(i, j int) bool {
		return ps[i].k.render()+"\x00"+ps[i].v.render() < ps[j].k.render()+"\x00"+ps[j].v.render()
	})
	out := v
	out.elems = nil
	for _, p := range ps {
		out.elems = append(out.elems, p.k, p.v)
	}
	return out
}

// shape keeps a reply's types, lengths and nulls but not its contents.
func shape(v value) value {
	out := value{kind: v.kind, null: v.null}
	switch v.kind {
	case '$', '=', '+', ',', ':':
		if !v.null {
			out.str = "?"
		}
	}
	for _, e := range v.elems {
		out.elems = append(out.elems, shape(e))
	}
	return out
}

// fullTimes replaces the times in XINFO STREAM FULL: a consumer's
// seen-time and the delivery time of each pending entry ([id consumer
// time count] in a group's list, [id time count] in a consumer's).
func fullTimes(v *value) {
	for i := 0; i+1 < len(v.elems); i++ {
		k, next := v.elems[i], &v.elems[i+1]
		if k.kind != '$' && k.kind != '+' {
			continue
		}
		switch k.str {
		case "seen-time", "active-time":
			*next = value{kind: '+', str: "time"}
		case "pending":
			for j := range next.elems {
				if e := &next.elems[j]; len(e.elems) == 4 {
					e.elems[2] = value{kind: '+', str: "time"}
				} else if len(e.elems) == 3 {
					e.elems[1] = value{kind: '+', str: "time"}
				}
			}
		}
	}
	for i := range v.elems {
		fullTimes(&v.elems[i])
	}
}

// rdbFamily names the data type of an RDB object type byte.
func rdbFamily(t byte) string {
	switch t {
	case 0:
		return "string"
	case 1, 10, 14, 18:
		return "list"
	case 2, 11, 20:
		return "set"
	case 3, 5, 12, 17:
		return "zset"
	case 4, 9, 13, 16:
		return "hash"
	case 15, 19, 21:
		return "stream"
	}
	return fmt.Sprintf("RDB type %d", t)
}
