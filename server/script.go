package server

// Scripting: EVAL, EVALSHA, EVAL_RO, EVALSHA_RO and SCRIPT with Lua 5.1
// semantics (github.com/yuin/gopher-lua).
//
// Design and invariants:
//   - A script runs atomically: EVAL locks every shard (ascending order) for
//     its whole run, marks them held (as EXEC does, so redis.call's commands
//     lock nothing again), and only then takes the VM. There is one Lua VM
//     per server, guarded by vmMu, always taken after the shard locks.
//   - Scripts are replicated as their effects: the write commands they call,
//     wrapped in MULTI/EXEC when there are several (multi.go collects them).
//   - redis.call runs a command with the connection's reply buffer swapped
//     for a scratch buffer and RESP2 forced, then converts that RESP2 reply
//     to Lua values with Redis's rules; the result of the script converts
//     back with Redis's rules (numbers truncate to integers, tables become
//     arrays up to the first nil, {ok=}/{err=} become status/error replies,
//     false becomes nil, true becomes 1).
//   - SCRIPT KILL needs no shard lock: the running script is published in
//     scriptCache.running and stopped by cancelling the VM's context, unless
//     it has already written (UNKILLABLE), as in Redis.
//   - Compile and runtime errors, and panics, become error replies; a script
//     never takes the server down.

import (
	"context"
	"crypto/sha1"
	"encoding/hex"
	"errors"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	lua "github.com/yuin/gopher-lua"
	"github.com/yuin/gopher-lua/parse"
)

func registerScripting(reg registrar) {
	reg("eval", -3, "noscript|stale|skip_monitor|no_mandatory_keys|movablekeys|x-detach|x-all-shards", 0, 0, 0, "scripting", func(c *Client, a [][]byte) { c.evalGeneric(a, false, false) })
	reg("evalsha", -3, "noscript|stale|skip_monitor|no_mandatory_keys|movablekeys|x-detach|x-all-shards", 0, 0, 0, "scripting", func(c *Client, a [][]byte) { c.evalGeneric(a, true, false) })
	reg("eval_ro", -3, "noscript|stale|skip_monitor|no_mandatory_keys|movablekeys|readonly|x-detach|x-all-shards", 0, 0, 0, "scripting", func(c *Client, a [][]byte) { c.evalGeneric(a, false, true) })
	reg("evalsha_ro", -3, "noscript|stale|skip_monitor|no_mandatory_keys|movablekeys|readonly|x-detach|x-all-shards", 0, 0, 0, "scripting", func(c *Client, a [][]byte) { c.evalGeneric(a, true, true) })
	reg("script", -2, "noscript|x-no-data", 0, 0, 0, "scripting", cmdScript)
	reg("script|load", 3, "noscript|stale", 0, 0, 0, "scripting", cmdScript)
	reg("script|exists", -3, "noscript", 0, 0, 0, "scripting", cmdScript)
	reg("script|flush", -2, "noscript", 0, 0, 0, "scripting", cmdScript)
	reg("script|kill", 2, "noscript|allow_busy", 0, 0, 0, "scripting", cmdScript)
	reg("script|help", 2, "loading|stale", 0, 0, 0, "scripting", cmdScript)
}

// scriptCache holds loaded scripts and the Lua VM.
type scriptCache struct {
	mu     sync.Mutex
	protos map[string]*lua.FunctionProto // by lower-case SHA1 hex
	bodies map[string]string

	vmMu sync.Mutex // the VM; taken after the shard locks
	vm   *lua.LState
	cur  *scriptRun // the script running on vm (under vmMu)

	running atomic.Pointer[runningScript]
}

// runningScript is what SCRIPT KILL sees of the script being run.
type runningScript struct {
	cancel context.CancelFunc
	wrote  atomic.Bool
	killed atomic.Bool
}

func newScriptCache() *scriptCache {
	return &scriptCache{protos: map[string]*lua.FunctionProto{}, bodies: map[string]string{}}
}

func sha1hex(b []byte) string {
	h := sha1.Sum(b)
	return hex.EncodeToString(h[:])
}

