package rdb

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"net"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/damselflydb/damselfly/internal/redistest"
)

// item is one key of a test dataset.
type item struct {
	db   int
	key  string
	typ  Type
	exp  int64
	str  []byte
	list [][]byte
	set  [][]byte
	hash [][2][]byte
	zset []ZMember
	enc  string // expected OBJECT ENCODING in Redis 7.0 ("" = not checked)
}

// canon renders a value independently of encoding and order.
func canon(typ Type, exp int64, str []byte, list, set [][]byte, hash [][2][]byte, zset []ZMember) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s@%d:", typ, exp)
	switch typ {
	case String:
		fmt.Fprintf(&b, "%q", str)
	case List:
		for _, e := range list {
			fmt.Fprintf(&b, "%q,", e)
		}
	case Set:
		s := make([]string, len(set))
		for i, e := range set {
			s[i] = strconv.Quote(string(e))
		}
		slices.Sort(s)
		b.WriteString(strings.Join(s, ","))
	case Hash:
		s := make([]string, len(hash))
		for i, e := range hash {
			s[i] = strconv.Quote(string(e[0])) + "=" + strconv.Quote(string(e[1]))
		}
		slices.Sort(s)
		b.WriteString(strings.Join(s, ","))
	case ZSet:
		s := make([]string, len(zset))
		for i, e := range zset {
			s[i] = strconv.Quote(string(e.Member)) + "=" + strconv.FormatFloat(e.Score, 'g', -1, 64)
		}
		slices.Sort(s)
		b.WriteString(strings.Join(s, ","))
	}
	return b.String()
}

func (it *item) canon() string {
	return canon(it.typ, it.exp, it.str, it.list, it.set, it.hash, it.zset)
}

func entryCanon(e *Entry) string {
	if e.Type == Stream {
		return fmt.Sprintf("stream@%d:%d", e.ExpireAtMs, e.Stream.Length)
	}
	return canon(e.Type, e.ExpireAtMs, e.String, e.List, e.Set, e.Hash, e.ZSet) + ttlSuffix(e.HashFieldExpireAtMs)
}

func bs(ss ...string) [][]byte {
	out := make([][]byte, len(ss))
	for i, s := range ss {
		out[i] = []byte(s)
	}
	return out
}

// testLimits make the list streaming path and PLAIN nodes reachable with small data.
var testLimits = Limits{ListBufferBytes: 64 << 10, ListPackedThreshold: 1500}

