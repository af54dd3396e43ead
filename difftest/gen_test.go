package difftest

import (
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
)

// stepKind says how the runner carries out a step.
type stepKind int

const (
	stCmd     stepKind = iota // send, read both replies, compare
	stBlock                   // a blocking command that may park its connection
	stScan                    // a whole SCAN/SSCAN/HSCAN/ZSCAN iteration from cursor 0
	stSleep                   // wait ms (lets short TTLs pass)
	stUnblock                 // CLIENT UNBLOCK the connection (from the control connection)
	stResync                  // DEL a key on both sides without comparing (after a random pop)
	stHello                   // HELLO 3 at the start: the reply names the server, so it is not compared
)

// step is one action of a sequence, on connection conn (0-based).
type step struct {
	kind stepKind
	conn int
	args []string
	ms   int
}

func (s step) String() string {
	c := fmt.Sprintf("c%d", s.conn+1)
	switch s.kind {
	case stSleep:
		return fmt.Sprintf("~ sleep %dms", s.ms)
	case stUnblock:
		return strings.TrimSpace(c + " ~ CLIENT UNBLOCK <" + c + "> " + strings.Join(s.args, " "))
	case stResync:
		return c + " ~ DEL " + quoteArg(s.args[0]) + " (both sides, not compared)"
	case stHello:
		return c + " ~ HELLO 3 (not compared)"
	}
	var sb strings.Builder
	sb.WriteString(c)
	switch s.kind {
	case stBlock:
		sb.WriteString(" >& ") // may park: the reply is read later
	case stScan:
		sb.WriteString(" >* ") // iterated to cursor 0, results compared as a set
	default:
		sb.WriteString(" > ")
	}
	for i, a := range s.args {
		if i > 0 {
			sb.WriteByte(' ')
		}
		sb.WriteString(quoteArg(a))
	}
	return sb.String()
}

// quoteArg writes an argument the way the testdata scripts read it.
func quoteArg(a string) string {
	if a == "" {
		return `""`
	}
	for _, ch := range []byte(a) {
		if ch <= ' ' || ch > '~' || ch == '"' || ch == '\'' {
			return strconv.Quote(a)
		}
	}
	return a
}

// seqConfig shapes a sequence.
type seqConfig struct {
	conns int // client connections
	steps int // about this many steps
}

// gen builds one random sequence from a seed.
type gen struct {
	r       *rand.Rand
	cfg     seqConfig
	steps   []step
	lastMS  int64 // last stream ID's milliseconds, so explicit IDs mostly grow
	pending map[int]bool
	resync  []string    // keys to DEL after the current transaction (random pops inside)
	touch   []stepTouch // keys to read after the current transaction (past EXAT)
}

func generate(seed uint64, cfg seqConfig) []step {
	g := &gen{r: rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)), cfg: cfg, pending: map[int]bool{}}
	if g.chance(0.4) {
		// Small encoding limits, so conversions between compact and
		// full encodings happen often (runner.reset restores defaults).
		n := func(lo, hi int) string { return strconv.Itoa(lo + g.n(hi-lo+1)) }
		g.cmd(0, "CONFIG", "SET", "hash-max-listpack-entries", n(1, 8), "hash-max-listpack-value", n(2, 16),
			"set-max-intset-entries", n(1, 8), "zset-max-listpack-entries", n(1, 8), "zset-max-listpack-value", n(2, 16),
			"list-max-listpack-size", g.pick("1", "2", "4", "-1"))
	}
	for c := 0; c < cfg.conns; c++ {
		if g.chance(0.3) {
			g.steps = append(g.steps, step{kind: stHello, conn: c, args: []string{"HELLO", "3"}})
		}
	}
	for len(g.steps) < cfg.steps {
		g.action()
	}
	return g.steps
}

func (g *gen) n(k int) int           { return g.r.IntN(k) }
func (g *gen) chance(p float64) bool { return g.r.Float64() < p }
func (g *gen) pick(xs ...string) string {
	return xs[g.r.IntN(len(xs))]
}

// conn picks a connection; one parked in a blocking command is released
// first.
func (g *gen) conn() int {
	c := g.n(g.cfg.conns)
	g.free(c)
	return c
}

func (g *gen) free(c int) {
	if g.pending[c] {
		st := step{kind: stUnblock, conn: c}
		if g.chance(0.2) {
			st.args = []string{"ERROR"} // the client gets -UNBLOCKED
		}
		g.steps = append(g.steps, st)
		delete(g.pending, c)
	}
}