// compile returns the compiled script body (cached by SHA1).
func (sc *scriptCache) compile(body []byte) (string, *lua.FunctionProto, error) {
	sha := sha1hex(body)
	sc.mu.Lock()
	p := sc.protos[sha]
	sc.mu.Unlock()
	if p != nil {
		return sha, p, nil
	}
	chunk, err := parse.Parse(strings.NewReader(string(body)), "user_script")
	if err != nil {
		return sha, nil, errors.New("Error compiling script (new function): " + compileMessage(err, body))
	}
	p, err = lua.Compile(chunk, "user_script")
	if err != nil {
		return sha, nil, errors.New("Error compiling script (new function): " + compileMessage(err, body))
	}
	sc.mu.Lock()
	sc.protos[sha] = p
	sc.bodies[sha] = string(body)
	sc.mu.Unlock()
	return sha, p, nil
}

// compileMessage renders a gopher-lua compile error as Lua 5.1 would:
// "user_script:LINE: message".
func compileMessage(err error, body []byte) string {
	var perr *parse.Error
	if errors.As(err, &perr) {
		tok, line, msg := perr.Token, perr.Pos.Line, perr.Message
		if line < 0 { // the parser ran out of input
			tok, line = "<eof>", 1+strings.Count(string(body), "\n")
		}
		if tok == "" {
			tok = "<eof>"
		}
		if msg == "syntax error" {
			msg = "unexpected symbol" // Lua 5.1's wording for the common case
		}
		return "user_script:" + strconv.Itoa(line) + ": " + msg + " near '" + tok + "'"
	}
	return oneLine(err.Error())
}

func (sc *scriptCache) lookup(sha string) *lua.FunctionProto {
	sc.mu.Lock()
	defer sc.mu.Unlock()
	return sc.protos[strings.ToLower(sha)]
}

func (sc *scriptCache) flush() {
	sc.mu.Lock()
	sc.protos = map[string]*lua.FunctionProto{}
	sc.bodies = map[string]string{}
	sc.mu.Unlock()
}

func cmdScript(c *Client, args [][]byte) {
	sc := c.srv.scripts
	sub := lower(args[1])
	switch sub {
	case "load":
		if len(args) != 3 {
			c.err("ERR wrong number of arguments for 'script|load' command")
			return
		}
		sha, _, err := sc.compile(args[2])
		if err != nil {
			c.err("ERR " + err.Error())
			return
		}
		c.bulkString(sha)
	case "exists":
		if len(args) < 3 {
			c.err("ERR wrong number of arguments for 'script|exists' command")
			return
		}
		c.array(len(args) - 2)
		for _, a := range args[2:] {
			if sc.lookup(string(a)) != nil {
				c.int(1)
			} else {
				c.int(0)
			}
		}
	case "flush":
		if len(args) > 3 {
			c.err("ERR wrong number of arguments for 'script|flush' command")
			return
		}
		if len(args) == 3 && !eq(args[2], "sync") && !eq(args[2], "async") {
			c.err("ERR SCRIPT FLUSH only support SYNC|ASYNC option")
			return
		}
		sc.flush()
		c.ok()
	case "kill":
		if len(args) != 2 {
			c.err("ERR wrong number of arguments for 'script|kill' command")
			return
		}
		r := sc.running.Load()
		switch {
		case r == nil:
			c.err("NOTBUSY No scripts in execution right now.")
		case r.wrote.Load():
			c.err("UNKILLABLE Sorry the script already executed write commands against the dataset. You can either wait the script termination or kill the server in a hard way using the SHUTDOWN NOSAVE command.")
		default:
			r.killed.Store(true)
			r.cancel()
			c.ok()
		}
	case "help":
		lines := []string{
			"SCRIPT <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
			"DEBUG (YES|SYNC|NO)",
			"    Set the debug mode for subsequent scripts executed.",
			"EXISTS <sha1> [<sha1> ...]",
			"    Return information about the existence of the scripts in the script cache.",
			"FLUSH [ASYNC|SYNC]",
			"    Flush the Lua scripts cache. Very dangerous on replicas.",
			"    When called without the optional mode argument, the behavior is determined by the",
			"    lazyfree-lazy-user-flush configuration directive. Valid modes are:",
			"    * ASYNC: Asynchronously flush the scripts cache.",
			"    * SYNC: Synchronously flush the scripts cache.",
			"KILL",
			"    Kill the currently executing Lua script.",
			"LOAD <script>",
			"    Load a script into the scripts cache without executing it.",
			"HELP",
			"    Prints this help.",
		}
		c.array(len(lines))
		for _, l := range lines {
			c.simple(l)
		}
	default:
		c.err("ERR unknown subcommand '" + sanitize(args[1], 128) + "'. Try SCRIPT HELP.")
	}
}

