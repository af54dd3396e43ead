package scripting

import (
	lua "github.com/yuin/gopher-lua"
)

// state is one Lua state with Redis's libraries and read-only globals.
type state struct {
	L *lua.LState
	// G is the real global table; env is its read-only proxy, the
	// environment every script and library function runs in.
	G, env *lua.LTable
	// real maps each read-only proxy to the table it shows.
	real map[*lua.LTable]*lua.LTable
	// redis is the (proxied) redis table scripts see at run time.
	redis *lua.LTable
	cur   *run // the run in progress (nil between runs)
	// loading collects register_function calls during FUNCTION LOAD.
	loading *pending
}

const readonlyMsg = "Attempt to modify a readonly table"

// newState makes a Lua state as Redis 7.0 offers it to scripts; chunk
// names errors ("user_script" or "user_function").
func newState(e *Engine, chunk string) *state {
	L := lua.NewState(lua.Options{SkipOpenLibs: true})
	st := &state{L: L, G: L.G.Global, real: map[*lua.LTable]*lua.LTable{}}
	st.openLibraries(e)
	st.guardRawOperations()
	st.protectLibraries()
	return st
}

// openLibraries opens the libraries Redis 7.0 offers scripts, without the
// globals it removes.
func (st *state) openLibraries(e *Engine) {
	L := st.L
	for _, lib := range []struct {
		name string
		fn   lua.LGFunction
	}{
		{lua.BaseLibName, lua.OpenBase},
		{lua.TabLibName, lua.OpenTable},
		{lua.StringLibName, lua.OpenString},
		{lua.MathLibName, lua.OpenMath},
		{lua.CoroutineLibName, lua.OpenCoroutine},
	} {
		L.Push(L.NewFunction(lib.fn))
		L.Push(lua.LString(lib.name))
		L.Call(1, 0)
	}
	G := st.G
	for _, name := range []string{"print", "getfenv", "setfenv", "dofile", "loadfile", "require", "module",
		"newproxy", "_printregs", "package", "debug", "os", "io", "channel"} {
		G.RawSetString(name, lua.LNil)
	}
	G.RawSetString("_VERSION", lua.LString("Lua 5.1"))
	G.RawSetString("gcinfo", L.NewFunction(func(L *lua.LState) int {
		L.Push(lua.LNumber(0))
		return 1
	}))
	G.RawSetString("cjson", openCJSON(L))
	G.RawSetString("bit", openBit(L))
	G.RawSetString("struct", openStruct(L))
	G.RawSetString("cmsgpack", openCMsgpack(L))
	G.RawSetString("redis", newRedisTable(e, st, false))
}

// guardRawOperations wraps the raw operations so that they refuse the
// read-only tables or see through their proxies, and the loaders so that
// their functions run in the read-only environment.
func (st *state) guardRawOperations() {
	L, G := st.L, st.G
	rawset := G.RawGetString("rawset").(*lua.LFunction)
	G.RawSetString("rawset", L.NewFunction(func(L *lua.LState) int {
		if t, ok := L.Get(1).(*lua.LTable); ok && st.real[t] != nil {
			L.Error(lua.LString(readonlyMsg), 0)
		}
		return st.callThrough(rawset)
	}))
	setmt := G.RawGetString("setmetatable").(*lua.LFunction)
	G.RawSetString("setmetatable", L.NewFunction(func(L *lua.LState) int {
		if t, ok := L.Get(1).(*lua.LTable); ok && st.real[t] != nil {
			L.Error(lua.LString(readonlyMsg), 0)
		}
		return st.callThrough(setmt)
	}))
	for _, name := range []string{"loadstring", "load"} {
		orig := G.RawGetString(name).(*lua.LFunction)
		G.RawSetString(name, L.NewFunction(func(L *lua.LState) int {
			n := st.callThrough(orig)
			if f, ok := L.Get(-n).(*lua.LFunction); ok && n > 0 {
				f.Env = st.env
			}
			return n
		}))
	}
	// The table library's writers refuse the read-only tables too.
	if tlib, ok := G.RawGetString("table").(*lua.LTable); ok {
		for _, name := range []string{"insert", "remove", "sort", "setn"} {
			orig, ok := tlib.RawGetString(name).(*lua.LFunction)
			if !ok {
				continue
			}
			tlib.RawSetString(name, L.NewFunction(func(L *lua.LState) int {
				if t, ok := L.Get(1).(*lua.LTable); ok && st.real[t] != nil {
					L.Error(lua.LString(readonlyMsg), 0)
				}
				return st.callThrough(orig)
			}))
		}
	}
	// Iteration sees through the proxies.
	unproxy := func(L *lua.LState, i int) {
		if t, ok := L.Get(i).(*lua.LTable); ok {
			if r := st.real[t]; r != nil {
				L.Replace(i, r)
			}
		}
	}
	for _, name := range []string{"pairs", "ipairs", "next", "rawget"} {
		orig := G.RawGetString(name).(*lua.LFunction)
		G.RawSetString(name, L.NewFunction(func(L *lua.LState) int {
			if L.GetTop() >= 1 {
				unproxy(L, 1)
			}
			return st.callThrough(orig)
		}))
	}
}

// protectLibraries makes every library table, the string metatable and
// the globals read-only.
func (st *state) protectLibraries() {
	L, G := st.L, st.G
	// Every library table becomes read-only, and so does the string
	// metatable (getmetatable('') answers its proxy).
	for _, name := range []string{"string", "table", "math", "coroutine", "cjson", "bit", "struct", "cmsgpack", "redis"} {
		if t, ok := G.RawGetString(name).(*lua.LTable); ok {
			G.RawSetString(name, st.protect(t))
		}
	}
	st.redis = G.RawGetString("redis").(*lua.LTable)
	if smt, ok := L.GetMetatable(lua.LString("")).(*lua.LTable); ok {
		smt.RawSetString("__index", G.RawGetString("string"))
		smt.RawSetString("__metatable", st.protect(smt))
	}

	// Globals: reading an undefined one or creating one is an error.
	gmt := L.NewTable()
	gmt.RawSetString("__index", L.NewFunction(func(L *lua.LState) int {
		L.RaiseError("Script attempted to access nonexistent global variable '%s'", L.CheckAny(2).String())
		return 0
	}))
	L.SetMetatable(G, gmt)
	st.env = st.protect(G)
	G.RawSetString("_G", st.env)
}

// protect returns a read-only proxy of t: reads go to t, writes fail.
func (st *state) protect(t *lua.LTable) *lua.LTable {
	L := st.L
	p := L.NewTable()
	mt := L.NewTable()
	mt.RawSetString("__index", t)
	mt.RawSetString("__newindex", L.NewFunction(func(L *lua.LState) int {
		L.RaiseError(readonlyMsg)
		return 0
	}))
	mt.RawSetString("__len", L.NewFunction(func(L *lua.LState) int {
		L.Push(lua.LNumber(t.Len()))
		return 1
	}))
	mt.RawSetString("__metatable", lua.LFalse)
	p.Metatable = mt
	st.real[p] = t
	return p
}

// callThrough calls f with the current arguments and returns its results.
func (st *state) callThrough(f *lua.LFunction) int {
	L := st.L
	n := L.GetTop()
	L.Insert(f, 1)
	L.Call(n, lua.MultRet)
	return L.GetTop()
}
