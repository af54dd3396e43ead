package server

// FUNCTION and FCALL (Redis 7.0). The libraries live in package scripting;
// here are the commands, their replication (FUNCTION LOAD, DELETE, FLUSH
// and RESTORE are writes: they run with every shard locked and are
// journalled as themselves, so a snapshot cut falls before or after each),
// and the libraries' place in dumps (written at the cut, loaded with the
// keys).

import (
	"time"

	"github.com/damselflydb/damselfly/scripting"
	"github.com/damselflydb/damselfly/snapshot/rdb"
)

func registerFunctions(reg registrar) {
	reg("function", -2, "", 0, 0, 0, "scripting", cmdFunction)
	reg("fcall", -3, "noscript|stale|skip_monitor|no_mandatory_keys|movablekeys|x-detach|x-all-shards", 0, 0, 0, "scripting", func(c *Client, a [][]byte) { c.fcall(a, false) })
	reg("fcall_ro", -3, "noscript|stale|skip_monitor|no_mandatory_keys|movablekeys|readonly|x-detach|x-all-shards", 0, 0, 0, "scripting", func(c *Client, a [][]byte) { c.fcall(a, true) })
}

// fcall is FCALL and FCALL_RO: [cmd, function, numkeys, keys..., args...].
func (c *Client) fcall(args [][]byte, ro bool) {
	sc := c.srv.scripts
	f := sc.Lookup(string(args[1]))
	if f == nil {
		c.err("ERR Function not found")
		return
	}
	nk, ok := c.parseNumKeys(args, "ERR Bad number of keys provided")
	if !ok {
		return
	}
	if !c.prepareScript(f.Flags, ro) {
		return
	}
	noWrites := f.Flags&scripting.FlagNoWrites != 0
	caller := &scriptCaller{c: c, ro: ro || noWrites, allowOOM: f.Flags&scripting.FlagAllowOOM != 0}
	req := scripting.Request{Caller: caller, Out: (*scriptReplier)(c),
		Keys: args[3 : 3+nk], Args: args[3+nk:], ReadOnly: ro || noWrites}
	c.runLocked(false, func() { sc.CallFunction(f, args, c.fromPrimary, req) })
}

// functionSubcommands are FUNCTION's subcommands; LIST lives in
// function_list.go.
var functionSubcommands = map[string]subcommandHandler{
	"load":    functionLoad,
	"delete":  functionDelete,
	"flush":   functionFlush,
	"restore": functionRestore,
	"dump":    functionDump,
	"list":    func(c *Client, args [][]byte) { c.functionList(args) },
	"stats":   functionStats,
	"kill":    functionKill,
	"help":    func(c *Client, _ [][]byte) { c.helpReply(functionHelp) },
}

func cmdFunction(c *Client, args [][]byte) {
	dispatchSubcommand(c, args, functionSubcommands, "FUNCTION")
}

// functionLoad is FUNCTION LOAD [REPLACE] code.
func functionLoad(c *Client, args [][]byte) {
	if len(args) < 3 {
		c.err("ERR wrong number of arguments for 'function|load' command")
		return
	}
	replace := false
	for _, a := range args[2 : len(args)-1] {
		if !eq(a, "replace") {
			c.err("ERR Unknown option given: " + sanitize(a, 128))
			return
		}
		replace = true
	}
	c.functionWrite(true, func() error {
		name, err := c.srv.scripts.LoadLibrary(args[len(args)-1], replace)
		if err == nil {
			c.bulkString(name)
		}
		return err
	})
}

// functionDelete is FUNCTION DELETE library.
func functionDelete(c *Client, args [][]byte) {
	if len(args) != 3 {
		c.err("ERR wrong number of arguments for 'function|delete' command")
		return
	}
	c.functionWrite(false, func() error {
		err := c.srv.scripts.DeleteLibrary(string(args[2]))
		if err == nil {
			c.ok()
		}
		return err
	})
}