func dataset(version int) []item {
	now := time.Now().UnixMilli()
	rng := rand.New(rand.NewPCG(1, 2))
	randBytes := func(n int) []byte {
		b := make([]byte, n)
		for i := range b {
			b[i] = byte(rng.IntN(256))
		}
		return b
	}
	seq := func(n int, f string) [][]byte {
		out := make([][]byte, n)
		for i := range out {
			out[i] = fmt.Appendf(nil, f, i)
		}
		return out
	}
	smallSetEnc := "hashtable"
	if version >= 11 {
		smallSetEnc = "listpack"
	}
	ints := []string{"0", "1", "-1", "127", "128", "-2", "4095", "-4096", "4096", "-4097", "32767", "-32768",
		"32768", "8388607", "-8388608", "8388608", "2147483647", "-2147483648", "2147483648",
		"9223372036854775807", "-9223372036854775808", "9223372036854775808", "007", "-0", "+1", " 1", "1.5"}
	var hsmall [][2][]byte
	for i, s := range ints {
		hsmall = append(hsmall, [2][]byte{fmt.Appendf(nil, "f%d", i), []byte(s)})
	}
	hsmall = append(hsmall, [2][]byte{[]byte("12"), []byte("")})
	var hbig [][2][]byte
	for i := range 600 {
		hbig = append(hbig, [2][]byte{fmt.Appendf(nil, "field-%d", i), fmt.Appendf(nil, "value-%d", i*7)})
	}
	var zbig []ZMember
	for i := range 300 {
		zbig = append(zbig, ZMember{fmt.Appendf(nil, "m-%d", i), float64(i%17) * 1.25})
	}
	set600 := seq(600, "%d")
	items := []item{
		{key: "s:embstr", typ: String, str: []byte("hello world"), enc: "embstr"},
		{key: "s:empty", typ: String, str: []byte{}, enc: "embstr"},
		{key: "s:int", typ: String, str: []byte("12345"), enc: "int"},
		{key: "s:neg", typ: String, str: []byte("-42"), enc: "int"},
		{key: "s:int32", typ: String, str: []byte("-2147483648"), enc: "int"},
		{key: "s:bigint", typ: String, str: []byte("12345678901234"), enc: "int"},
		{key: "s:notint", typ: String, str: []byte("007"), enc: "embstr"},
		{key: "s:lzf", typ: String, str: bytes.Repeat([]byte("abcdefgh"), 40), enc: "raw"},
		{key: "s:rand", typ: String, str: randBytes(100), enc: "raw"},
		{key: "s:big", typ: String, str: bytes.Repeat([]byte("0123456789abcdef"), 4096), enc: "raw"},
		{key: "123456", typ: String, str: []byte("int key")},
		{key: strings.Repeat("long-compressible-key-", 10), typ: String, str: []byte("v")},
		{key: "l:small", typ: List, list: append(bs(ints...), []byte(""), bytes.Repeat([]byte("x"), 70), bytes.Repeat([]byte("y"), 5000)), enc: "quicklist"},
		{key: "l:one", typ: List, list: bs("only"), enc: "quicklist"},
		{key: "l:medium", typ: List, list: seq(3000, "element-%d"), enc: "quicklist"},
		{key: "l:big", typ: List, list: seq(20000, "e%d"), enc: "quicklist"},
		{key: "l:plain", typ: List, list: [][]byte{[]byte("a"), bytes.Repeat([]byte("p"), 2000), []byte("b")}, enc: "quicklist"},
		{key: "set:intset16", typ: Set, set: bs("3", "1", "2", "-5"), enc: "intset"},
		{key: "set:intset32", typ: Set, set: bs("1", "100000", "-100000"), enc: "intset"},
		{key: "set:intset64", typ: Set, set: bs("1", "9000000000", "-9223372036854775808"), enc: "intset"},
		{key: "set:small", typ: Set, set: bs("a", "b", "c", "12", "007"), enc: smallSetEnc},
		{key: "set:ints600", typ: Set, set: set600, enc: "hashtable"},
		{key: "set:big", typ: Set, set: seq(300, "member-%d"), enc: "hashtable"},
		{key: "set:longmember", typ: Set, set: [][]byte{[]byte("a"), bytes.Repeat([]byte("m"), 100)}, enc: "hashtable"},
		{key: "h:small", typ: Hash, hash: hsmall, enc: "listpack"},
		{key: "h:big", typ: Hash, hash: hbig, enc: "hashtable"},
		{key: "h:bigval", typ: Hash, hash: [][2][]byte{{[]byte("f"), bytes.Repeat([]byte("v"), 100)}}, enc: "hashtable"},
		{key: "z:small", typ: ZSet, zset: []ZMember{{[]byte("one"), 1}, {[]byte("half"), 2.5}, {[]byte("neg"), -3},
			{[]byte("pinf"), math.Inf(1)}, {[]byte("ninf"), math.Inf(-1)}, {[]byte("zero"), 0}, {[]byte("huge"), 1e300},
			{[]byte("tenth"), 0.1}, {[]byte("big"), 4503599627370497}, {[]byte("same-a"), 7}, {[]byte("same-b"), 7},
			{[]byte("123"), 5}}, enc: "listpack"},
		{key: "z:big", typ: ZSet, zset: zbig, enc: "skiplist"},
		{key: "z:bigmember", typ: ZSet, zset: []ZMember{{bytes.Repeat([]byte("z"), 100), 1}}, enc: "skiplist"},
		{key: "ttl:str", typ: String, str: []byte("ttl"), exp: now + 3600_000},
		{key: "ttl:list", typ: List, list: bs("a", "b"), exp: now + 3600_001},
		{key: "ttl:set", typ: Set, set: bs("1", "2"), exp: now + 3600_002},
		{key: "ttl:hash", typ: Hash, hash: [][2][]byte{{[]byte("f"), []byte("v")}}, exp: now + 3600_003},
		{key: "ttl:zset", typ: ZSet, zset: []ZMember{{[]byte("m"), 1}}, exp: now + 3600_004},
		{key: "ttl:bigset", typ: Set, set: seq(300, "x%d"), exp: now + 3600_005},
		{key: "expired:str", typ: String, str: []byte("gone"), exp: now - 3600_000},
		{db: 3, key: "db3:str", typ: String, str: []byte("in db 3")},
		{db: 3, key: "db3:list", typ: List, list: bs("x", "y")},
		{db: 3, key: "db3:ttl", typ: Hash, hash: [][2][]byte{{[]byte("a"), []byte("1")}}, exp: now + 7200_000},
	}
	return items
}

