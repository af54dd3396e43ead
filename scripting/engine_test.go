package scripting

import (
	"fmt"
	"strings"
	"testing"
)

// echoCaller answers every command with a status naming it.
type echoCaller struct{ calls int }

func (c *echoCaller) Call(args [][]byte) ([]byte, bool) {
	c.calls++
	return []byte("+" + strings.ToUpper(string(args[0])) + "\r\n"), false
}

// textReplier records a result as text.
type textReplier struct{ sb strings.Builder }

func (r *textReplier) Int(n int64)     { fmt.Fprintf(&r.sb, ":%d ", n) }
func (r *textReplier) Bulk(b []byte)   { fmt.Fprintf(&r.sb, "$%s ", b) }
func (r *textReplier) Null()           { r.sb.WriteString("nil ") }
func (r *textReplier) Array(n int)     { fmt.Fprintf(&r.sb, "*%d ", n) }
func (r *textReplier) Status(s string) { fmt.Fprintf(&r.sb, "+%s ", s) }
func (r *textReplier) Error(s string)  { fmt.Fprintf(&r.sb, "-%s ", s) }

func eval(t testing.TB, e *Engine, body string, args ...string) string {
	t.Helper()
	sha, err := e.Compile([]byte(body))
	if err != nil {
		return "-" + err.Error()
	}
	out := &textReplier{}
	var argv [][]byte
	for _, a := range args {
		argv = append(argv, []byte(a))
	}
	if err := e.RunScript(sha, nil, false, Request{Caller: &echoCaller{}, Out: out, Args: argv}); err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(out.sb.String())
}

// No script can change what a later script sees (issue 13).
func TestSandboxIsolation(t *testing.T) {
	e := New()
	attacks := []string{
		"rawset(redis, 'call', function() return 'forged' end)",
		"redis.call = function() return 'forged' end",
		"setmetatable(_G, nil) x = 1",
		"rawset(_G, 'tostring', function() return 'forged' end)",
		"getmetatable('').__index = {upper = function() return 'forged' end}",
		"getmetatable('').__index.upper = function() return 'forged' end",
		"string.upper = function() return 'forged' end",
		"local f = loadstring('redis = nil') f()",
		"local f = loadstring('string.upper = nil') f()",
		"table.insert(string, 1)",
		"rawset(getmetatable(''), '__index', {})",
		"cjson.encode = nil",
		"coroutine.wrap(function() rawset(_G, 'x', 1) end)()",
	}
	for _, a := range attacks {
		got := eval(t, e, a)
		if !strings.Contains(got, "readonly table") && !strings.Contains(got, "nonexistent global") && !strings.Contains(got, "protected metatable") {
			t.Errorf("%s: %s", a, got)
		}
	}
	if got := eval(t, e, "return {redis.call('ping'), ('abc'):upper(), tostring(5), type(x)}"); got != "*4 +PING $ABC $5 -ERR user_script:1: Script attempted to access nonexistent global variable 'x' script: 4f68fdf50fe4fac12f2e4a77a8aee1d4e82ec66e, on @user_script:1." && got != "*4 +PING $ABC $5 $nil" {
		// type(x) raises: the whole script fails.
		if !strings.Contains(got, "nonexistent global variable 'x'") {
			t.Fatalf("after the attacks: %s", got)
		}
	}
	if got := eval(t, e, "return {redis.call('ping'), ('abc'):upper(), tostring(5)}"); got != "*3 +PING $ABC $5" {
		t.Fatalf("after the attacks: %s", got)
	}
}

// Libraries: struct, cmsgpack and cjson round trips.
func TestLibraries(t *testing.T) {
	e := New()
	for _, c := range []struct{ body, want string }{
		{"return {struct.unpack('>i4Hbs', struct.pack('>i4Hbs', -7, 65535, -1, 'hi'))}", "*5 :-7 :65535 :-1 $hi :11"},
		{"return {struct.unpack('<dxf', struct.pack('<dxf', 2.5, 0.5))}", "*3 :2 :0 :14"},
		{"local t = cmsgpack.unpack(cmsgpack.pack({1, {2, 'x'}, -1000000, 2^40})) return {t[1], t[2][2], t[3], t[4] == 2^40}", "*4 :1 $x :-1000000 :1"},
		{"local t = cjson.decode(cjson.encode({a = {1, 2, 'three'}})) return t.a", "*3 :1 :2 $three"},
		{"return cjson.encode({1, nil, 3})", "$[1,null,3]"},
		{"return pcall(cjson.encode, {[1]=1, [100]=2})", "nil"},
		{"return {bit.tobit(0xffffffff), bit.band(-1, 0xff), bit.tohex(65535, 4)}", "*3 :-1 :255 $ffff"},
	} {
		if got := eval(t, e, c.body); got != c.want {
			t.Errorf("%s\n got: %s\nwant: %s", c.body, got, c.want)
		}
	}
}

// Malformed input to the decoders is an error, never a panic.
func FuzzDecoders(f *testing.F) {
	for _, s := range []string{"\x93\x01\x02\x03", "\xdd\xff\xff\xff\xff", "\xa5ab", "[1,2", "{\"a\":", "\x00\x01"} {
		f.Add(s)
	}
	e := New()
	f.Fuzz(func(t *testing.T, s string) {
		for _, body := range []string{
			"pcall(cmsgpack.unpack, ARGV[1])",
			"pcall(cmsgpack.unpack_limit, ARGV[1], 2, 1)",
			"pcall(cjson.decode, ARGV[1])",
			"pcall(struct.unpack, ARGV[1], ARGV[1])",
			"pcall(struct.pack, ARGV[1], 1, 2, 'x')",
		} {
			if got := eval(t, e, body, s); strings.Contains(got, "internal error") {
				t.Fatalf("%s with %q: %s", body, s, got)
			}
		}
	})
}