// functionFlush is FUNCTION FLUSH [ASYNC|SYNC]; both modes flush at once.
func functionFlush(c *Client, args [][]byte) {
	if len(args) > 3 {
		c.err("ERR wrong number of arguments for 'function|flush' command")
		return
	}
	if len(args) == 3 && !eq(args[2], "sync") && !eq(args[2], "async") {
		c.err("ERR FUNCTION FLUSH only supports SYNC|ASYNC option")
		return
	}
	c.functionWrite(false, func() error {
		c.srv.scripts.FlushFunctions()
		c.ok()
		return nil
	})
}

// functionRestore is FUNCTION RESTORE payload [FLUSH|APPEND|REPLACE].
func functionRestore(c *Client, args [][]byte) {
	if len(args) < 3 || len(args) > 4 {
		c.err("ERR wrong number of arguments for 'function|restore' command")
		return
	}
	policy := scripting.PolicyAppend
	if len(args) == 4 {
		switch {
		case eq(args[3], "append"):
		case eq(args[3], "replace"):
			policy = scripting.PolicyReplace
		case eq(args[3], "flush"):
			policy = scripting.PolicyFlush
		default:
			c.err("ERR Wrong restore policy given, value should be either FLUSH, APPEND or REPLACE.")
			return
		}
	}
	codes, err := rdb.RestoreFunctions(args[2])
	if err != nil {
		c.err("ERR " + err.Error())
		return
	}
	c.functionWrite(true, func() error {
		err := c.srv.scripts.LoadLibraries(codes, policy)
		if err == nil {
			c.ok()
		}
		return err
	})
}

// functionDump is FUNCTION DUMP: the libraries as a DUMP-style payload.
func functionDump(c *Client, args [][]byte) {
	if len(args) != 2 {
		c.err("ERR wrong number of arguments for 'function|dump' command")
		return
	}
	p, err := rdb.DumpFunctions(c.srv.functionCodes())
	if err != nil {
		c.err("ERR " + err.Error())
		return
	}
	c.bulk(p)
}

// functionStats is FUNCTION STATS: the running function, if any, and the
// engine's library and function counts.
func functionStats(c *Client, args [][]byte) {
	if len(args) != 2 {
		c.err("ERR wrong number of arguments for 'function|stats' command")
		return
	}
	sc := c.srv.scripts
	c.mapHeader(2)
	c.bulkString("running_script")
	if r := sc.Busy(); r != nil && !r.Eval {
		c.mapHeader(3)
		c.bulkString("name")
		c.bulkString(r.Name)
		c.bulkString("command")
		c.array(len(r.Command))
		for _, a := range r.Command {
			c.bulk(a)
		}
		c.bulkString("duration_ms")
		c.int(time.Since(r.Start).Milliseconds())
	} else {
		c.null()
	}
	libs, funcs := sc.Counts()
	c.bulkString("engines")
	c.mapHeader(1)
	c.bulkString("LUA")
	c.mapHeader(2)
	c.bulkString("libraries_count")
	c.int(int64(libs))
	c.bulkString("functions_count")
	c.int(int64(funcs))
}

// functionKill is FUNCTION KILL: stops a running function that has not
// written.
func functionKill(c *Client, args [][]byte) {
	if len(args) != 2 {
		c.err("ERR wrong number of arguments for 'function|kill' command")
		return
	}
	if err := c.srv.scripts.Kill(false); err != nil {
		c.err(err.Error())
		return
	}
	c.ok()
}

