package scripting

import (
	"context"
	"crypto/sha1"
	"encoding/hex"
	"errors"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	lua "github.com/yuin/gopher-lua"
	"github.com/yuin/gopher-lua/parse"
)

// Caller runs commands for a script: the server implements it.
type Caller interface {
	// Call runs one command and returns its RESP2 reply, and whether it
	// changed the dataset (after which the script cannot be killed).
	Call(args [][]byte) (reply []byte, wrote bool)
}

// Replier receives a script's result, converted with Redis's rules.
type Replier interface {
	Int(n int64)
	Bulk(b []byte)
	Null()
	Array(n int)
	Status(s string)
	Error(s string) // "CODE message", one line
}

// Request is one run of a script or function.
type Request struct {
	Caller   Caller
	Out      Replier
	Keys     [][]byte
	Args     [][]byte
	ReadOnly bool // EVAL_RO/FCALL_RO or a no-writes function: writes refused
}

// Running describes the script in progress (SCRIPT KILL, FUNCTION STATS).
type Running struct {
	Eval    bool   // an EVAL script (else a function)
	Name    string // the function's name, or the script's SHA1
	Command [][]byte
	Start   time.Time
	// FromPrimary marks a script run for the replication stream, which
	// cannot be killed.
	FromPrimary bool

	cancel context.CancelFunc
	wrote  atomic.Bool
	killed atomic.Bool
}

// Abort stops the script even if it has written (SHUTDOWN NOSAVE).
func (r *Running) Abort() {
	r.killed.Store(true)
	r.cancel()
}

// Wrote reports whether the script has changed the dataset.
func (r *Running) Wrote() bool { return r.wrote.Load() }

// Engine holds the script cache, the function libraries and the two Lua
// states. Its methods are safe for concurrent use; runs are serialized.
type Engine struct {
	mu      sync.Mutex
	scripts map[string]*evalScript // by lower-case SHA1 hex
	libs    map[string]*Library
	funcs   map[string]*Function

	runMu   sync.Mutex // one run at a time; guards the states
	eval    *state
	fn      *state
	running atomic.Pointer[Running]
}

// New returns an empty engine.
func New() *Engine {
	return &Engine{scripts: map[string]*evalScript{}, libs: map[string]*Library{}, funcs: map[string]*Function{}}
}

// SHA1Hex is the lower-case hex SHA1 of b (script names).
func SHA1Hex(b []byte) string {
	h := sha1.Sum(b)
	return hex.EncodeToString(h[:])
}

// evalScript is a cached EVAL script.
type evalScript struct {
	proto *lua.FunctionProto
	flags int
	// compat: no "#!lua" line, so Redis 6's rules (no flags) apply.
	compat bool
}

// Compile compiles and caches an EVAL script body; it returns its SHA1.
// A first line "#!lua [flags=f1,f2]" sets the script's flags (Redis 7); it
// is not compiled, but its line still counts.
func (e *Engine) Compile(body []byte) (string, error) {
	sha := SHA1Hex(body)
	e.mu.Lock()
	s := e.scripts[sha]
	e.mu.Unlock()
	if s != nil {
		return sha, nil
	}
	s = &evalScript{compat: true}
	code := body
	if strings.HasPrefix(string(body), "#!") {
		flags, n, err := parseShebang(string(body))
		if err != nil {
			return sha, err
		}
		s.flags, s.compat, code = flags, false, body[n:]
	}
	p, err := compile(code, "user_script")
	if err != nil {
		return sha, errors.New("ERR Error compiling script (new function): " + err.Error())
	}
	s.proto = p
	e.mu.Lock()
	e.scripts[sha] = s
	e.mu.Unlock()
	return sha, nil
}

