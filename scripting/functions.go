package scripting

import (
	"context"
	"errors"
	"sort"
	"strings"
	"time"

	lua "github.com/yuin/gopher-lua"
)

// Function flags (redis.register_function's flags).
const (
	FlagNoWrites = 1 << iota
	FlagAllowOOM
	FlagAllowStale
	FlagNoCluster
	FlagAllowCrossSlot
)

var flagNames = []struct {
	name string
	bit  int
}{
	{"no-writes", FlagNoWrites}, {"allow-oom", FlagAllowOOM}, {"allow-stale", FlagAllowStale},
	{"no-cluster", FlagNoCluster}, {"allow-cross-slot-keys", FlagAllowCrossSlot},
}

// Library is a loaded FUNCTION library.
type Library struct {
	Name      string
	Code      string // the whole payload given to FUNCTION LOAD
	Functions []*Function
}

// Function is one registered function.
type Function struct {
	Name        string
	Description *string
	Flags       int
	Library     *Library
	fn          *lua.LFunction
}

// FlagNames lists the function's flags by name.
func (f *Function) FlagNames() []string {
	var out []string
	for _, fl := range flagNames {
		if f.Flags&fl.bit != 0 {
			out = append(out, fl.name)
		}
	}
	return out
}

// loadTimeout bounds a library's top-level code, as Redis's FUNCTION LOAD
// timeout.
const loadTimeout = 500 * time.Millisecond

// pending collects the functions a library registers while it loads.
type pending struct {
	funcs []*Function
	names map[string]bool
}

// parseMeta reads the "#!lua name=NAME" first line; code is the rest,
// starting with its newline so that line numbers stay those of payload.
func parseMeta(payload string) (name, code string, err error) {
	if !strings.HasPrefix(payload, "#!") {
		return "", "", errors.New("ERR Missing library metadata")
	}
	end := strings.IndexByte(payload, '\n')
	if end < 0 {
		return "", "", errors.New("ERR Invalid library metadata")
	}
	parts := strings.Fields(payload[2:end])
	if len(parts) == 0 {
		return "", "", errors.New("ERR Invalid library metadata")
	}
	engine := parts[0]
	gotName := false
	for _, p := range parts[1:] {
		if strings.HasPrefix(p, "name=") {
			if gotName {
				return "", "", errors.New("ERR Invalid metadata value, name argument was given multiple times")
			}
			name, gotName = p[len("name="):], true
			continue
		}
		return "", "", errors.New("ERR Invalid metadata value given: " + p)
	}
	if !gotName {
		return "", "", errors.New("ERR Library name was not given")
	}
	if !validName(name) {
		return "", "", errors.New("ERR Library names can only contain letters, numbers, or underscores(_) and must be at least one character long")
	}
	if !strings.EqualFold(engine, "lua") {
		return "", "", errors.New("ERR Engine '" + engine + "' not found")
	}
	return name, payload[end:], nil
}

func validName(s string) bool {
	if s == "" {
		return false
	}
	for _, ch := range []byte(s) {
		if !(ch >= 'a' && ch <= 'z' || ch >= 'A' && ch <= 'Z' || ch >= '0' && ch <= '9' || ch == '_') {
			return false
		}
	}
	return true
}

// LoadLibrary is FUNCTION LOAD [REPLACE]: it returns the library's name.
func (e *Engine) LoadLibrary(payload []byte, replace bool) (string, error) {
	e.runMu.Lock()
	defer e.runMu.Unlock()
	e.mu.Lock()
	defer e.mu.Unlock()
	lib, err := e.loadLocked(string(payload), replace, e.libs, e.funcs)
	if err != nil {
		return "", err
	}
	e.install(lib, e.libs, e.funcs)
	return lib.Name, nil
}

// loadLocked compiles and runs a library against the given registry
// (runMu and mu held); it does not install it.
func (e *Engine) loadLocked(payload string, replace bool, libs map[string]*Library, funcs map[string]*Function) (*Library, error) {
	name, code, err := parseMeta(payload)
	if err != nil {
		return nil, err
	}
	old := libs[name]
	if old != nil && !replace {
		return nil, errors.New("ERR Library '" + name + "' already exists")
	}
	p, err := compile([]byte(code), "user_function")
	if err != nil {
		return nil, errors.New("ERR Error compiling function: " + err.Error())
	}
	if e.fn == nil {
		e.fn = newState(e, "user_function")
	}
	st := e.fn
	L := st.L
	pend := &pending{names: map[string]bool{}}
	loadAPI := st.protect(newRedisTable(e, st, true))
	st.G.RawSetString("redis", loadAPI)
	st.loading = pend
	ctx, cancel := context.WithTimeout(context.Background(), loadTimeout)
	defer func() {
		cancel()
		st.loading = nil
		st.G.RawSetString("redis", st.redis)
	}()
	fn := L.NewFunctionFromProto(p)
	fn.Env = st.env
	top := L.GetTop()
	L.SetContext(ctx)
	err = func() (err error) {
		defer func() {
			if r := recover(); r != nil {
				err = errors.New("internal error: " + oneLine(panicText(r)))
			}
		}()
		L.Push(fn)
		return L.PCall(0, 0, nil)
	}()
	L.RemoveContext()
	L.SetTop(top)
	if err != nil {
		msg := err.Error()
		var apiErr *lua.ApiError
		if ctx.Err() != nil {
			msg = "FUNCTION LOAD timeout"
		} else if errors.As(err, &apiErr) {
			msg = errorText(apiErr.Object)
			if t, ok := apiErr.Object.(*lua.LTable); ok {
				if s, ok := t.RawGetString("err").(lua.LString); ok {
					msg = strings.TrimPrefix(string(s), "ERR ")
				}
			}
		}
		return nil, errors.New("ERR Error registering functions: ERR " + oneLine(msg))
	}
	if len(pend.funcs) == 0 {
		return nil, errors.New("ERR No functions registered")
	}
	for _, f := range pend.funcs {
		if other := funcs[strings.ToLower(f.Name)]; other != nil && other.Library != old {
			return nil, errors.New("ERR Function " + f.Name + " already exists")
		}
	}
	lib := &Library{Name: name, Code: payload, Functions: pend.funcs}
	for _, f := range pend.funcs {
		f.Library = lib
	}
	return lib, nil
}

