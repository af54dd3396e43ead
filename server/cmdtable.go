package server

// The command table: the one place that knows what each command is.
//
// Design and invariants:
//   - Every command and subcommand ("parent|sub") is declared once. Its
//     interface facts (arity, flags, first/last/step, ACL categories, tips,
//     key specs, group, since) are Redis 7.0's, generated from redis-server
//     into cmdtable_redis.go (go generate; see internal/cmdtablegen); our own
//     summaries are in cmdtable_docs.go. A handler file attaches its handler
//     with reg(name, arity, flags, first, last, step, group, fn): for a
//     command Redis has, the table's facts win over the registration's (a
//     test checks that they agree); a command Redis 7.0 does not have is
//     defined by its registration alone.
//   - Damselfly's own properties of a command are tokens in the
//     registration's flags, beginning with "x-" (never shown by COMMAND):
//     x-detach      may wait or take the connection over (blocking pops,
//                   WAIT, entering Pub/Sub, PSYNC, scripts, DEBUG, SAVE), so an
//                   event loop hands the connection to a goroutine first;
//     x-block-option blocks only when given a BLOCK option (XREAD);
//     x-tx-control  runs at once inside MULTI instead of being queued;
//     x-no-data     has no key arguments yet touches no data, so EXEC need
//                   not lock every shard for it;
//     x-all-shards  needs every shard held whatever its keys (scripts);
//     x-own-locks   locks shards or waits for other goroutines itself, so it
//                   must never run while its client holds shards: EXEC
//                   releases its locks around it (REPLICAOF, DEBUG);
//     x-pubsub-context allowed on a RESP2 connection in Pub/Sub mode;
//     x-field       its argument after the key is a field of the hash (a
//                   member of the set or sorted set) at the key (a hint for
//                   the pipeline's prefetch, prefetch.go).
//     A subcommand has its parent's tokens and handler unless registered
//     itself ("config|get").
//   - An entry without a handler is not implemented: it is absent from
//     Server.cmds, so the dispatcher answers "unknown command" and COMMAND
//     (INFO, COUNT, LIST, DOCS) does not show it. Subcommands of an
//     implemented command are shown once registered; unregistered ones still
//     reach the parent's handler with the table's facts.
//   - Keys come from the key specs (Redis's begin-search/find-keys), so
//     COMMAND GETKEYS, EXEC's shard locking and maxmemory admission agree.

//go:generate go run ./internal/cmdtablegen -o cmdtable_redis.go

import (
	"slices"
	"strings"
)

// cmdFacts is one generated row: a command's interface facts as Redis 7.0
// reports them. Lists are '|'-separated.
type cmdFacts struct {
	name              string
	arity             int
	flags             string
	first, last, step int
	acl, tips         string
	group, since      string
	docFlags          string
	specs             []keySpec
}

const (
	bsUnknown = iota
	bsIndex
	bsKeyword
)

const (
	fkUnknown = iota
	fkRange
	fkKeynum
)

// keySpec is a Redis 7 key specification. begin search: bsIndex (index)
// or bsKeyword (keyword, startFrom: search from there forward, or from the
// end backward when negative). find keys: fkRange (a = lastkey relative to
// the first key or negative from the end, b = keystep, c = limit) or
// fkKeynum (a = index of the key count, b = first key, c = keystep, both
// relative to the begin-search result).
type keySpec struct {
	flags     string
	bs        int
	index     int
	keyword   string
	startFrom int
	fk        int
	a, b, c   int
}

// complete reports whether the spec finds every key of every call.
func (ks *keySpec) complete() bool {
	return ks.bs != bsUnknown && ks.fk != fkUnknown && !strings.Contains(ks.flags, "incomplete")
}

// Damselfly's registration tokens (see the package comment above).
const (
	xDetach      = "x-detach"
	xBlockOption = "x-block-option"
	xTxControl   = "x-tx-control"
	xNoData      = "x-no-data"
	xAllShards   = "x-all-shards"
	xOwnLocks    = "x-own-locks"
	xPubSubCtx   = "x-pubsub-context"
	xRandCount   = "x-rand-count"
	xFieldArg    = "x-field"
)

// cmdTable is the table being built: every entry by name, subcommands
// included ("parent|sub").
type cmdTable struct {
	all map[string]*command
}

func newCmdTable() *cmdTable {
	t := &cmdTable{all: make(map[string]*command, len(redisFacts))}
	for i := range redisFacts {
		f := &redisFacts[i]
		cmd := &command{
			name: f.name, arity: f.arity, firstKey: f.first, lastKey: f.last, step: f.step,
			acl: splitList(f.acl), tips: splitList(f.tips), specs: f.specs,
			group: f.group, since: f.since, docFlags: splitList(f.docFlags), redis: true,
		}
		cmd.setFlags(splitList(f.flags))
		t.all[f.name] = cmd
	}
	for name, cmd := range t.all {
		if p, sub, ok := strings.Cut(name, "|"); ok {
			parent := t.all[p]
			cmd.parent = parent
			if parent.subs == nil {
				parent.subs = map[string]*command{}
			}
			parent.subs[sub] = cmd
		}
	}
	return t
}