// evalGeneric is EVAL/EVALSHA(_RO): args are [cmd, script|sha, numkeys, keys..., args...].
func (c *Client) evalGeneric(args [][]byte, bySHA, readOnly bool) {
	nk, ok := parseInt(args[2])
	if !ok {
		c.errNotInteger()
		return
	}
	if nk < 0 {
		c.err("ERR Number of keys can't be negative")
		return
	}
	if nk > int64(len(args)-3) {
		c.err("ERR Number of keys can't be greater than number of args")
		return
	}
	sc := c.srv.scripts
	var sha string
	var proto *lua.FunctionProto
	if bySHA {
		sha = strings.ToLower(string(args[1]))
		if proto = sc.lookup(sha); proto == nil {
			c.err("NOSCRIPT No matching script. Please use EVAL.")
			return
		}
	} else {
		var err error
		sha, proto, err = sc.compile(args[1])
		if err != nil {
			c.err("ERR " + err.Error())
			return
		}
	}
	keys := args[3 : 3+nk]
	argv := args[3+nk:]
	run := func() { c.runScript(sha, proto, keys, argv, readOnly) }
	if c.sess.held != nil {
		// Inside EXEC: every shard is already held (x-all-shards).
		prev := c.sess.inScript
		c.sess.inScript = true
		defer func() { c.sess.inScript = prev }()
		run()
		return
	}
	set := c.srv.store.All()
	c.srv.store.LockMany(&set)
	defer c.srv.store.UnlockMany(&set)
	c.sess.inScript = true
	defer func() { c.sess.inScript = false }()
	c.runHeld(&set, run)
}

// scriptRun is the state of one script execution, reachable from the
// redis.* functions.
type scriptRun struct {
	c        *Client
	sha      string
	readOnly bool
	run      *runningScript
	errLine  int // line where the error being raised happened
}

// runScript executes a compiled script with every shard held and writes
// its reply.
func (c *Client) runScript(sha string, proto *lua.FunctionProto, keys, argv [][]byte, readOnly bool) {
	sc := c.srv.scripts
	sc.vmMu.Lock()
	defer sc.vmMu.Unlock()
	if sc.vm == nil {
		sc.vm = newLuaVM(sc)
	}
	L := sc.vm
	ctx, cancel := context.WithCancel(context.Background())
	rs := &runningScript{cancel: cancel}
	sc.running.Store(rs)
	defer func() {
		sc.running.Store(nil)
		cancel()
	}()
	sr := &scriptRun{c: c, sha: sha, readOnly: readOnly, run: rs}
	sc.cur = sr
	defer func() { sc.cur = nil }()
	g := L.G.Global
	g.RawSetString("KEYS", stringsTable(L, keys))
	g.RawSetString("ARGV", stringsTable(L, argv))
	fn := L.NewFunctionFromProto(proto)
	fn.Env = g
	handler := L.NewFunction(func(L *lua.LState) int {
		// Record where the error happened: the innermost Lua frame.
		for level := 0; level < 8; level++ {
			dbg, ok := L.GetStack(level)
			if !ok {
				break
			}
			if _, err := L.GetInfo("Sl", dbg, lua.LNil); err == nil && dbg.CurrentLine > 0 {
				sr.errLine = dbg.CurrentLine
				break
			}
		}
		L.Push(L.Get(1))
		return 1
	})
	top := L.GetTop()
	L.SetContext(ctx)
	L.Push(fn)
	err := func() (err error) {
		defer func() {
			if r := recover(); r != nil {
				err = errors.New("internal error in script: " + oneLine(anyString(r)))
			}
		}()
		return L.PCall(0, 1, handler)
	}()
	L.RemoveContext()
	if err != nil {
		L.SetTop(top)
		c.scriptError(sr, err)
		return
	}
	ret := L.Get(-1)
	L.SetTop(top)
	c.luaToReply(ret, 0)
}