var functionHelp = []string{
	"FUNCTION <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
	"LOAD [REPLACE] <FUNCTION CODE>",
	"    Create a new library with the given library name and code.",
	"DELETE <LIBRARY NAME>",
	"    Delete the given library.",
	"LIST [LIBRARYNAME PATTERN] [WITHCODE]",
	"    Return general information on all the libraries:",
	"    * Library name",
	"    * The engine used to run the Library",
	"    * Library description",
	"    * Functions list",
	"    * Library code (if WITHCODE is given)",
	"    It also possible to get only function that matches a pattern using LIBRARYNAME argument.",
	"STATS",
	"    Return information about the current function running:",
	"    * Function name",
	"    * Command used to run the function",
	"    * Duration in MS that the function is running",
	"    If no function is running, return nil",
	"    In addition, returns a list of available engines.",
	"KILL",
	"    Kill the current running function.",
	"FLUSH [ASYNC|SYNC]",
	"    Delete all the libraries.",
	"    When called without the optional mode argument, the behavior is determined by the",
	"    lazyfree-lazy-user-flush configuration directive. Valid modes are:",
	"    * ASYNC: Asynchronously flush the libraries.",
	"    * SYNC: Synchronously flush the libraries.",
	"DUMP",
	"    Return a serialized payload representing the current libraries, can be restored using FUNCTION RESTORE command",
	"RESTORE <PAYLOAD> [FLUSH|APPEND|REPLACE]",
	"    Restore the libraries represented by the given payload, it is possible to give a restore policy to",
	"    control how to handle existing libraries (default APPEND):",
	"    * FLUSH: delete all existing libraries.",
	"    * APPEND: appends the restored libraries to the existing libraries. On collision, abort.",
	"    * REPLACE: appends the restored libraries to the existing libraries, On collision, replace the old",
	"      libraries with the new libraries (notice that even on this option there is a chance of failure",
	"      in case of functions name collision with another library).",
	"HELP",
	"    Prints this help.",
}

// functionWrite runs a change of the libraries with every shard locked,
// and journals the command when it succeeded. The subcommands are writes
// (LOAD and RESTORE also denyoom) though the command table knows FUNCTION
// as a whole.
func (c *Client) functionWrite(denyOOM bool, fn func() error) {
	if !c.fromPrimary && c.srv.repl.IsReplica() {
		c.err("READONLY You can't write against a read only replica.")
		return
	}
	if max := c.srv.cfg.maxMemory.Load(); denyOOM && max > 0 && !c.fromPrimary && c.srv.usedMem.Load() > max {
		c.err("OOM command not allowed when used memory > 'maxmemory'.")
		return
	}
	set := c.lockAll()
	defer c.unlock(set)
	if err := fn(); err != nil {
		c.err(err.Error())
		return
	}
	c.srv.commitWrite(c)
}

// functionList is FUNCTION LIST [LIBRARYNAME pattern] [WITHCODE].
func (c *Client) functionList(args [][]byte) {
	var pattern []byte
	withCode := false
	for i := 2; i < len(args); i++ {
		switch {
		case eq(args[i], "withcode"):
			withCode = true
		case eq(args[i], "libraryname"):
			if i+1 >= len(args) {
				c.err("ERR library name argument was not given")
				return
			}
			i++
			pattern = args[i]
		default:
			c.err("ERR Unknown argument " + sanitize(args[i], 128))
			return
		}
	}
	var libs []*scripting.Library
	for _, l := range c.srv.scripts.Libraries() {
		if pattern == nil || globMatch(pattern, []byte(l.Name), true) { // case-insensitive, as Redis
			libs = append(libs, l)
		}
	}
	c.array(len(libs))
	for _, l := range libs {
		n := 3
		if withCode {
			n = 4
		}
		c.mapHeader(n)
		c.bulkString("library_name")
		c.bulkString(l.Name)
		c.bulkString("engine")
		c.bulkString("LUA")
		c.bulkString("functions")
		c.array(len(l.Functions))
		for _, f := range l.Functions {
			c.mapHeader(3)
			c.bulkString("name")
			c.bulkString(f.Name)
			c.bulkString("description")
			if f.Description != nil {
				c.bulkString(*f.Description)
			} else {
				c.null()
			}
			c.bulkString("flags")
			flags := f.FlagNames()
			c.setHeader(len(flags))
			for _, fl := range flags {
				c.simple(fl)
			}
		}
		if withCode {
			c.bulkString("library_code")
			c.bulkString(l.Code)
		}
	}
}

// functionCodes returns every library's code, for dumps.
func (s *Server) functionCodes() []string {
	libs := s.scripts.Libraries()
	out := make([]string, len(libs))
	for i, l := range libs {
		out[i] = l.Code
	}
	return out
}

// loadFunctions installs the libraries read from a dump in place of the
// current ones (start-up, DEBUG RELOAD, a replica's full sync).
func (s *Server) loadFunctions(codes []string) error {
	return s.scripts.LoadLibraries(codes, scripting.PolicyFlush)
}