// install puts lib in the registry, replacing a library of its name.
func (e *Engine) install(lib *Library, libs map[string]*Library, funcs map[string]*Function) {
	if old := libs[lib.Name]; old != nil {
		for _, f := range old.Functions {
			delete(funcs, strings.ToLower(f.Name))
		}
	}
	libs[lib.Name] = lib
	for _, f := range lib.Functions {
		funcs[strings.ToLower(f.Name)] = f
	}
}

// registerFunction is redis.register_function while a library loads.
func (e *Engine) registerFunction(L *lua.LState, st *state) int {
	pend := st.loading
	if pend == nil {
		L.Error(lua.LString("redis.register_function can only be called on FUNCTION LOAD command"), 0)
		return 0
	}
	fn, bad := newFunctionFromArgs(L)
	if bad == "" && pend.names[strings.ToLower(fn.Name)] {
		bad = "Function already exists in the library"
	}
	if bad != "" {
		L.Error(lua.LString(bad), 0)
		return 0
	}
	pend.names[strings.ToLower(fn.Name)] = true
	pend.funcs = append(pend.funcs, fn)
	return 0
}

// registerArgs are redis.register_function's arguments, given by position
// (name, callback) or as a table of named arguments.
type registerArgs struct {
	name, cb    lua.LValue
	flags, desc lua.LValue
}

// newFunctionFromArgs builds the function redis.register_function's
// arguments describe, or returns Redis's error message for them.
func newFunctionFromArgs(L *lua.LState) (*Function, string) {
	a := registerArgs{flags: lua.LNil, desc: lua.LNil}
	switch L.GetTop() {
	case 1:
		t, ok := L.Get(1).(*lua.LTable)
		if !ok {
			return nil, "calling redis.register_function with a single argument is only applicable to Lua table (representing named arguments)."
		}
		if bad := a.fromTable(t); bad != "" {
			return nil, bad
		}
	case 2:
		a.name, a.cb = L.Get(1), L.Get(2)
		if _, ok := a.name.(lua.LString); !ok {
			return nil, "first argument to redis.register_function must be a string"
		}
		if _, ok := a.cb.(*lua.LFunction); !ok {
			return nil, "second argument to redis.register_function must be a function"
		}
	default:
		return nil, "wrong number of arguments to redis.register_function"
	}
	ns, ok := a.name.(lua.LString)
	if !ok {
		return nil, "redis.register_function must get a function name argument"
	}
	f, ok := a.cb.(*lua.LFunction)
	if !ok {
		return nil, "redis.register_function must get a callback argument"
	}
	fn := &Function{Name: string(ns), fn: f}
	switch d := a.desc.(type) {
	case lua.LString:
		s := string(d)
		fn.Description = &s
	case *lua.LNilType:
	default:
		return nil, "description argument given to redis.register_function must be a string"
	}
	if bad := fn.setFlags(a.flags); bad != "" {
		return nil, bad
	}
	if !validName(fn.Name) {
		return nil, "Library names can only contain letters, numbers, or underscores(_) and must be at least one character long"
	}
	return fn, ""
}

// fromTable reads the named arguments of t; the last error seen wins, as
// in Redis.
func (a *registerArgs) fromTable(t *lua.LTable) (bad string) {
	t.ForEach(func(k, v lua.LValue) {
		ks, ok := k.(lua.LString)
		if !ok {
			bad = "named argument key given to redis.register_function is not a string"
			return
		}
		switch string(ks) {
		case "function_name":
			if _, ok := v.(lua.LString); !ok {
				bad = "function_name argument given to redis.register_function must be a string"
			}
			a.name = v
		case "callback":
			if _, ok := v.(*lua.LFunction); !ok {
				bad = "callback argument given to redis.register_function must be a function"
			}
			a.cb = v
		case "flags":
			a.flags = v
		case "description":
			a.desc = v
		default:
			bad = "unknown argument given to redis.register_function"
		}
	})
	return bad
}