func (g *gen) cmd(c int, args ...string) {
	g.steps = append(g.steps, step{kind: stCmd, conn: c, args: args})
	if strings.EqualFold(args[0], "spop") && randomPop(args) {
		g.resync = append(g.resync, args[1])
	}
	if strings.EqualFold(args[0], "set") && len(args) > 3 {
		for _, a := range args[3:] {
			if strings.EqualFold(a, "exat") || strings.EqualFold(a, "pxat") {
				// A past EXAT leaves Redis 7.0 a logically expired key
				// that DBSIZE counts until one of the two servers'
				// active expiry cycles reclaims it: read it at once.
				g.touch = append(g.touch, stepTouch{c, args[1]})
				break
			}
		}
	}
}

type stepTouch struct {
	conn int
	key  string
}

func (g *gen) flushResync() {
	for _, t := range g.touch {
		g.steps = append(g.steps, step{kind: stCmd, conn: t.conn, args: []string{"EXISTS", t.key}})
	}
	g.touch = g.touch[:0]
	for _, k := range g.resync {
		g.steps = append(g.steps, step{kind: stResync, conn: g.steps[len(g.steps)-1].conn, args: []string{k}})
	}
	g.resync = g.resync[:0]
}

// randomPop: an SPOP whose result depends on Redis's random choice (so the
// two sides' sets differ afterwards and the key is resynchronized).
func randomPop(args []string) bool {
	return len(args) == 2 || len(args) == 3 && args[2] != "1000"
}

func (g *gen) action() {
	switch x := g.n(100); {
	case x < 70:
		c := g.conn()
		g.cmd(c, g.mutate(g.command())...)
		g.flushResync()
	case x < 79:
		g.transaction()
	case x < 85:
		g.asyncBlock()
	case x < 88:
		c := g.conn()
		g.cmd(c, g.blocking(true)...)
	case x < 93:
		c := g.conn()
		g.steps = append(g.steps, step{kind: stScan, conn: c, args: g.scan()})
	case x < 96:
		g.shortExpiry()
	default:
		c := g.conn()
		g.cmd(c, g.admin()...)
	}
}

// transaction: maybe WATCH, maybe others' writes, MULTI, queued commands
// (some invalid), EXEC or DISCARD.
func (g *gen) transaction() {
	c := g.conn()
	if g.chance(0.5) {
		args := []string{"WATCH"}
		for i := 0; i <= g.n(3); i++ {
			args = append(args, g.anyKey())
		}
		g.cmd(c, args...)
		for i := g.n(4); i > 0; i-- {
			o := g.conn()
			g.cmd(o, g.command()...)
			g.flushResync()
		}
		if g.chance(0.1) {
			g.cmd(c, "UNWATCH")
		}
	}
	g.cmd(c, "MULTI")
	for i := 0; i <= g.n(5); i++ {
		switch x := g.n(100); {
		case x < 4:
			g.cmd(c, g.pick("GET", "SET", "LPUSH", "ZADD", "XADD", "HSET")) // wrong arity: EXECABORT
		case x < 6:
			g.cmd(c, "NOSUCHCOMMAND", "x")
		case x < 8:
			g.cmd(c, "WATCH", g.anyKey())
		case x < 9:
			g.cmd(c, "MULTI")
		case x < 16:
			g.cmd(c, g.blocking(g.chance(0.5))...) // never blocks inside MULTI
		default:
			args := g.command()
			for strings.EqualFold(args[0], "spop") && randomPop(args) || strings.EqualFold(args[0], "object") && len(args) != 3 {
				// A random pop would make the rest of EXEC's replies differ;
				// for OBJECT's subcommands see differences_test.go.
				args = g.command()
			}
			g.cmd(c, args...)
		}
	}
	if g.chance(0.85) {
		g.cmd(c, "EXEC")
	} else {
		g.cmd(c, "DISCARD")
	}
	g.flushResync()
}

// asyncBlock parks a connection in a blocking command with no timeout,
// lets others act (perhaps serving it), and leaves it to be released by
// CLIENT UNBLOCK when its connection is next used.
func (g *gen) asyncBlock() {
	c := g.n(g.cfg.conns)
	g.free(c)
	g.steps = append(g.steps, step{kind: stBlock, conn: c, args: g.blocking(false)})
	g.pending[c] = true
}