// parseShebang reads an EVAL script's "#!lua flags=..." line; n is its
// length (without the newline).
func parseShebang(body string) (flags, n int, err error) {
	n = strings.IndexByte(body, '\n')
	if n < 0 {
		return 0, 0, errors.New("ERR Invalid script shebang")
	}
	parts := strings.Fields(body[:n])
	if len(parts) == 0 {
		return 0, 0, errors.New("ERR Invalid engine in script shebang")
	}
	if parts[0] != "#!lua" {
		return 0, 0, errors.New("ERR Unexpected engine in script shebang: " + parts[0])
	}
	for _, p := range parts[1:] {
		v, ok := strings.CutPrefix(p, "flags=")
		if !ok {
			return 0, 0, errors.New("ERR Unknown lua shebang option: " + p)
		}
		for _, f := range strings.Split(v, ",") {
			found := false
			for _, fl := range flagNames {
				if f == fl.name {
					flags |= fl.bit
					found = true
				}
			}
			if !found {
				return 0, 0, errors.New("ERR Unexpected flag in script shebang: " + f)
			}
		}
	}
	return flags, n, nil
}

// ScriptFlags returns a cached script's flags, and whether it has no
// shebang line (compat); ok is false when it is not cached.
func (e *Engine) ScriptFlags(sha string) (flags int, compat, ok bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	s := e.scripts[strings.ToLower(sha)]
	if s == nil {
		return 0, false, false
	}
	return s.flags, s.compat, true
}

func compile(body []byte, name string) (*lua.FunctionProto, error) {
	chunk, err := parse.Parse(strings.NewReader(string(body)), name)
	if err == nil {
		var p *lua.FunctionProto
		if p, err = lua.Compile(chunk, name); err == nil {
			return p, nil
		}
	}
	return nil, errors.New(compileMessage(err, body, name))
}

// compileMessage renders a gopher-lua compile error as Lua 5.1 would:
// "NAME:LINE: message near 'token'".
func compileMessage(err error, body []byte, name string) string {
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
		return name + ":" + strconv.Itoa(line) + ": " + msg + " near '" + tok + "'"
	}
	return oneLine(err.Error())
}

// Exists reports whether a script with this SHA1 is cached.
func (e *Engine) Exists(sha string) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.scripts[strings.ToLower(sha)] != nil
}

// ScriptCount is the number of cached EVAL scripts.
func (e *Engine) ScriptCount() int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return len(e.scripts)
}

// FlushScripts empties the script cache (SCRIPT FLUSH).
func (e *Engine) FlushScripts() {
	e.mu.Lock()
	e.scripts = map[string]*evalScript{}
	e.mu.Unlock()
}

// ErrNoScript is EVALSHA's answer for an unknown SHA1.
var ErrNoScript = errors.New("NOSCRIPT No matching script. Please use EVAL.")

// RunScript runs the cached script sha (EVAL, EVALSHA) and writes its
// result (or its error) to req.Out. It returns ErrNoScript, with nothing
// written, when the script is not cached.
func (e *Engine) RunScript(sha string, command [][]byte, fromPrimary bool, req Request) error {
	sha = strings.ToLower(sha)
	e.mu.Lock()
	s := e.scripts[sha]
	e.mu.Unlock()
	if s == nil {
		return ErrNoScript
	}
	e.runMu.Lock()
	defer e.runMu.Unlock()
	if e.eval == nil {
		e.eval = newState(e, "user_script")
	}
	st := e.eval
	fn := st.L.NewFunctionFromProto(s.proto)
	fn.Env = st.env
	st.G.RawSetString("KEYS", stringsTable(st.L, req.Keys))
	st.G.RawSetString("ARGV", stringsTable(st.L, req.Args))
	e.run(st, fn, &Running{Eval: true, Name: sha, Command: command, FromPrimary: fromPrimary}, req, nil)
	return nil
}

