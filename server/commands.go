package server

import (
	"strings"
)

// command is one entry of the command table.
type command struct {
	name     string
	arity    int // Redis convention: n exact, -n at least n
	flags    []string
	firstKey int
	lastKey  int
	step     int
	noAuth   bool // allowed before AUTH
	write    bool
	mayBlock bool // never run on an event loop (Client.mayBlock)
	// blockIf, when set, tells from the arguments whether this call may
	// block (XREAD and XREADGROUP only with BLOCK); mayBlock wins.
	blockIf func(args [][]byte) bool
	denyOOM bool // refused while used memory is over maxmemory
	// txPass: runs at once inside MULTI instead of being queued;
	// dataless: touches no data though it has no key positions (EXEC
	// need not lock every shard for it). From txPass and dataless.
	txPass, dataless bool
	fn               func(c *Client, args [][]byte)
	group            string
	summary          string
}

// spec: "name arity flags first last step group"; flags are '|'-separated.
func commandTable() map[string]*command {
	t := map[string]*command{}
	reg := func(name string, arity int, flags string, first, last, step int, group string, fn func(*Client, [][]byte)) {
		fl := strings.Split(flags, "|")
		cmd := &command{name: name, arity: arity, flags: fl, firstKey: first, lastKey: last, step: step, fn: fn, group: group}
		for _, f := range fl {
			switch f {
			case "write":
				cmd.write = true
			case "no_auth":
				cmd.noAuth = true
			case "blocking":
				cmd.mayBlock = true
			case "denyoom":
				cmd.denyOOM = true
			}
		}
		if mayBlockCommands[name] {
			cmd.mayBlock = true
		}
		if cmd.blockIf = blockIfCommands[name]; cmd.blockIf != nil {
			cmd.mayBlock = false // "blocking" in COMMAND INFO, detached only when needed
		}
		cmd.txPass, cmd.dataless = txPass[name], dataless[name]
		t[name] = cmd
	}
	registerConnection(reg)
	registerServer(reg)
	registerStrings(reg)
	registerKeys(reg)
	registerPersistence(reg)
	registerAOF(reg)
	registerDump(reg)
	registerPubSub(reg)
	registerMulti(reg)
	registerScripting(reg)
	registerReplication(reg)
	registerLists(reg)
	registerHashes(reg)
	registerSets(reg)
	registerZSets(reg)
	registerStreams(reg)
	return t
}

type registrar = func(name string, arity int, flags string, first, last, step int, group string, fn func(*Client, [][]byte))

// mayBlockCommands are the commands, besides those flagged "blocking", that
// may wait or take the connection over (see Client.mayBlock). A command that
// starts queued output (startAsync, Pub/Sub) or sets Client.handoff must be
// listed: those need the connection as a net.Conn.
// blockIfCommands may block depending on their arguments.
var blockIfCommands = map[string]func(args [][]byte) bool{
	"xread": xreadBlocks, "xreadgroup": xreadBlocks,
}

var mayBlockCommands = map[string]bool{
	"subscribe": true, "psubscribe": true, "ssubscribe": true,
	"psync": true, "sync": true, "wait": true,
	"eval": true, "evalsha": true, "eval_ro": true, "evalsha_ro": true,
	"fcall": true, "fcall_ro": true, "debug": true, "save": true,
}