// shortExpiry sets a TTL of a few milliseconds, waits past it, and touches
// the key so both servers have removed it (DBSIZE counts expired keys not
// yet reclaimed, in Redis as in Damselfly, at different moments).
func (g *gen) shortExpiry() {
	c := g.conn()
	k := g.anyKey()
	ms := strconv.Itoa(1 + g.n(5))
	switch g.n(5) {
	case 0:
		g.cmd(c, "PEXPIRE", k, ms)
	case 1:
		g.cmd(c, "SET", k, g.val(), "PX", ms)
	case 2:
		g.cmd(c, "PSETEX", k, ms, g.val())
	case 3:
		g.cmd(c, "GETEX", k, "PX", ms)
	case 4:
		g.cmd(c, "SET", k, g.val(), "PX", ms, g.pick("NX", "XX", "GET"))
	}
	g.steps = append(g.steps, step{kind: stSleep, ms: 15})
	g.cmd(c, "EXISTS", k)
}

// Keys: a few per type so commands meet their own type mostly, and a
// missing key. "dst" is only ever a list: BLMOVE/BRPOPLPUSH into a key of
// another type is a known bug being fixed elsewhere (issue 13, item 9).
var keyFamilies = map[string][]string{
	"str":  {"s1", "s2", "n1"},
	"list": {"l1", "l2"},
	"hash": {"h1", "h2"},
	"set":  {"S1", "S2", "S3"},
	"zset": {"z1", "z2"},
	"strm": {"x1", "x2"},
}

var allKeys = []string{"s1", "s2", "n1", "l1", "l2", "h1", "h2", "S1", "S2", "S3", "z1", "z2", "x1", "x2", "nokey", "{s1}a"}

func (g *gen) key(family string) string {
	if ks := keyFamilies[family]; ks != nil && g.chance(0.85) {
		return ks[g.n(len(ks))]
	}
	return g.anyKey()
}

func (g *gen) anyKey() string { return allKeys[g.n(len(allKeys))] }

func (g *gen) keys(family string, min, max int) []string {
	var ks []string
	for i := min + g.n(max-min+1); i > 0; i-- {
		ks = append(ks, g.key(family))
	}
	return ks
}

var edgeInts = []string{"0", "1", "-1", "2", "3", "5", "10", "100", "9223372036854775807", "-9223372036854775808",
	"9223372036854775808", "-9223372036854775809", "abc", "1.5", "", "-0", "+5", " 5", "0x10", "007", "1e3"}

var edgeFloats = []string{"1.5", "-0.1", "0.1", "3", "1e10", "1e308", "-1e308", "inf", "-inf", "+inf", "nan", "abc",
	"", "1e-5", "5.0e3", "0x1p3", "1.", ".5", "-0", "1e400", "17179869184.5", "0.30000000000000004", "9007199254740993"}

func (g *gen) int() string {
	if g.chance(0.6) {
		return strconv.Itoa(g.n(21) - 10)
	}
	return g.pick(edgeInts...)
}

func (g *gen) float() string {
	if g.chance(0.4) {
		return strconv.Itoa(g.n(21) - 10)
	}
	return g.pick(edgeFloats...)
}

// idx is an index or range end: small, negative, huge or invalid.
func (g *gen) idx() string {
	if g.chance(0.7) {
		return strconv.Itoa(g.n(16) - 6)
	}
	return g.pick("100", "-100", "9223372036854775807", "-9223372036854775808", "abc", "", "1.0")
}

// cnt is a count for commands whose count is bounded by the collection.
func (g *gen) cnt() string {
	if g.chance(0.8) {
		return strconv.Itoa(g.n(6))
	}
	return g.pick("-1", "100", "abc", "9223372036854775807", "-9223372036854775808", "1000")
}

// rcnt is a count for the random-pick commands (negative means repeats).
func (g *gen) rcnt() string {
	if g.chance(0.8) {
		return strconv.Itoa(g.n(13) - 6)
	}
	return g.pick("1000", "abc", "9223372036854775807", "-9223372036854775808", "0")
}

func (g *gen) val() string {
	switch x := g.n(100); {
	case x < 45:
		return g.pick("a", "b", "c", "foo", "bar", "hello world", "x")
	case x < 70:
		return strconv.Itoa(g.n(41) - 20)
	case x < 85:
		return g.pick(edgeInts...)
	case x < 92:
		return g.pick(edgeFloats...)
	case x < 97:
		return strings.Repeat(g.pick("x", "ab", "z"), 60+g.n(10)) // past listpack's 64-byte values
	default:
		return g.pick("\x00", "\xff\xfe", "a\r\nb", "é", "\"q\"")
	}
}

func (g *gen) member() string {
	if g.chance(0.3) {
		return strconv.Itoa(g.n(12) - 2) // intsets
	}
	if g.chance(0.03) {
		return strings.Repeat("m", 65)
	}
	return g.pick("a", "b", "c", "d", "e", "f", "", "-1", "3.5", "10", "a b")
}