func anyString(v any) string {
	if e, ok := v.(error); ok {
		return e.Error()
	}
	if s, ok := v.(string); ok {
		return s
	}
	return "panic"
}

// scriptError answers a failed script as Redis 7.0 does:
// "<code> <message> script: <sha>, on @user_script:<line>."
func (c *Client) scriptError(sr *scriptRun, err error) {
	var msg string
	var apiErr *lua.ApiError
	if sr.run.killed.Load() {
		msg = "ERR Script killed by user with SCRIPT KILL..."
	} else if errors.As(err, &apiErr) {
		if t, ok := apiErr.Object.(*lua.LTable); ok {
			if e, ok := t.RawGetString("err").(lua.LString); ok {
				msg = string(e)
			}
		}
		if msg == "" {
			msg = "ERR " + luaErrorText(apiErr.Object)
		}
	} else {
		msg = "ERR " + err.Error()
	}
	line := sr.errLine
	if line == 0 {
		line = 1
	}
	c.err(oneLine(strings.TrimRight(msg, "\r\n")) + " script: " + sr.sha + ", on @user_script:" + strconv.Itoa(line) + ".")
}

// luaErrorText is the text of a Lua error value.
func luaErrorText(v lua.LValue) string {
	if v == nil || v == lua.LNil {
		return "nil"
	}
	s := v.String()
	// gopher-lua appends a traceback to some messages; Lua's message is the
	// first line.
	if i := strings.Index(s, "\nstack traceback:"); i >= 0 {
		s = s[:i]
	}
	return s
}

func oneLine(s string) string {
	return strings.NewReplacer("\r", " ", "\n", " ").Replace(s)
}

func stringsTable(L *lua.LState, items [][]byte) *lua.LTable {
	t := L.CreateTable(len(items), 0)
	for _, it := range items {
		t.Append(lua.LString(it))
	}
	return t
}

// newLuaVM makes the server's Lua VM with the libraries Redis offers and
// the redis table, and protects the global table as Redis 7 does.
func newLuaVM(sc *scriptCache) *lua.LState {
	L := lua.NewState(lua.Options{SkipOpenLibs: true})
	for _, lib := range []struct {
		name string
		fn   lua.LGFunction
	}{
		{lua.BaseLibName, lua.OpenBase},
		{lua.TabLibName, lua.OpenTable},
		{lua.StringLibName, lua.OpenString},
		{lua.MathLibName, lua.OpenMath},
		{lua.DebugLibName, lua.OpenDebug},
	} {
		L.Push(L.NewFunction(lib.fn))
		L.Push(lua.LString(lib.name))
		L.Call(1, 0)
	}
	for _, name := range []string{"dofile", "loadfile", "loadstring", "load", "require", "module", "collectgarbage", "newproxy"} {
		L.SetGlobal(name, lua.LNil)
	}
	r := L.NewTable()
	L.SetFuncs(r, map[string]lua.LGFunction{
		"call":               func(L *lua.LState) int { return luaRedisCall(L, sc.cur, true) },
		"pcall":              func(L *lua.LState) int { return luaRedisCall(L, sc.cur, false) },
		"error_reply":        luaErrorReply,
		"status_reply":       luaStatusReply,
		"sha1hex":            luaSHA1Hex,
		"log":                func(L *lua.LState) int { return 0 },
		"setresp":            luaSetResp,
		"set_repl":           func(L *lua.LState) int { return 0 },
		"replicate_commands": func(L *lua.LState) int { L.Push(lua.LTrue); return 1 },
		"breakpoint":         func(L *lua.LState) int { L.Push(lua.LFalse); return 1 },
		"debug":              func(L *lua.LState) int { return 0 },
	})
	for name, v := range map[string]int{"LOG_DEBUG": 0, "LOG_VERBOSE": 1, "LOG_NOTICE": 2, "LOG_WARNING": 3,
		"REPL_NONE": 0, "REPL_AOF": 1, "REPL_SLAVE": 2, "REPL_REPLICA": 2, "REPL_ALL": 3} {
		r.RawSetString(name, lua.LNumber(v))
	}
	L.SetGlobal("redis", r)
	// Globals: reading an undefined one or creating one is an error.
	mt := L.NewTable()
	mt.RawSetString("__index", L.NewFunction(func(L *lua.LState) int {
		L.RaiseError("Script attempted to access nonexistent global variable '%s'", L.CheckAny(2).String())
		return 0
	}))
	mt.RawSetString("__newindex", L.NewFunction(func(L *lua.LState) int {
		L.RaiseError("Attempt to modify a readonly table")
		return 0
	}))
	L.SetMetatable(L.G.Global, mt)
	return L
}

