package server

// Scripting commands: EVAL, EVALSHA, EVAL_RO, EVALSHA_RO, SCRIPT, and the
// server's side of package scripting (which owns the Lua states, the script
// cache and the FUNCTION libraries; function.go has FUNCTION and FCALL).
//
// Design and invariants:
//   - A script runs atomically: it locks every shard (ascending order) for
//     its whole run and marks them held (as EXEC does, so redis.call's
//     commands lock nothing again). Scripts are replicated as their
//     effects, wrapped in MULTI/EXEC when there are several (multi.go).
//   - No client ever blocks an event loop behind a script. Before a script
//     takes its locks it publishes itself (scriptCache.busy) and waits until
//     no event loop is inside a batch of commands (loopGate: each loop marks
//     itself active around a batch, and every command checks busy after
//     that mark, a Dekker handshake on sequentially consistent atomics). A
//     loop client whose command meets a busy script is detached to its own
//     goroutine, which waits for the script's end until busy-reply-threshold
//     (alias lua-time-limit) has passed since it started, and then answers
//     -BUSY, as Redis does. The commands Redis allows meanwhile (SCRIPT
//     KILL, FUNCTION KILL and STATS, SHUTDOWN NOSAVE, AUTH, HELLO, MULTI...)
//     run at once; none of them takes a shard lock. SHUTDOWN NOSAVE stops
//     the script even when it has written. The primary's stream waits for
//     the script without a threshold.
//   - redis.call refuses the commands Redis flags noscript (from the
//     command table's flags, and Redis 7.0's own list as a floor), writes
//     from read-only scripts, and writes on a replica.

import (
	"errors"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/damselflydb/damselfly/netpoll"
	"github.com/damselflydb/damselfly/scripting"
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
	registerFunctions(reg)
}

// defaultBusyThreshold is busy-reply-threshold's default (5 s).
const defaultBusyThreshold = 5000

// scriptCache is the server's scripting state: the engine, the script in
// progress and the event loops' gates.
type scriptCache struct {
	*scripting.Engine
	thresholdMs atomic.Int64 // busy-reply-threshold
	gateMu      sync.Mutex   // held by the running script, from publish to end
	busy        atomic.Pointer[busyScript]
	gates       sync.Map // *netpoll.Loop -> *loopGate
}

// busyScript is the script in progress as other clients see it.
type busyScript struct {
	owner *Client
	eval  bool
	start time.Time
	done  chan struct{}
}

// loopGate marks an event loop that is running a batch of commands.
type loopGate struct {
	active atomic.Int32
	_      [60]byte
}

func newScriptCache() *scriptCache {
	sc := &scriptCache{Engine: scripting.New()}
	sc.thresholdMs.Store(defaultBusyThreshold)
	return sc
}

// gateOf returns loop l's gate.
func (sc *scriptCache) gateOf(l *netpoll.Loop) *loopGate {
	g, _ := sc.gates.LoadOrStore(l, &loopGate{})
	return g.(*loopGate)
}

// begin publishes a script about to run and waits until no event loop is
// inside a batch; from then on every loop detaches the clients whose
// commands meet it. end must follow.
func (sc *scriptCache) begin(c *Client, eval bool) *busyScript {
	sc.gateMu.Lock()
	b := &busyScript{owner: c, eval: eval, start: time.Now(), done: make(chan struct{})}
	sc.busy.Store(b)
	sc.gates.Range(func(_, v any) bool {
		g := v.(*loopGate)
		for spin := 0; g.active.Load() != 0; spin++ {
			if spin < 100 {
				continue
			}
			time.Sleep(20 * time.Microsecond)
		}
		return true
	})
	return b
}

func (sc *scriptCache) end(b *busyScript) {
	sc.busy.Store(nil)
	close(b.done)
	sc.gateMu.Unlock()
}

// beginTxScripts publishes an EXEC whose queue runs a script as busy
// before it locks its shards (see begin); nil when it runs none.
func (c *Client) beginTxScripts(queue []queuedCmd) *busyScript {
	for _, q := range queue {
		switch q.cmd.name {
		case "eval", "evalsha", "eval_ro", "evalsha_ro":
			return c.srv.scripts.begin(c, true)
		case "fcall", "fcall_ro":
			return c.srv.scripts.begin(c, false)
		}
	}
	return nil
}

// allowedWhileBusy reports whether a command runs while a script is busy
// (Redis's allow-busy commands, less those that would take a shard lock).
func allowedWhileBusy(cmd *command, args [][]byte) bool {
	switch cmd.name {
	case "auth", "hello", "quit", "reset", "replconf", "multi", "discard", "unwatch",
		"script|kill", "function|kill", "function|stats":
		return true
	case "script", "function":
		return len(args) == 2 && (eq(args[1], "kill") || (cmd.name == "function" && eq(args[1], "stats")))
	case "shutdown":
		for _, a := range args[1:] {
			if eq(a, "nosave") {
				return true
			}
		}
	}
	return false
}