func (g *gen) members(min, max int) []string {
	var ms []string
	for i := min + g.n(max-min+1); i > 0; i-- {
		ms = append(ms, g.member())
	}
	// Now and then enough to pass the listpack/intset thresholds.
	if g.chance(0.02) {
		for i := 0; i < 130; i++ {
			ms = append(ms, "m"+strconv.Itoa(i))
		}
	}
	if g.chance(0.01) {
		for i := 0; i < 520; i++ {
			ms = append(ms, strconv.Itoa(i))
		}
	}
	return ms
}

func (g *gen) field() string {
	if g.chance(0.03) {
		return strings.Repeat("f", 65)
	}
	return g.pick("f1", "f2", "f3", "f4", "n", "", "1")
}

func (g *gen) score() string {
	if g.chance(0.6) {
		return strconv.Itoa(g.n(11) - 3)
	}
	return g.pick("1.5", "-2.5", "0.1", "inf", "-inf", "+inf", "nan", "abc", "", "1e400", "1e-300", "-0",
		"9007199254740993", "3.0", "1e17")
}

// rangeScore is a ZRANGEBYSCORE bound.
func (g *gen) rangeScore() string {
	if g.chance(0.5) {
		return strconv.Itoa(g.n(9) - 3)
	}
	return g.pick("-inf", "+inf", "inf", "(1", "(-1", "(inf", "1.5", "abc", "(", "nan", "(abc", "")
}

func (g *gen) lex() string {
	return g.pick("-", "+", "[a", "(a", "[c", "(d", "[", "(", "a", "[b", "(", "[10", "[\xff")
}

func (g *gen) pattern() string {
	return g.pick("*", "s*", "*1", "?1", "[sz]*", "[^a-k]?", "h?", "x\\1", "[", "*[", "nokey", "", "{*", "l[1-2]", "\\*")
}

func (g *gen) ttlSec() string {
	if g.chance(0.7) {
		return strconv.Itoa(100 + g.n(100000))
	}
	return g.pick("0", "-1", "abc", "9223372036854775807", "-9223372036854775808", "1.5", "", "4611686018427387904")
}

func (g *gen) ttlMs() string {
	if g.chance(0.7) {
		return strconv.Itoa(100000 + g.n(10000000))
	}
	return g.pick("0", "-5", "abc", "9223372036854775807", "9223372036854775", "1.5", "")
}

// at is an absolute time: far future, long past, or invalid.
func (g *gen) at(ms bool) string {
	base := int64(4102444800) // 2100-01-01
	if ms {
		base *= 1000
	}
	switch g.n(4) {
	case 0, 1:
		return strconv.FormatInt(base+int64(g.n(1000)), 10)
	case 2:
		return g.pick("1", "0", "100")
	}
	return g.pick("-1", "abc", "9223372036854775807", "-9223372036854775808")
}

func (g *gen) expireFlags(args []string) []string {
	if g.chance(0.4) {
		args = append(args, g.pick("NX", "XX", "GT", "LT", "nx", "bogus"))
		if g.chance(0.15) {
			args = append(args, g.pick("NX", "XX", "GT", "LT"))
		}
	}
	return args
}

// command is any one non-blocking data command.
func (g *gen) command() []string {
	switch x := g.n(100); {
	case x < 18:
		return g.strings()
	case x < 32:
		return g.keyspace()
	case x < 46:
		return g.lists()
	case x < 58:
		return g.hashes()
	case x < 70:
		return g.sets()
	case x < 85:
		return g.zsets()
	default:
		return g.streams()
	}
}

func (g *gen) admin() []string {
	switch g.n(9) {
	case 0:
		return []string{"SELECT", g.pick("0", "1", "0", "16", "-1", "abc")}
	case 1:
		return []string{"SWAPDB", g.pick("0", "1"), g.pick("0", "1", "17")}
	case 2:
		return []string{"FLUSHDB"}
	case 3:
		return []string{"MOVE", g.anyKey(), g.pick("0", "1", "1", "16", "x")}
	case 4:
		return []string{"COPY", g.anyKey(), g.anyKey(), "DB", g.pick("0", "1", "20")}
	case 5:
		return []string{"PING", g.val()}
	case 6:
		return []string{"ECHO", g.val()}
	case 7:
		return []string{"PUBLISH", "chan", g.val()}
	}
	return []string{"DBSIZE"}
}

// mutate now and then drops the last argument or adds one, to reach arity
// errors and options missing their value.
func (g *gen) mutate(args []string) []string {
	switch x := g.n(100); {
	case x < 3 && len(args) > 1:
		return args[:len(args)-1]
	case x < 5:
		return append(args, g.pick("junk", "0", "COUNT", "LIMIT", "WITHSCORES", ""))
	}
	return args
}