// setFlags sets fn's flags from the flags argument (nil or a table of
// flag names).
func (fn *Function) setFlags(flags lua.LValue) string {
	switch fl := flags.(type) {
	case *lua.LTable:
		var bad bool
		fl.ForEach(func(_, v lua.LValue) {
			s, ok := v.(lua.LString)
			found := false
			for _, n := range flagNames {
				if ok && string(s) == n.name {
					fn.Flags |= n.bit
					found = true
				}
			}
			if !found {
				bad = true
			}
		})
		if bad {
			return "unknown flag given"
		}
	case *lua.LNilType:
	default:
		return "flags argument to redis.register_function must be a table representing function flags"
	}
	return ""
}

// Lookup returns the function called name (case-insensitive, as Redis's
// function names), or nil.
func (e *Engine) Lookup(name string) *Function {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.funcs[strings.ToLower(name)]
}

// CallFunction runs f (FCALL, FCALL_RO) and writes its result to req.Out.
func (e *Engine) CallFunction(f *Function, command [][]byte, fromPrimary bool, req Request) {
	e.runMu.Lock()
	defer e.runMu.Unlock()
	e.mu.Lock()
	current := e.funcs[strings.ToLower(f.Name)] == f
	e.mu.Unlock()
	if !current || e.fn == nil { // deleted or flushed since Lookup
		req.Out.Error("ERR Function not found")
		return
	}
	st := e.fn
	L := st.L
	args := []lua.LValue{stringsTable(L, req.Keys), stringsTable(L, req.Args)}
	e.run(st, f.fn, &Running{Name: f.Name, Command: command, FromPrimary: fromPrimary}, req, args)
}

// DeleteLibrary is FUNCTION DELETE.
func (e *Engine) DeleteLibrary(name string) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	lib := e.libs[name]
	if lib == nil {
		return errors.New("ERR Library not found")
	}
	for _, f := range lib.Functions {
		delete(e.funcs, strings.ToLower(f.Name))
	}
	delete(e.libs, name)
	return nil
}

// FlushFunctions is FUNCTION FLUSH: every library goes, and so does the
// Lua state that held them.
func (e *Engine) FlushFunctions() {
	e.runMu.Lock()
	defer e.runMu.Unlock()
	e.mu.Lock()
	defer e.mu.Unlock()
	e.libs, e.funcs = map[string]*Library{}, map[string]*Function{}
	if e.fn != nil {
		e.fn.L.Close()
		e.fn = nil
	}
}

// Libraries returns the libraries sorted by name, each with its functions
// sorted by name.
func (e *Engine) Libraries() []*Library {
	e.mu.Lock()
	defer e.mu.Unlock()
	out := make([]*Library, 0, len(e.libs))
	for _, l := range e.libs {
		out = append(out, l)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// Counts returns the number of libraries and functions (FUNCTION STATS).
func (e *Engine) Counts() (libs, funcs int) {
	e.mu.Lock()
	defer e.mu.Unlock()
	return len(e.libs), len(e.funcs)
}

// Restore policies of LoadLibraries (FUNCTION RESTORE).
const (
	PolicyAppend = iota
	PolicyReplace
	PolicyFlush
)

// LoadLibraries loads several library payloads at once (FUNCTION RESTORE,
// a dump's libraries): all or nothing. PolicyAppend fails on a library
// name that exists, PolicyReplace replaces it, PolicyFlush drops every
// library first. A clashing function name fails in every policy.
func (e *Engine) LoadLibraries(payloads []string, policy int) error {
	e.runMu.Lock()
	defer e.runMu.Unlock()
	e.mu.Lock()
	defer e.mu.Unlock()
	// Load into a registry of their own, then merge, as Redis does.
	newLibs, newFuncs := map[string]*Library{}, map[string]*Function{}
	for _, p := range payloads {
		lib, err := e.loadLocked(p, false, newLibs, newFuncs)
		if err != nil {
			return err
		}
		e.install(lib, newLibs, newFuncs)
	}
	libs, funcs := map[string]*Library{}, map[string]*Function{}
	if policy != PolicyFlush {
		for k, v := range e.libs {
			libs[k] = v
		}
		for k, v := range e.funcs {
			funcs[k] = v
		}
	}
	names := make([]string, 0, len(newLibs))
	for name := range newLibs {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		if old := libs[name]; old != nil {
			if policy != PolicyReplace {
				return errors.New("ERR Library " + name + " already exists")
			}
			for _, f := range old.Functions {
				delete(funcs, strings.ToLower(f.Name))
			}
			delete(libs, name)
		}
	}
	for _, name := range names {
		for _, f := range newLibs[name].Functions {
			if funcs[strings.ToLower(f.Name)] != nil {
				return errors.New("ERR Function " + f.Name + " already exists")
			}
		}
		e.install(newLibs[name], libs, funcs)
	}
	e.libs, e.funcs = libs, funcs
	return nil
}