func splitList(s string) []string {
	if s == "" {
		return nil
	}
	return strings.Split(s, "|")
}

// setFlags sets the Redis flags and what the server derives from them.
func (cmd *command) setFlags(fl []string) {
	cmd.flags = fl
	cmd.write, cmd.noAuth, cmd.denyOOM, cmd.noScript, cmd.noMulti, cmd.blocking = false, false, false, false, false, false
	cmd.fast, cmd.admin, cmd.skipMonitor, cmd.skipSlowlog = false, false, false, false
	for _, f := range fl {
		switch f {
		case "write":
			cmd.write = true
		case "no_auth":
			cmd.noAuth = true
		case "denyoom":
			cmd.denyOOM = true
		case "noscript":
			cmd.noScript = true
		case "no_multi":
			cmd.noMulti = true
		case "blocking":
			cmd.blocking = true
		case "fast":
			cmd.fast = true
		case "admin":
			cmd.admin = true
		case "skip_monitor":
			cmd.skipMonitor = true
		case "skip_slowlog":
			cmd.skipSlowlog = true
		}
	}
}

// attach is the registrar: it gives the entry name its handler and
// Damselfly's properties, creating the entry when Redis has none.
func (t *cmdTable) attach(name string, arity int, flags string, first, last, step int, group string, fn func(*Client, [][]byte)) {
	name = strings.ToLower(name)
	var redisFlags []string
	var x []string
	for _, f := range splitList(flags) {
		if strings.HasPrefix(f, "x-") {
			x = append(x, f)
		} else {
			redisFlags = append(redisFlags, f)
		}
	}
	cmd := t.all[name]
	if cmd == nil {
		cmd = laterRedisCommand(name) // cmdtable_later.go: newer Redis's facts
		if cmd != nil {
			t.all[name] = cmd
		}
	}
	if cmd == nil {
		cmd = &command{name: name, arity: arity, firstKey: first, lastKey: last, step: step, group: group}
		cmd.setFlags(redisFlags)
		if first > 0 {
			// A legacy key range as a key spec.
			lk := last
			if last >= 0 {
				lk = last - first
			}
			cmd.specs = []keySpec{{flags: "RW", bs: bsIndex, index: first, fk: fkRange, a: lk, b: step}}
		}
		if p, sub, ok := strings.Cut(name, "|"); ok && t.all[p] != nil {
			cmd.parent = t.all[p]
			if cmd.parent.subs == nil {
				cmd.parent.subs = map[string]*command{}
			}
			cmd.parent.subs[sub] = cmd
		}
		t.all[name] = cmd
	}
	cmd.reg = &registration{arity: arity, flags: redisFlags, first: first, last: last, step: step, group: group}
	cmd.fn = fn
	for _, f := range x {
		cmd.setX(f)
	}
}

func (cmd *command) setX(f string) {
	switch f {
	case xDetach:
		cmd.mayBlock = true
	case xBlockOption:
		cmd.blockOption = true
	case xTxControl:
		cmd.txPass = true
	case xNoData:
		cmd.dataless = true
	case xAllShards:
		cmd.allShards = true
	case xOwnLocks:
		cmd.ownLocks = true
	case xPubSubCtx:
		cmd.pubsubContext = true
	case xRandCount:
		cmd.randCount = true
	case xFieldArg:
		cmd.fieldArg = true
	default:
		panic("command table: unknown property " + f + " of " + cmd.name)
	}
}

// finish settles what the entries derive from each other and returns the
// implemented top-level commands by name.
func (t *cmdTable) finish() map[string]*command {
	out := map[string]*command{}
	for name, cmd := range t.all {
		if cmd.parent != nil {
			continue
		}
		cmd.settle()
		for _, sub := range cmd.subs {
			sub.inherit(cmd)
			sub.settle()
		}
		if cmd.fn != nil {
			out[name] = cmd
		}
	}
	return out
}

// inherit gives an unregistered (or partly registered) subcommand its
// parent's handler and Damselfly properties.
func (cmd *command) inherit(p *command) {
	if cmd.fn == nil {
		cmd.fn = p.fn
	}
	cmd.mayBlock = cmd.mayBlock || p.mayBlock
	cmd.blockOption = cmd.blockOption || p.blockOption
	cmd.txPass = cmd.txPass || p.txPass
	cmd.dataless = cmd.dataless || p.dataless
	cmd.allShards = cmd.allShards || p.allShards
	cmd.ownLocks = cmd.ownLocks || p.ownLocks
	cmd.pubsubContext = cmd.pubsubContext || p.pubsubContext
	cmd.randCount = cmd.randCount || p.randCount
}