// run is one script or function run on st; args, when non-nil, are the
// function's arguments (keys and args tables).
func (e *Engine) run(st *state, fn *lua.LFunction, rs *Running, req Request, args []lua.LValue) {
	L := st.L
	ctx, cancel := context.WithCancel(context.Background())
	rs.cancel, rs.Start = cancel, time.Now()
	e.running.Store(rs)
	r := &run{e: e, st: st, req: req, rs: rs}
	st.cur = r
	defer func() {
		st.cur = nil
		e.running.Store(nil)
		cancel()
	}()
	handler := L.NewFunction(func(L *lua.LState) int {
		// Record where the error happened: the innermost Lua frame.
		for level := 0; level < 8; level++ {
			dbg, ok := L.GetStack(level)
			if !ok {
				break
			}
			if _, err := L.GetInfo("Sl", dbg, lua.LNil); err == nil && dbg.CurrentLine > 0 {
				r.errLine = dbg.CurrentLine
				break
			}
		}
		L.Push(L.Get(1))
		return 1
	})
	top := L.GetTop()
	L.SetContext(ctx)
	L.Push(fn)
	for _, a := range args {
		L.Push(a)
	}
	err := func() (err error) {
		defer func() {
			if p := recover(); p != nil {
				err = errors.New("internal error in script: " + oneLine(panicText(p)))
			}
		}()
		return L.PCall(len(args), 1, handler)
	}()
	L.RemoveContext()
	if err != nil {
		L.SetTop(top)
		r.fail(err)
		return
	}
	ret := L.Get(-1)
	L.SetTop(top)
	toReply(req.Out, ret, 0)
}

// run is the state of one execution, reachable from the redis.* functions.
type run struct {
	e       *Engine
	st      *state
	req     Request
	rs      *Running
	errLine int // line where the error being raised happened
}

// fail answers a failed script as Redis 7.0 does:
// "<code> <message> script: <name>, on @<chunk>:<line>."
func (r *run) fail(err error) {
	var msg string
	var apiErr *lua.ApiError
	switch {
	case r.rs.killed.Load():
		msg = "ERR Script killed by user with SCRIPT KILL..."
	case errors.As(err, &apiErr):
		if t, ok := apiErr.Object.(*lua.LTable); ok {
			if e, ok := t.RawGetString("err").(lua.LString); ok {
				msg = string(e)
			}
		}
		if msg == "" {
			msg = "ERR " + errorText(apiErr.Object)
		}
	default:
		msg = "ERR " + err.Error()
	}
	line := r.errLine
	if line == 0 {
		line = 1
	}
	chunk := "user_script"
	if !r.rs.Eval {
		chunk = "user_function"
	}
	r.req.Out.Error(oneLine(strings.TrimRight(msg, "\r\n")) + " script: " + r.rs.Name + ", on @" + chunk + ":" + strconv.Itoa(line) + ".")
}

// Busy returns the script in progress, or nil.
func (e *Engine) Busy() *Running { return e.running.Load() }

// Kill stops the running script (SCRIPT KILL when eval, FUNCTION KILL
// otherwise) or says why it cannot, with Redis's error texts.
func (e *Engine) Kill(eval bool) error {
	r := e.running.Load()
	switch {
	case r == nil:
		return errors.New("NOTBUSY No scripts in execution right now.")
	case r.FromPrimary:
		return errors.New("UNKILLABLE The busy script was sent by a master instance in the context of replication and cannot be killed.")
	case r.wrote.Load():
		return errors.New("UNKILLABLE Sorry the script already executed write commands against the dataset. You can either wait the script termination or kill the server in a hard way using the SHUTDOWN NOSAVE command.")
	case eval && !r.Eval:
		return errors.New(BusyFunction)
	case !eval && r.Eval:
		return errors.New(BusyEval)
	}
	r.killed.Store(true)
	r.cancel()
	return nil
}

// Redis's -BUSY replies while an EVAL script or a function runs.
const (
	BusyEval     = "BUSY Redis is busy running a script. You can only call SCRIPT KILL or SHUTDOWN NOSAVE."
	BusyFunction = "BUSY Redis is busy running a script. You can only call FUNCTION KILL or SHUTDOWN NOSAVE."
)

func panicText(v any) string {
	if e, ok := v.(error); ok {
		return e.Error()
	}
	if s, ok := v.(string); ok {
		return s
	}
	return "panic"
}

// errorText is the text of a Lua error value (without gopher-lua's
// traceback).
func errorText(v lua.LValue) string {
	if v == nil || v == lua.LNil {
		return "nil"
	}
	s := v.String()
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