// waitBusy runs before a command while a script is busy: it reports
// whether the command may run now. On an event loop it detaches the
// client (false, nothing written); on a goroutine it waits for the script
// until the busy threshold and then answers -BUSY (false).
func (c *Client) waitBusy(cmd *command, args [][]byte) bool {
	sc := c.srv.scripts
	for {
		b := sc.busy.Load()
		if b == nil || b.owner == c {
			return true
		}
		if allowedWhileBusy(cmd, args) {
			if cmd.name == "shutdown" {
				sc.abort()
			}
			return true
		}
		if c.loop != nil {
			c.detach = true
			return false
		}
		if c.fromPrimary {
			<-b.done
			continue
		}
		if d := time.Until(b.start.Add(time.Duration(sc.thresholdMs.Load()) * time.Millisecond)); d > 0 {
			t := time.NewTimer(d)
			select {
			case <-b.done:
				t.Stop()
				continue
			case <-t.C:
			}
		}
		select {
		case <-b.done:
			continue
		default:
		}
		if b.eval {
			c.err(scripting.BusyEval)
		} else {
			c.err(scripting.BusyFunction)
		}
		c.txFlag()
		return false
	}
}

// abort stops the running script whatever it did (SHUTDOWN NOSAVE).
func (sc *scriptCache) abort() {
	if r := sc.Busy(); r != nil {
		r.Abort()
	}
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
		sha, err := sc.Compile(args[2])
		if err != nil {
			c.err(err.Error())
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
			if sc.Exists(string(a)) {
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
		sc.FlushScripts()
		c.ok()
	case "kill":
		if len(args) != 2 {
			c.err("ERR wrong number of arguments for 'script|kill' command")
			return
		}
		if err := sc.Kill(true); err != nil {
			c.err(err.Error())
			return
		}
		c.ok()
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

// parseNumKeys checks the numkeys argument of EVAL and FCALL (at args[2]).
func (c *Client) parseNumKeys(args [][]byte, notInt string) (int, bool) {
	nk, ok := parseInt(args[2])
	if !ok {
		c.err(notInt)
		return 0, false
	}
	if nk > int64(len(args)-3) {
		c.err("ERR Number of keys can't be greater than number of args")
		return 0, false
	}
	if nk < 0 {
		c.err("ERR Number of keys can't be negative")
		return 0, false
	}
	return int(nk), true
}

// evalGeneric is EVAL/EVALSHA(_RO): args are [cmd, script|sha, numkeys, keys..., args...].
func (c *Client) evalGeneric(args [][]byte, bySHA, readOnly bool) {
	nk, ok := c.parseNumKeys(args, notIntegerText)
	if !ok {
		return
	}
	sc := c.srv.scripts
	var sha string
	if bySHA {
		sha = string(args[1])
		if !sc.Exists(sha) {
			c.err(scripting.ErrNoScript.Error())
			return
		}
	} else {
		var err error
		if sha, err = sc.Compile(args[1]); err != nil {
			c.err(err.Error())
			return
		}
	}
	flags, compat, _ := sc.ScriptFlags(sha)
	if !compat && !c.prepareScript(flags, readOnly) {
		return
	}
	ro := readOnly || !compat && flags&scripting.FlagNoWrites != 0
	caller := &scriptCaller{c: c, ro: ro, allowOOM: !compat && flags&scripting.FlagAllowOOM != 0}
	req := scripting.Request{Caller: caller, Out: (*scriptReplier)(c), Keys: args[3 : 3+nk], Args: args[3+nk:], ReadOnly: ro}
	c.runLocked(true, func() {
		if err := sc.RunScript(sha, args, c.fromPrimary, req); err != nil {
			c.err(err.Error())
		}
	})
}

// prepareScript applies a flagged script's (a function's, or an EVAL
// script's with a "#!lua" line) checks before it runs, as Redis's
// scriptPrepareForRun; false means it answered an error.
func (c *Client) prepareScript(flags int, ro bool) bool {
	if flags&scripting.FlagNoWrites == 0 {
		if c.srv.repl.IsReplica() && !c.fromPrimary {
			c.err("READONLY You can't write against a read only replica.") // processCommand's check comes first in Redis
			return false
		}
		if ro {
			c.err("ERR Can not execute a script with write flag using *_ro command.")
			return false
		}
	}
	if max := c.srv.cfg.maxMemory.Load(); max > 0 && flags&(scripting.FlagAllowOOM|scripting.FlagNoWrites) == 0 &&
		!c.fromPrimary && c.srv.usedMem.Load() > max {
		c.err("OOM allow-oom flag is not set on the script, can not run it when used memory > 'maxmemory'")
		return false
	}
	return true
}

const notIntegerText = "ERR value is not an integer or out of range"

// runLocked runs a script with every shard held: inside EXEC they are
// already held (EVAL and FCALL have movable keys); otherwise the script is
// published as busy, the shards are locked, and its writes are journalled
// at the end.
func (c *Client) runLocked(eval bool, run func()) {
	if c.sess.held != nil {
		// Inside EXEC: every shard is already held (x-all-shards).
		prev := c.sess.inScript
		c.sess.inScript = true
		defer func() { c.sess.inScript = prev }()
		run()
		return
	}
	b := c.srv.scripts.begin(c, eval)
	defer c.srv.scripts.end(b)
	set := c.srv.store.All()
	c.srv.store.LockMany(&set)
	defer c.srv.store.UnlockMany(&set)
	c.sess.inScript = true
	defer func() { c.sess.inScript = false }()
	c.runHeld(&set, run)
}

// scriptReplier writes a script's result to the client.
type scriptReplier Client

func (r *scriptReplier) Int(n int64)     { (*Client)(r).int(n) }
func (r *scriptReplier) Bulk(b []byte)   { (*Client)(r).bulk(b) }
func (r *scriptReplier) Null()           { (*Client)(r).null() }
func (r *scriptReplier) Array(n int)     { (*Client)(r).array(n) }
func (r *scriptReplier) Status(s string) { (*Client)(r).simple(s) }
func (r *scriptReplier) Error(s string) {
	c := (*Client)(r)
	c.noteScriptError(s) // cmdstats.go
	c.out = append(c.out, '-')
	c.out = append(c.out, s...)
	c.out = append(c.out, '\r', '\n')
}

// scriptCaller runs redis.call's commands for a script of client c.
type scriptCaller struct {
	c        *Client
	ro       bool
	allowOOM bool // the allow-oom flag: denyoom commands run past maxmemory
}

// noScript reports whether a script may not run this command.
// The command table's noscript flags are the only source: a container
// command's subcommand is checked by its own entry (CLIENT ID is refused,
// CLIENT is not).
func noScript(cmd *command, args [][]byte) bool {
	if cmd.noScript {
		return true
	}
	if len(args) > 1 && len(args[1]) < 32 {
		if sub := cmd.subs[lower(args[1])]; sub != nil {
			return sub.noScript
		}
	}
	return false
}

// Call runs one command for the script and returns its RESP2 reply.
func (sc *scriptCaller) Call(args [][]byte) ([]byte, bool) {
	c := sc.c
	cmd := c.srv.cmds[lower(args[0])]
	if cmd == nil {
		return []byte("-ERR Unknown Redis command called from script\r\n"), false
	}
	if cmd.subs != nil && len(args) > 1 {
		if cmd = cmd.lookupSub(c, args); cmd == nil {
			return []byte("-ERR Unknown Redis command called from script\r\n"), false
		}
	}
	if !cmd.arityOK(args) {
		return []byte("-ERR Wrong number of args calling Redis command from script\r\n"), false
	}
	if noScript(cmd, args) {
		return []byte("-ERR This Redis command is not allowed from script\r\n"), false
	}
	if e := c.aclScriptDenied(cmd, args); e != "" { // acl.go
		return []byte("-ERR " + e + "\r\n"), false
	}
	if c.srv.cluster != nil && !c.scriptKeysLocal(cmd, args) { // cluster.go
		return []byte("-ERR Script attempted to access a non local key in a cluster node\r\n"), false
	}
	if cmd.write {
		if sc.ro {
			return []byte("-ERR Write commands are not allowed from read-only scripts.\r\n"), false
		}
		if !c.fromPrimary && c.srv.repl.IsReplica() {
			return []byte("-READONLY You can't write against a read only replica.\r\n"), false
		}
	}
	if cmd.denyOOM && !sc.allowOOM && !c.fromPrimary && c.srv.cfg.maxMemory.Load() > 0 && !c.admitCommand(cmd, args) {
		return []byte("-OOM command not allowed when used memory > 'maxmemory'.\r\n"), false
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
		start, errs := c.cmdBegin(cmd, args), c.errCount
		if c.track.on {
			c.trackBefore(cmd, args) // tracking.go
		}
		cmd.fn(c, args)
		c.cmdDone(cmd, args, start, errs, callScript)
	}()
	wrote := c.srv.dirty.Load() != before
	reply := c.out
	c.rememberCallError(reply) // cmdstats.go
	c.out, c.proto, c.propagate = savedOut, savedProto, savedProp
	return reply, wrote
}

// infoScripting adds INFO memory's script counts (Redis 7.0's names).
func (s *Server) infoScripting(field func(string, any)) {
	libs, funcs := s.scripts.Counts()
	field("number_of_cached_scripts", s.scripts.ScriptCount())
	field("number_of_functions", funcs)
	field("number_of_libraries", libs)
}

// scriptingParams are the CONFIG parameters of scripting.
func scriptingParams(m map[string]configParam) {
	p := configParam{
		get: func(s *Server) string { return strconv.FormatInt(s.scripts.thresholdMs.Load(), 10) },
		set: func(s *Server, v string) error {
			n, ok := parseInt([]byte(v))
			if !ok {
				return errors.New("argument couldn't be parsed into an integer")
			}
			if n < 0 {
				return errors.New("argument must be between 0 and 9223372036854775807 inclusive")
			}
			s.scripts.thresholdMs.Store(n)
			return nil
		},
	}
	m["busy-reply-threshold"] = p
	m["lua-time-limit"] = p
}