// settle derives the dispatch properties from the facts and tokens.
func (cmd *command) settle() {
	if cmd.blocking && !cmd.blockOption {
		cmd.mayBlock = true
	}
	if cmd.allShards {
		cmd.lockAll = true
		return
	}
	if len(cmd.specs) == 0 {
		// No keys: every shard, unless it touches no data at all.
		cmd.lockAll = !cmd.dataless
		return
	}
	for i := range cmd.specs {
		if !cmd.specs[i].complete() {
			cmd.lockAll = true // keys the specs cannot find
		}
	}
}

// implemented reports whether an entry was registered (a subcommand
// shows in COMMAND only then).
func (cmd *command) implemented() bool { return cmd.reg != nil }

// visibleSubs returns the implemented subcommands, by name.
func (cmd *command) visibleSubs() []*command {
	var out []*command
	for _, s := range cmd.subs {
		if s.implemented() {
			out = append(out, s)
		}
	}
	slices.SortFunc(out, func(a, b *command) int { return strings.Compare(a.name, b.name) })
	return out
}

// lookupSub resolves a container command's subcommand from args (nil when
// cmd has no subcommands or args[1] names none).
func (cmd *command) lookupSub(c *Client, args [][]byte) *command {
	if cmd.subs == nil || len(args) < 2 {
		return nil
	}
	return cmd.subs[c.lowerName(args[1])]
}

// appendKeys appends the key arguments of a call to cmd to dst, from its
// key specs (Redis's getKeysUsingKeySpecs); a spec that does not apply to
// these arguments contributes nothing.
func (cmd *command) appendKeys(dst, args [][]byte) [][]byte {
	for i := range cmd.specs {
		dst = cmd.specs[i].appendKeys(dst, args)
	}
	return dst
}

// keys returns the key arguments of a call to cmd.
func (cmd *command) keys(args [][]byte) [][]byte { return cmd.appendKeys(nil, args) }

// keyRange returns the first and last argument index and the step of the
// keys ks finds in args. found is false when the spec finds nothing here
// (its keyword is absent, or it cannot be searched); valid is false when
// the arguments are malformed for it (a bad key count).
func (ks *keySpec) keyRange(args [][]byte) (first, last, step int, found, valid bool) {
	argc := len(args)
	switch ks.bs {
	case bsIndex:
		first = ks.index
	case bsKeyword:
		// Forward up to the last argument but one, or backward down to
		// the second: a keyword is followed by a key.
		start, end, dir := ks.startFrom, argc-1, 1
		if ks.startFrom < 0 {
			start, end, dir = argc+ks.startFrom, 1, -1
		}
		for i := start; i != end && i >= 1 && i < argc; i += dir {
			if strings.EqualFold(unsafeString(args[i]), ks.keyword) {
				first = i + 1
				break
			}
		}
		if first == 0 {
			return 0, 0, 0, false, true
		}
	default:
		return 0, 0, 0, false, true
	}
	switch ks.fk {
	case fkRange:
		switch {
		case ks.a >= 0:
			last = first + ks.a
		case ks.c == 0:
			last = argc + ks.a
		default:
			last = first + (argc-first)/ks.c + ks.a
		}
		step = ks.b
	case fkKeynum:
		if first+ks.a >= argc {
			return 0, 0, 0, false, false
		}
		n, ok := parseInt(args[first+ks.a])
		if !ok || n < 0 || n > int64(argc) {
			return 0, 0, 0, false, false
		}
		first += ks.b
		last = first + int(n) - 1
		step = ks.c
	default:
		return 0, 0, 0, false, true
	}
	if step <= 0 {
		step = 1
	}
	return first, last, step, true, true
}

func (ks *keySpec) appendKeys(dst, args [][]byte) [][]byte {
	dst, _ = ks.appendKeysValid(dst, args)
	return dst
}

// appendKeysValid is appendKeys, also reporting whether the arguments are
// well formed for the spec.
func (ks *keySpec) appendKeysValid(dst, args [][]byte) (_ [][]byte, valid bool) {
	first, last, step, found, valid := ks.keyRange(args)
	if !found {
		return dst, valid
	}
	for i := first; i <= last && i < len(args); i += step {
		if i >= 1 {
			dst = append(dst, args[i])
		}
	}
	return dst, true
}

// hasKeys reports whether cmd has key arguments at all (a key spec that is
// not marked not_key), as COMMAND GETKEYS checks.
func (cmd *command) hasKeys() bool {
	for i := range cmd.specs {
		if !strings.Contains(cmd.specs[i].flags, "not_key") {
			return true
		}
	}
	return false
}

// blockOptionGiven reports whether a command that blocks only on request
// (XREAD, XREADGROUP) was given BLOCK before its STREAMS list.
func blockOptionGiven(args [][]byte) bool {
	for _, a := range args[1:] {
		if eq(a, "streams") {
			return false
		}
		if eq(a, "block") {
			return true
		}
	}
	return false
}

// arityOK checks the number of arguments against cmd's arity.
func (cmd *command) arityOK(args [][]byte) bool {
	if cmd.arity > 0 {
		return len(args) == cmd.arity
	}
	return len(args) >= -cmd.arity
}