// writeDataset writes items (grouped by db, in order) as an RDB file.
func writeDataset(t testing.TB, items []item, version int) []byte {
	t.Helper()
	var buf bytes.Buffer
	w := NewWriter(&buf, version)
	w.SetLimits(testLimits)
	if err := w.Header(DefaultAux(1 << 20)); err != nil {
		t.Fatal(err)
	}
	byDB := map[int][]item{}
	var dbs []int
	for _, it := range items {
		if _, ok := byDB[it.db]; !ok {
			dbs = append(dbs, it.db)
		}
		byDB[it.db] = append(byDB[it.db], it)
	}
	for _, db := range dbs {
		var exp uint64
		for _, it := range byDB[db] {
			if it.exp > 0 {
				exp++
			}
		}
		if err := w.SelectDB(db, uint64(len(byDB[db])), exp); err != nil {
			t.Fatal(err)
		}
		for _, it := range byDB[db] {
			if err := writeItem(w, it); err != nil {
				t.Fatalf("%s: %v", it.key, err)
			}
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func writeItem(w *Writer, it item) error {
	k := []byte(it.key)
	switch it.typ {
	case String:
		return w.String(k, it.str, it.exp)
	case List:
		return w.List(k, it.exp, len(it.list), slices.Values(it.list))
	case Set:
		return w.Set(k, it.exp, len(it.set), slices.Values(it.set))
	case Hash:
		return w.Hash(k, it.exp, len(it.hash), pairs(it.hash))
	case ZSet:
		return w.ZSet(k, it.exp, len(it.zset), zpairs(it.zset))
	}
	return errors.New("bad type")
}

func pairs(h [][2][]byte) func(func([]byte, []byte) bool) {
	return func(yield func([]byte, []byte) bool) {
		for _, p := range h {
			if !yield(p[0], p[1]) {
				return
			}
		}
	}
}

func zpairs(z []ZMember) func(func([]byte, float64) bool) {
	return func(yield func([]byte, float64) bool) {
		for _, m := range z {
			if !yield(m.Member, m.Score) {
				return
			}
		}
	}
}

// loadAll loads data and returns "db/key" -> canon.
func loadAll(t testing.TB, data []byte, name string) (map[string]string, Info) {
	t.Helper()
	got := map[string]string{}
	info, err := Load(bytes.NewReader(data), name, func(e *Entry) error {
		got[fmt.Sprintf("%d/%s", e.DB, e.Key)] = entryCanon(e)
		return nil
	})
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	return got, info
}

// --- a redis-server for interop tests ----------------------------------------

type redisServer struct {
	addr string
	dir  string
	log  string
}

func needRedis(t *testing.T, tools ...string) {
	t.Helper()
	for _, tool := range tools {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s not on PATH: skipping Redis interop test", tool)
		}
	}
}

// startRedis starts redis-server on dir (which may hold dbfile).
func startRedis(t *testing.T, dir, dbfile string, extra ...string) *redisServer {
	t.Helper()
	logf := filepath.Join(dir, "redis.log")
	args := append([]string{"--dir", dir,
		"--dbfilename", dbfile, "--save", "", "--appendonly", "no", "--logfile", logf,
		"--sanitize-dump-payload", "yes"}, extra...)
	rs := redistest.Start(t, "", args...)
	return &redisServer{addr: rs.Addr, dir: dir, log: logf}
}

func (s *redisServer) conn(t *testing.T) *respConn {
	t.Helper()
	c, err := net.Dial("tcp", s.addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return &respConn{c: c, r: bufio.NewReader(c)}
}

// respConn is a minimal RESP2 client: replies are string, int64, nil,
// []any or a redisErr.
type respConn struct {
	c net.Conn
	r *bufio.Reader
}

type redisErr string

func (e redisErr) Error() string { return string(e) }

func (c *respConn) do(args ...any) (any, error) {
	var b bytes.Buffer
	fmt.Fprintf(&b, "*%d\r\n", len(args))
	for _, a := range args {
		var s []byte
		switch v := a.(type) {
		case string:
			s = []byte(v)
		case []byte:
			s = v
		default:
			s = fmt.Append(nil, v)
		}
		fmt.Fprintf(&b, "$%d\r\n", len(s))
		b.Write(s)
		b.WriteString("\r\n")
	}
	_ = c.c.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := c.c.Write(b.Bytes()); err != nil {
		return nil, err
	}
	return c.reply()
}

func (c *respConn) reply() (any, error) {
	line, err := c.r.ReadString('\n')
	if err != nil {
		return nil, err
	}
	line = strings.TrimSuffix(line, "\r\n")
	if line == "" {
		return nil, errors.New("empty reply line")
	}
	switch line[0] {
	case '+':
		return line[1:], nil
	case '-':
		return nil, redisErr(line[1:])
	case ':':
		return strconv.ParseInt(line[1:], 10, 64)
	case '$':
		n, _ := strconv.Atoi(line[1:])
		if n < 0 {
			return nil, nil
		}
		buf := make([]byte, n+2)
		if _, err := io.ReadFull(c.r, buf); err != nil {
			return nil, err
		}
		return string(buf[:n]), nil
	case '*':
		n, _ := strconv.Atoi(line[1:])
		if n < 0 {
			return nil, nil
		}
		out := make([]any, n)
		for i := range out {
			v, err := c.reply()
			if err != nil {
				if _, ok := err.(redisErr); !ok {
					return nil, err
				}
				v = err
			}
			out[i] = v
		}
		return out, nil
	}
	return nil, fmt.Errorf("bad reply %q", line)
}

func (c *respConn) must(t *testing.T, args ...any) any {
	t.Helper()
	v, err := c.do(args...)
	if err != nil {
		t.Fatalf("%v: %v", args, err)
	}
	return v
}

func strs(v any) []string {
	arr, _ := v.([]any)
	out := make([]string, len(arr))
	for i, x := range arr {
		out[i], _ = x.(string)
	}
	return out
}

// redisCanon reads key from Redis into canon form.
func redisCanon(t *testing.T, c *respConn, key string) (string, string) {
	t.Helper()
	typ := c.must(t, "TYPE", key).(string)
	exp := c.must(t, "PEXPIRETIME", key).(int64)
	if exp < 0 {
		exp = 0
	}
	enc, _ := c.must(t, "OBJECT", "ENCODING", key).(string)
	switch typ {
	case "string":
		return canon(String, exp, []byte(c.must(t, "GET", key).(string)), nil, nil, nil, nil), enc
	case "list":
		return canon(List, exp, nil, bs(strs(c.must(t, "LRANGE", key, 0, -1))...), nil, nil, nil), enc
	case "set":
		return canon(Set, exp, nil, nil, bs(strs(c.must(t, "SMEMBERS", key))...), nil, nil), enc
	case "hash":
		kv := strs(c.must(t, "HGETALL", key))
		var h [][2][]byte
		for i := 0; i+1 < len(kv); i += 2 {
			h = append(h, [2][]byte{[]byte(kv[i]), []byte(kv[i+1])})
		}
		return canon(Hash, exp, nil, nil, nil, h, nil), enc
	case "zset":
		kv := strs(c.must(t, "ZRANGE", key, 0, -1, "WITHSCORES"))
		var z []ZMember
		for i := 0; i+1 < len(kv); i += 2 {
			f, err := strconv.ParseFloat(kv[i+1], 64)
			if err != nil {
				t.Fatalf("score %q: %v", kv[i+1], err)
			}
			z = append(z, ZMember{[]byte(kv[i]), f})
		}
		return canon(ZSet, exp, nil, nil, nil, nil, z), enc
	}
	return "type " + typ, enc
}

// ttlSuffix renders a hash's field TTLs (the nonzero ones), sorted.
func ttlSuffix(m map[string]int64) string {
	var s []string
	for f, at := range m {
		if at != 0 {
			s = append(s, fmt.Sprintf("%q@%d", f, at))
		}
	}
	if len(s) == 0 {
		return ""
	}
	slices.Sort(s)
	return " fieldttl:" + strings.Join(s, ",")
}