// raiseRedisError raises {err=msg} from a redis.* function, recording the
// calling line.
func raiseRedisError(L *lua.LState, msg string) int {
	t := L.NewTable()
	t.RawSetString("err", lua.LString(msg))
	L.Error(t, 1)
	return 0
}

// errorTable is {err="CODE message"} built as Redis's luaPushErrorBuff.
func errorTable(L *lua.LState, msg string) *lua.LTable {
	msg = strings.TrimRight(msg, "\r\n")
	if strings.HasPrefix(msg, "-") {
		if i := strings.IndexByte(msg, ' '); i >= 0 {
			msg = msg[1:i] + " " + strings.TrimRight(msg[i+1:], "\r\n")
		} else {
			msg = "ERR " + msg[1:]
		}
	} else {
		msg = "ERR " + msg
	}
	t := L.NewTable()
	t.RawSetString("err", lua.LString(msg))
	return t
}

func luaErrorReply(L *lua.LState) int {
	s, ok := L.Get(1).(lua.LString)
	if !ok || L.GetTop() != 1 {
		L.RaiseError("wrong number or type of arguments")
		return 0
	}
	msg := string(s)
	if !strings.HasPrefix(msg, "-") {
		msg = "-" + msg
	}
	L.Push(errorTable(L, msg))
	return 1
}

func luaStatusReply(L *lua.LState) int {
	s, ok := L.Get(1).(lua.LString)
	if !ok || L.GetTop() != 1 {
		L.RaiseError("wrong number or type of arguments")
		return 0
	}
	t := L.NewTable()
	t.RawSetString("ok", s)
	L.Push(t)
	return 1
}

func luaSHA1Hex(L *lua.LState) int {
	if L.GetTop() != 1 {
		L.RaiseError("wrong number of arguments")
		return 0
	}
	L.Push(lua.LString(sha1hex([]byte(lua.LVAsString(L.Get(1))))))
	return 1
}

func luaSetResp(L *lua.LState) int {
	if L.GetTop() != 1 {
		L.RaiseError("redis.setresp() requires one argument.")
		return 0
	}
	if n, ok := L.Get(1).(lua.LNumber); !ok || n != 2 {
		L.RaiseError("RESP version must be 2 in Damselfly scripts.")
	}
	return 0
}

// luaNumberString formats a Lua number as Lua 5.1's tostring (%.14g).
func luaNumberString(n lua.LNumber) string {
	return strconv.FormatFloat(float64(n), 'g', 14, 64)
}

// luaRedisCall implements redis.call (raise) and redis.pcall (return the
// error table).
func luaRedisCall(L *lua.LState, sr *scriptRun, raise bool) int {
	fail := func(msg string) int {
		if raise {
			return raiseRedisError(L, msg)
		}
		L.Push(errorTable(L, msg))
		return 1
	}
	n := L.GetTop()
	if n == 0 {
		return fail("ERR Please specify at least one argument for this redis lib call")
	}
	args := make([][]byte, n)
	for i := 1; i <= n; i++ {
		switch v := L.Get(i).(type) {
		case lua.LString:
			args[i-1] = []byte(v)
		case lua.LNumber:
			args[i-1] = []byte(luaNumberString(v))
		default:
			return fail("ERR Lua redis lib command arguments must be strings or integers")
		}
	}
	if sr == nil {
		return fail("ERR redis.call used outside a script")
	}
	reply := sr.c.scriptCall(sr, args)
	v := respToLua(L, reply)
	if t, ok := v.(*lua.LTable); ok && raise {
		if e, ok := t.RawGetString("err").(lua.LString); ok && len(reply) > 0 && reply[0] == '-' {
			return raiseRedisError(L, string(e))
		}
	}
	L.Push(v)
	return 1
}

