package server

// COMMAND and its subcommands: everything they answer is read from the
// command table (cmdtable.go), so what clients learn about a command is what
// the dispatcher enforces.

import (
	"sort"
	"strings"
)

func cmdCommand(c *Client, args [][]byte) {
	t := c.srv.cmds
	if len(args) == 1 {
		c.commandInfos(c.srv.sortedCmds())
		return
	}
	switch lower(args[1]) {
	case "count":
		c.int(int64(len(t)))
	case "info":
		if len(args) == 2 {
			c.commandInfos(c.srv.sortedCmds())
			return
		}
		c.array(len(args) - 2)
		for _, n := range args[2:] {
			if cmd := c.srv.lookupFullName(n); cmd != nil {
				c.commandInfo(cmd)
			} else {
				c.null()
			}
		}
	case "docs":
		c.commandDocs(args[2:])
	case "list":
		c.commandList(args)
	case "getkeys", "getkeysandflags":
		c.commandGetKeys(args, eq(args[1], "getkeysandflags"))
	case "help":
		c.array(1)
		c.simple("COMMAND [<subcommand> [<arg> ...]]. Subcommands are: COUNT, INFO, DOCS, LIST, GETKEYS, GETKEYSANDFLAGS, HELP.")
	default:
		c.err("ERR unknown subcommand '" + sanitize(args[1], 128) + "'. Try COMMAND HELP.")
	}
}

// sortedCmds returns the implemented commands by name.
func (s *Server) sortedCmds() []*command {
	out := make([]*command, 0, len(s.cmds))
	for _, cmd := range s.cmds {
		out = append(out, cmd)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].name < out[j].name })
	return out
}

// lookupFullName finds an implemented command or subcommand by its full
// name ("get", "config|get").
func (s *Server) lookupFullName(b []byte) *command {
	p, sub, isSub := strings.Cut(strings.ToLower(string(b)), "|")
	cmd := s.cmds[p]
	if cmd == nil || !isSub {
		return cmd
	}
	if sc := cmd.subs[sub]; sc != nil && sc.implemented() {
		return sc
	}
	return nil
}

func (c *Client) commandInfos(list []*command) {
	c.array(len(list))
	for _, cmd := range list {
		c.commandInfo(cmd)
	}
}

// commandInfo writes cmd's COMMAND INFO entry, Redis 7's ten fields.
func (c *Client) commandInfo(cmd *command) {
	c.array(10)
	c.bulkString(cmd.name)
	c.int(int64(cmd.arity))
	c.setHeader(len(cmd.flags))
	for _, f := range cmd.flags {
		c.simple(f)
	}
	c.int(int64(cmd.firstKey))
	c.int(int64(cmd.lastKey))
	c.int(int64(cmd.step))
	c.setHeader(len(cmd.acl))
	for _, a := range cmd.acl {
		c.simple("@" + a)
	}
	c.setHeader(len(cmd.tips))
	for _, tip := range cmd.tips {
		c.bulkString(tip)
	}
	c.array(len(cmd.specs))
	for i := range cmd.specs {
		c.keySpecInfo(&cmd.specs[i])
	}
	c.commandInfos(cmd.visibleSubs())
}

func (c *Client) keySpecInfo(ks *keySpec) {
	c.mapHeader(3)
	c.bulkString("flags")
	fl := splitList(ks.flags)
	c.setHeader(len(fl))
	for _, f := range fl {
		c.simple(f)
	}
	c.bulkString("begin_search")
	c.mapHeader(2)
	c.bulkString("type")
	switch ks.bs {
	case bsIndex:
		c.bulkString("index")
		c.bulkString("spec")
		c.mapHeader(1)
		c.bulkString("index")
		c.int(int64(ks.index))
	case bsKeyword:
		c.bulkString("keyword")
		c.bulkString("spec")
		c.mapHeader(2)
		c.bulkString("keyword")
		c.bulkString(ks.keyword)
		c.bulkString("startfrom")
		c.int(int64(ks.startFrom))
	default:
		c.bulkString("unknown")
		c.bulkString("spec")
		c.mapHeader(0)
	}
	c.bulkString("find_keys")
	c.mapHeader(2)
	c.bulkString("type")
	switch ks.fk {
	case fkRange:
		c.bulkString("range")
		c.bulkString("spec")
		c.mapHeader(3)
		c.bulkString("lastkey")
		c.int(int64(ks.a))
		c.bulkString("keystep")
		c.int(int64(ks.b))
		c.bulkString("limit")
		c.int(int64(ks.c))
	case fkKeynum:
		c.bulkString("keynum")
		c.bulkString("spec")
		c.mapHeader(3)
		c.bulkString("keynumidx")
		c.int(int64(ks.a))
		c.bulkString("firstkey")
		c.int(int64(ks.b))
		c.bulkString("keystep")
		c.int(int64(ks.c))
	default:
		c.bulkString("unknown")
		c.bulkString("spec")
		c.mapHeader(0)
	}
}

// commandDocs answers COMMAND DOCS: our summary, since, group, doc flags
// and the implemented subcommands' docs, for the named commands (unknown
// names are skipped) or all of them.
func (c *Client) commandDocs(names [][]byte) {
	var list []*command
	if len(names) == 0 {
		list = c.srv.sortedCmds()
	} else {
		for _, n := range names {
			if cmd := c.srv.lookupFullName(n); cmd != nil {
				list = append(list, cmd)
			}
		}
	}
	c.mapHeader(len(list))
	for _, cmd := range list {
		c.bulkString(cmd.name)
		c.commandDoc(cmd)
	}
}

