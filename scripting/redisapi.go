package scripting

import (
	"strconv"
	"strings"

	"github.com/damselflydb/damselfly/resp"
	lua "github.com/yuin/gopher-lua"
)

// RedisVersion is what redis.REDIS_VERSION reports.
const RedisVersion = "7.0.15"

// newRedisTable builds the redis table: the run-time API, or (forLoad) the
// API a FUNCTION LOAD library body sees, where only registration and
// logging exist and any other field is an error, as in Redis.
func newRedisTable(e *Engine, st *state, forLoad bool) *lua.LTable {
	L := st.L
	r := L.NewTable()
	funcs := map[string]lua.LGFunction{
		"log":          func(L *lua.LState) int { return luaLog(L) },
		"error_reply":  luaErrorReply,
		"status_reply": luaStatusReply,
		"sha1hex":      luaSHA1Hex,
		"setresp":      luaSetResp,
	}
	if forLoad {
		funcs["register_function"] = func(L *lua.LState) int { return e.registerFunction(L, st) }
	} else {
		funcs["call"] = func(L *lua.LState) int { return redisCall(L, st, true) }
		funcs["pcall"] = func(L *lua.LState) int { return redisCall(L, st, false) }
		funcs["set_repl"] = func(L *lua.LState) int { return 0 }
		funcs["replicate_commands"] = func(L *lua.LState) int { L.Push(lua.LTrue); return 1 }
		funcs["breakpoint"] = func(L *lua.LState) int { L.Push(lua.LFalse); return 1 }
		funcs["debug"] = func(L *lua.LState) int { return 0 }
		funcs["acl_check_cmd"] = func(L *lua.LState) int { return aclCheck(L, st) }
	}
	L.SetFuncs(r, funcs)
	for name, v := range map[string]int{"LOG_DEBUG": 0, "LOG_VERBOSE": 1, "LOG_NOTICE": 2, "LOG_WARNING": 3,
		"REPL_NONE": 0, "REPL_AOF": 1, "REPL_SLAVE": 2, "REPL_REPLICA": 2, "REPL_ALL": 3} {
		r.RawSetString(name, lua.LNumber(v))
	}
	r.RawSetString("REDIS_VERSION", lua.LString(RedisVersion))
	r.RawSetString("REDIS_VERSION_NUM", lua.LNumber(0x07000f))
	if forLoad {
		mt := L.NewTable()
		mt.RawSetString("__index", L.NewFunction(func(L *lua.LState) int {
			L.RaiseError("Script attempted to access nonexistent global variable '%s'", L.CheckAny(2).String())
			return 0
		}))
		r.Metatable = mt
	}
	return r
}

func luaLog(L *lua.LState) int {
	if L.GetTop() < 2 {
		L.RaiseError("redis.log() requires two arguments or more.")
	}
	if _, ok := L.Get(1).(lua.LNumber); !ok {
		L.RaiseError("First argument must be a number (log level).")
	}
	return 0
}

func aclCheck(L *lua.LState, st *state) int {
	if L.GetTop() == 0 {
		L.RaiseError("Please specify at least one argument for this redis lib call")
	}
	L.Push(lua.LTrue)
	return 1
}

// raiseRedisError raises {err=msg}.
func raiseRedisError(L *lua.LState, msg string) int {
	t := L.NewTable()
	t.RawSetString("err", lua.LString(msg))
	L.Error(t, 1)
	return 0
}

// errorTable is {err="CODE message"} built from a RESP error line.
func errorTable(L *lua.LState, msg string) *lua.LTable {
	msg = strings.TrimRight(msg, "\r\n")
	if strings.HasPrefix(msg, "-") {
		if i := strings.IndexByte(msg, ' '); i >= 0 {
			msg = msg[1:i] + " " + msg[i+1:]
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
	L.Push(lua.LString(SHA1Hex([]byte(lua.LVAsString(L.Get(1))))))
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

// numberString formats a Lua number as Lua 5.1's tostring (%.14g).
func numberString(n lua.LNumber) string {
	return strconv.FormatFloat(float64(n), 'g', 14, 64)
}

// redisCall implements redis.call (raise) and redis.pcall (return the
// error table).
func redisCall(L *lua.LState, st *state, raise bool) int {
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
			args[i-1] = []byte(numberString(v))
		default:
			return fail("ERR Lua redis lib command arguments must be strings or integers")
		}
	}
	r := st.cur
	if r == nil {
		return fail("ERR redis.call used outside a script")
	}
	reply, wrote := r.req.Caller.Call(args)
	if wrote {
		r.rs.wrote.Store(true)
	}
	v := parseRESP(L, reply)
	if t, ok := v.(*lua.LTable); ok && raise && len(reply) > 0 && reply[0] == '-' {
		if e, ok := t.RawGetString("err").(lua.LString); ok {
			return raiseRedisError(L, string(e))
		}
	}
	L.Push(v)
	return 1
}

// parseRESP converts one RESP2 reply to a Lua value with Redis's rules.
func parseRESP(L *lua.LState, b []byte) lua.LValue {
	v, err := resp.NewBytesReader(b).ReadValue()
	if err != nil {
		return lua.LFalse
	}
	return luaValue(L, v)
}

func luaValue(L *lua.LState, v resp.Value) lua.LValue {
	switch v.Type {
	case '+':
		t := L.NewTable()
		t.RawSetString("ok", lua.LString(v.Str))
		return t
	case '-':
		t := L.NewTable()
		t.RawSetString("err", lua.LString(v.Str))
		return t
	case ':':
		return lua.LNumber(v.Int)
	case '$':
		if v.Int < 0 {
			return lua.LFalse
		}
		return lua.LString(v.Str)
	case '*':
		if v.Int < 0 {
			return lua.LFalse
		}
		t := L.CreateTable(len(v.Elems), 0)
		for k, e := range v.Elems {
			t.RawSetInt(k+1, luaValue(L, e))
		}
		return t
	}
	return lua.LFalse
}

// toReply writes a script's result with Redis's conversion rules: numbers
// truncate to integers, tables become arrays up to the first nil,
// {ok=}/{err=} become status/error replies, false becomes nil, true 1.
func toReply(out Replier, v lua.LValue, depth int) {
	switch x := v.(type) {
	case lua.LNumber:
		out.Int(int64(x))
	case lua.LString:
		out.Bulk([]byte(x))
	case lua.LBool:
		if x {
			out.Int(1)
		} else {
			out.Null()
		}
	case *lua.LTable:
		if e, ok := x.RawGetString("err").(lua.LString); ok {
			out.Error(oneLine(string(e)))
			return
		}
		if s, ok := x.RawGetString("ok").(lua.LString); ok {
			out.Status(oneLine(string(s)))
			return
		}
		if depth > 1000 {
			out.Error("ERR reached lua stack limit")
			return
		}
		n := 0
		for x.RawGetInt(n+1) != lua.LNil {
			n++
		}
		out.Array(n)
		for k := 1; k <= n; k++ {
			toReply(out, x.RawGetInt(k), depth+1)
		}
	default:
		out.Null()
	}
}