// scriptCall runs one command for a script and returns its RESP2 reply.
func (c *Client) scriptCall(sr *scriptRun, args [][]byte) []byte {
	cmd := c.srv.cmds[lower(args[0])]
	if cmd == nil {
		return []byte("-ERR Unknown Redis command called from script\r\n")
	}
	if cmd.subs != nil && len(args) > 1 {
		if cmd = cmd.lookupSub(c, args); cmd == nil {
			return []byte("-ERR Unknown Redis command called from script\r\n")
		}
	}
	if !cmd.arityOK(args) {
		return []byte("-ERR Wrong number of args calling Redis command from script\r\n")
	}
	if cmd.noScript {
		return []byte("-ERR This Redis command is not allowed from script\r\n")
	}
	if sr.readOnly && cmd.write {
		return []byte("-ERR Write commands are not allowed from read-only scripts.\r\n")
	}
	savedOut, savedProto, savedProp := c.out, c.proto, c.propagate
	c.out, c.proto = nil, 2
	before := c.srv.dirty.Load()
	func() {
		defer func() {
			if r := recover(); r != nil {
				c.srv.log.Error("panic in command from script", "command", cmd.name, "panic", r)
				c.out = append(c.out[:0], "-ERR internal error while running '"+cmd.name+"'\r\n"...)
			}
		}()
		c.propagate = args
		cmd.fn(c, args)
	}()
	if c.srv.dirty.Load() != before {
		sr.run.wrote.Store(true)
	}
	reply := c.out
	c.out, c.proto, c.propagate = savedOut, savedProto, savedProp
	return reply
}

// respToLua converts one RESP2 reply to a Lua value with Redis's rules.
func respToLua(L *lua.LState, b []byte) lua.LValue {
	v, _ := parseRESPValue(L, b)
	return v
}

func parseRESPValue(L *lua.LState, b []byte) (lua.LValue, []byte) {
	if len(b) == 0 {
		return lua.LFalse, b
	}
	i := strings.Index(unsafeString(b), "\r\n")
	if i < 0 {
		return lua.LFalse, nil
	}
	line, rest := b[1:i], b[i+2:]
	switch b[0] {
	case '+':
		t := L.NewTable()
		t.RawSetString("ok", lua.LString(line))
		return t, rest
	case '-':
		t := L.NewTable()
		t.RawSetString("err", lua.LString(line))
		return t, rest
	case ':':
		n, _ := strconv.ParseInt(string(line), 10, 64)
		return lua.LNumber(n), rest
	case '$':
		n, _ := strconv.Atoi(string(line))
		if n < 0 || len(rest) < n+2 {
			return lua.LFalse, rest
		}
		return lua.LString(rest[:n]), rest[n+2:]
	case '*':
		n, _ := strconv.Atoi(string(line))
		if n < 0 {
			return lua.LFalse, rest
		}
		t := L.CreateTable(n, 0)
		for k := 0; k < n; k++ {
			var v lua.LValue
			v, rest = parseRESPValue(L, rest)
			t.RawSetInt(k+1, v)
		}
		return t, rest
	}
	return lua.LFalse, nil
}

// luaToReply writes a script's result with Redis's conversion rules.
func (c *Client) luaToReply(v lua.LValue, depth int) {
	switch x := v.(type) {
	case lua.LNumber:
		c.int(int64(x))
	case lua.LString:
		c.bulk([]byte(x))
	case lua.LBool:
		if x {
			c.int(1)
		} else {
			c.null()
		}
	case *lua.LTable:
		if e, ok := x.RawGetString("err").(lua.LString); ok {
			c.out = append(c.out, '-')
			c.out = append(c.out, oneLine(string(e))...)
			c.out = append(c.out, '\r', '\n')
			return
		}
		if s, ok := x.RawGetString("ok").(lua.LString); ok {
			c.simple(oneLine(string(s)))
			return
		}
		if depth > 1000 {
			c.err("ERR reached lua stack limit")
			return
		}
		n := 0
		for x.RawGetInt(n+1) != lua.LNil {
			n++
		}
		c.array(n)
		for k := 1; k <= n; k++ {
			c.luaToReply(x.RawGetInt(k), depth+1)
		}
	default:
		c.null()
	}
}