func (c *Client) commandDoc(cmd *command) {
	subs := cmd.visibleSubs()
	n := 3
	if len(cmd.docFlags) > 0 {
		n++
	}
	if len(subs) > 0 {
		n++
	}
	c.mapHeader(n)
	c.bulkString("summary")
	c.bulkString(cmd.summaryText())
	c.bulkString("since")
	c.bulkString(cmd.since)
	c.bulkString("group")
	c.bulkString(cmd.group)
	if len(cmd.docFlags) > 0 {
		c.bulkString("doc_flags")
		c.setHeader(len(cmd.docFlags))
		for _, f := range cmd.docFlags {
			c.simple(f)
		}
	}
	if len(subs) > 0 {
		c.bulkString("subcommands")
		c.mapHeader(len(subs))
		for _, s := range subs {
			c.bulkString(s.name)
			c.commandDoc(s)
		}
	}
}

func (cmd *command) summaryText() string {
	if cmd.summary != "" {
		return cmd.summary
	}
	return strings.ToUpper(strings.ReplaceAll(cmd.name, "|", " ")) + " (" + cmd.group + ")"
}

// commandList answers COMMAND LIST [FILTERBY MODULE name | ACLCAT category
// | PATTERN pattern]: the implemented commands and subcommands.
func (c *Client) commandList(args [][]byte) {
	keep := func(*command) bool { return true }
	switch {
	case len(args) == 2:
	case len(args) == 5 && eq(args[2], "filterby"):
		arg := args[4]
		switch lower(args[3]) {
		case "module":
			keep = func(*command) bool { return false } // no modules
		case "aclcat":
			cat := strings.ToLower(string(arg))
			keep = func(cmd *command) bool {
				for _, a := range cmd.acl {
					if a == cat {
						return true
					}
				}
				return false
			}
		case "pattern":
			keep = func(cmd *command) bool { return globMatch(arg, []byte(cmd.name), true) }
		default:
			c.errSyntax()
			return
		}
	default:
		c.errSyntax()
		return
	}
	var names []string
	for _, cmd := range c.srv.sortedCmds() {
		if keep(cmd) {
			names = append(names, cmd.name)
		}
		for _, s := range cmd.visibleSubs() {
			if keep(s) {
				names = append(names, s.name)
			}
		}
	}
	c.array(len(names))
	for _, n := range names {
		c.bulkString(n)
	}
}

// commandGetKeys answers COMMAND GETKEYS and GETKEYSANDFLAGS with the keys
// the key specs find (Redis's rules and error texts).
func (c *Client) commandGetKeys(args [][]byte, withFlags bool) {
	sub := "command|getkeys"
	if withFlags {
		sub = "command|getkeysandflags"
	}
	if len(args) < 3 {
		c.err("ERR wrong number of arguments for '" + sub + "' command")
		return
	}
	call := args[2:]
	cmd := c.srv.cmds[lower(call[0])]
	if cmd != nil && len(call) > 1 && cmd.subs != nil {
		if s := cmd.subs[lower(call[1])]; s != nil {
			cmd = s
		} else {
			cmd = nil
		}
	}
	switch {
	case cmd == nil:
		c.err("ERR Invalid command specified")
		return
	case !cmd.hasKeys():
		c.err("ERR The command has no key arguments")
		return
	case !cmd.arityOK(call):
		c.err("ERR Invalid number of arguments specified for command")
		return
	}
	type found struct {
		key   []byte
		flags string
	}
	var keys []found
	for i := range cmd.specs {
		ks := &cmd.specs[i]
		got, ok := ks.appendKeysValid(nil, call)
		if !ok { // malformed for a spec: no keys at all, as Redis
			keys = nil
			break
		}
		flags := ks.flags
		if strings.Contains(flags, "variable_flags") {
			flags = variableKeyFlags(cmd, call, flags)
		}
		for _, k := range got {
			keys = append(keys, found{k, flags})
		}
	}
	if len(keys) == 0 {
		if cmd.hasFlag("no_mandatory_keys") {
			c.array(0)
			return
		}
		c.err("ERR Invalid arguments specified for command")
		return
	}
	c.array(len(keys))
	for _, k := range keys {
		if !withFlags {
			c.bulk(k.key)
			continue
		}
		c.array(2)
		c.bulk(k.key)
		fl := splitList(k.flags)
		c.setHeader(len(fl))
		for _, f := range fl {
			c.simple(f)
		}
	}
}

func (cmd *command) hasFlag(f string) bool {
	for _, x := range cmd.flags {
		if x == f {
			return true
		}
	}
	return false
}

// variableKeyFlags resolves the access flags of a key spec marked
// variable_flags for one call, as Redis's key extraction does: SET only
// reads the old value with GET; BITFIELD only reads when every operation
// is a GET.
func variableKeyFlags(cmd *command, call [][]byte, flags string) string {
	switch cmd.name {
	case "set":
		for _, a := range call[3:] {
			if eq(a, "get") {
				return "RW|access|update"
			}
		}
		return "OW|update"
	case "bitfield":
		for _, a := range call[2:] {
			if eq(a, "set") || eq(a, "incrby") {
				return "RW|access|update"
			}
		}
		return "RO|access"
	}
	return flags
}
