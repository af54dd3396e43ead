package server

// ACL: Redis 7.0's users and permissions (package acl) applied to every
// command path.
//
// Design and invariants:
//   - Every network client has a user (Client.user, swapped atomically by
//     AUTH, HELLO AUTH and RESET); internal clients (the primary's stream,
//     the AOF loader) have none and may run anything, as in Redis.
//   - The catalog of command ids and categories is built once from the
//     command table (every Redis 7.0 command, implemented or not, so that
//     GETUSER's best-fit description counts categories as Redis does, plus
//     Damselfly's own commands); command.aclID is the id.
//   - The check (aclDenied) runs in execute() after authentication, so it
//     covers the normal path, blocking commands, Pub/Sub and MULTI's queueing
//     (a refusal fails the transaction); EXEC checks each queued command
//     again (runQueued) and redis.call/pcall check theirs (scriptCaller).
//     Its fast path, a user whose state allows everything, is one atomic
//     load and one field read; keys (from the key specs, read or write
//     by their access/insert/update/delete flags as Redis 7.0) and channels
//     are gathered only for restricted users.
//   - Clients of a deleted user, and of every non-default user on ACL LOAD,
//     are disconnected (after the reply when it is the caller itself).

import (
	"fmt"
	"strings"
	"sync"
	"time"
	"unsafe"

	"github.com/damselflydb/damselfly/acl"
)

// aclState is the server's ACL: users, the log and the ACL file.
type aclState struct {
	users *acl.Users
	def   *acl.User // the default user (never replaced)
	file  string    // --aclfile ("" when not configured)

	logMu  sync.Mutex
	log    []*aclLogEntry // newest first
	logMax int            // acllog-max-len
}

// aclLogEntry is one ACL LOG entry.
type aclLogEntry struct {
	count    int64
	reason   string // command, key, channel, auth
	context  string // toplevel, multi, lua
	object   string
	username string
	ctime    int64 // unix ms of the last occurrence
	cinfo    string
}

// initACL builds the catalog from the command table and the users from
// the configuration (called by New).
func (s *Server) initACL(cfg Config) {
	var infos []acl.CommandInfo
	seen := map[string]bool{}
	for i := range redisFacts {
		f := &redisFacts[i]
		infos = append(infos, acl.CommandInfo{Name: f.name, Categories: splitList(f.acl)})
		seen[f.name] = true
	}
	walkCommands(s.cmds, func(cmd *command) {
		if !seen[cmd.name] {
			infos = append(infos, acl.CommandInfo{Name: cmd.name, Categories: cmd.acl})
			seen[cmd.name] = true
		}
	})
	// The pattern's bytes are only read: no copy per check.
	cat := acl.NewCatalog(infos, func(p string, k []byte) bool {
		return globMatch(unsafe.Slice(unsafe.StringData(p), len(p)), k, false)
	})
	walkCommands(s.cmds, func(cmd *command) {
		cmd.aclID = int32(cat.ID(cmd.name))
		cmd.aclPerms = make([]uint8, len(cmd.specs))
		for i := range cmd.specs {
			cmd.aclPerms[i] = specPerm(cmd.specs[i].flags)
		}
		switch cmd.name {
		case "publish", "spublish":
			cmd.aclChans = aclChanFirst
		case "subscribe", "ssubscribe":
			cmd.aclChans = aclChanAll
		case "psubscribe":
			cmd.aclChans = aclChanPatterns
		}
	})
	s.acl.users = acl.NewUsers(cat)
	s.acl.def = s.acl.users.Get("default")
	s.acl.file = cfg.ACLFile
	s.acl.logMax = 128
	if cfg.RequirePass != "" {
		s.acl.users.SetDefaultPassword(cfg.RequirePass)
	}
}

// startACL applies the configured users and the ACL file (called by
// Start); an error stops start-up, as Redis refuses to start.
func (s *Server) startACL(cfg Config) error {
	for _, u := range cfg.ACLUsers {
		if len(u) == 0 {
			continue
		}
		if !acl.ValidUserName(u[0]) {
			return fmt.Errorf("ACL user %q: Usernames can't contain spaces or null characters", u[0])
		}
		if _, _, err := s.acl.users.SetUser(u[0], u[1:]); err != nil {
			return fmt.Errorf("ACL user %q: %v", u[0], err)
		}
	}
	if s.acl.file != "" {
		if err := s.loadACLFile(); err != nil {
			return fmt.Errorf("Aborting Damselfly startup because of ACL errors: %v", err)
		}
	}
	return nil
}

func walkCommands(cmds map[string]*command, fn func(*command)) {
	for _, cmd := range cmds {
		fn(cmd)
		for _, sub := range cmd.subs {
			fn(sub)
		}
	}
}

// ValidateACLUser checks a configuration file's "user" directive (its
// arguments after "user": the name, then the rules) without a server,
// returning Redis's error text; Config.ACLUsers takes the same arguments.
func ValidateACLUser(args []string) error {
	if len(args) == 0 {
		return fmt.Errorf("wrong number of arguments for 'user'")
	}
	if !acl.ValidUserName(args[0]) {
		return fmt.Errorf("Usernames can't contain spaces or null characters")
	}
	s := &Server{cmds: commandTable()}
	s.initACL(Config{})
	_, _, err := s.acl.users.SetUser(args[0], args[1:])
	return err
}

// aclDenied is the dispatcher's check: true when the command was refused
// (the NOPERM reply is written and the refusal logged).
func (c *Client) aclDenied(cmd *command, args [][]byte) bool {
	u := c.user.Load()
	if u == nil || u.State().Unrestricted() || cmd.noAuth {
		return false
	}
	return c.aclRefuse(u, cmd, args)
}

func (c *Client) aclRefuse(u *acl.User, cmd *command, args [][]byte) bool {
	d, pos := aclCheck(u.State(), cmd, args)
	if d == acl.OK {
		return false
	}
	ctx := "toplevel"
	if c.sess.tx != nil {
		ctx = "multi"
	}
	c.lastCmd.Store(cmd) // Redis's client info names the refused command
	c.srv.aclLogDenial(c, u.Name(), d, ctx, cmd, args, pos)
	var msg string
	switch d {
	case acl.DeniedCmd:
		msg = "NOPERM this user has no permissions to run the '" + cmd.name + "' command"
	case acl.DeniedKey:
		msg = "NOPERM this user has no permissions to access one of the keys used as arguments"
	default:
		msg = "NOPERM this user has no permissions to access one of the channels used as arguments"
	}
	if cmd.name == "exec" {
		// A refused EXEC discards the transaction (if any), as Redis does.
		c.setTx(nil)
		c.unwatchAll()
		c.err("EXECABORT Transaction discarded because of: " + msg)
		return true
	}
	c.err(msg)
	c.txFlag()
	return true
}

// aclExecDenied checks a queued command again when EXEC runs it, as
// Redis does in case the rules changed meanwhile.
func (c *Client) aclExecDenied(cmd *command, args [][]byte) bool {
	u := c.user.Load()
	if u == nil || u.State().Unrestricted() || cmd.noAuth {
		return false
	}
	d, pos := aclCheck(u.State(), cmd, args)
	if d == acl.OK {
		return false
	}
	c.srv.aclLogDenial(c, u.Name(), d, "multi", cmd, args, pos)
	reason := "no permission"
	switch d {
	case acl.DeniedCmd:
		reason = "no permission to execute the command or subcommand"
	case acl.DeniedKey:
		reason = "no permission to touch the specified keys"
	case acl.DeniedChannel:
		reason = "no permission to access one of the channels used as arguments"
	}
	c.err("NOPERM ACLs rules changed between the moment the transaction was accumulated and the EXEC call. " +
		"This command is no longer allowed for the following reason: " + reason)
	return true
}

// aclScriptDenied is redis.call's check: the error text for the script, or
// "" when allowed.
func (c *Client) aclScriptDenied(cmd *command, args [][]byte) string {
	u := c.user.Load()
	if u == nil || u.State().Unrestricted() || cmd.noAuth {
		return ""
	}
	d, pos := aclCheck(u.State(), cmd, args)
	if d == acl.OK {
		return ""
	}
	c.srv.aclLogDenial(c, u.Name(), d, "lua", cmd, args, pos)
	switch d {
	case acl.DeniedCmd:
		return "The user executing the script can't run this command or subcommand"
	case acl.DeniedKey:
		return "The user executing the script can't access at least one of the keys mentioned in the command arguments"
	case acl.DeniedChannel:
		return "The user executing the script can't publish to the channel mentioned in the command"
	}
	return "The user executing the script is lacking the permissions for the command"
}

// aclCheck gathers a call's keys and channels and checks them.
func aclCheck(st *acl.State, cmd *command, args [][]byte) (acl.Denial, int) {
	var keyBuf [4]acl.Key
	keys := keyBuf[:0]
	for i := range cmd.specs {
		perm := cmd.aclPerms[i]
		if perm == aclNotKey {
			continue
		}
		first, last, step, found, _ := cmd.specs[i].keyRange(args)
		if !found {
			continue
		}
		for j := first; j <= last && j < len(args); j += step {
			if j >= 1 {
				keys = append(keys, acl.Key{Name: args[j], Perm: perm, Pos: j})
			}
		}
	}
	var chans []acl.Channel
	if cmd.aclChans != aclChanNone {
		chans = aclChannels(cmd, args)
	}
	var firstArg []byte
	if len(args) > 1 {
		firstArg = args[1]
	}
	return st.Check(int(cmd.aclID), firstArg, keys, chans)
}

// aclChannels lists the channel arguments of PUBLISH and the subscribes.
func aclChannels(cmd *command, args [][]byte) []acl.Channel {
	if cmd.aclChans == aclChanFirst {
		return []acl.Channel{{Name: args[1], Pos: 1}}
	}
	chans := make([]acl.Channel, 0, len(args)-1)
	for j := 1; j < len(args); j++ {
		chans = append(chans, acl.Channel{Name: args[j], Pattern: cmd.aclChans == aclChanPatterns, Pos: j})
	}
	return chans
}

// What a command's arguments hold for the channel check.
const (
	aclChanNone     = iota
	aclChanFirst    // PUBLISH, SPUBLISH: the first argument
	aclChanAll      // SUBSCRIBE, SSUBSCRIBE: every argument
	aclChanPatterns // PSUBSCRIBE: every argument, a pattern
)

// aclNotKey marks a key spec that names no key (not_key: shard channels).
const aclNotKey = 0xff

// specPerm is the key access a key spec's flags need: read for access,
// write for insert, update or delete (Redis 7.0's rule).
func specPerm(flags string) uint8 {
	if strings.Contains(flags, "not_key") {
		return aclNotKey
	}
	var p uint8
	if strings.Contains(flags, "access") {
		p |= acl.Read
	}
	if strings.Contains(flags, "insert") || strings.Contains(flags, "update") || strings.Contains(flags, "delete") {
		p |= acl.Write
	}
	return p
}

// aclLogDenial records a refusal in the ACL log.
func (s *Server) aclLogDenial(c *Client, user string, d acl.Denial, ctx string, cmd *command, args [][]byte, pos int) {
	var reason, object string
	switch d {
	case acl.DeniedCmd:
		reason, object = "command", cmd.name
	case acl.DeniedKey:
		reason, object = "key", string(args[pos])
	case acl.DeniedChannel:
		reason, object = "channel", string(args[pos])
	default:
		reason = "auth"
	}
	s.aclLog(&aclLogEntry{count: 1, reason: reason, context: ctx, object: object, username: user,
		ctime: time.Now().UnixMilli(), cinfo: c.info()})
}

// aclLog adds an entry, or bumps a matching one of the last ten seen less
// than a minute ago (Redis's grouping).
func (s *Server) aclLog(e *aclLogEntry) {
	s.acl.logMu.Lock()
	defer s.acl.logMu.Unlock()
	log := s.acl.log
	for i := 0; i < len(log) && i < 10; i++ {
		o := log[i]
		if o.reason == e.reason && o.context == e.context && o.object == e.object && o.username == e.username &&
			e.ctime-o.ctime < 60000 {
			o.count++
			o.ctime, o.cinfo = e.ctime, e.cinfo
			copy(log[1:i+1], log[:i])
			log[0] = o
			return
		}
	}
	log = append(log, nil)
	copy(log[1:], log)
	log[0] = e
	if len(log) > s.acl.logMax {
		clear(log[s.acl.logMax:])
		log = log[:s.acl.logMax]
	}
	s.acl.log = log
}

// aclAuthenticate logs the client in as user (nil: "default") when the
// password matches; a failure is logged as Redis logs it.
func (c *Client) aclAuthenticate(user, pass, cmdName []byte) bool {
	name := "default"
	if user != nil {
		name = string(user)
	}
	u := c.srv.acl.users.Get(name)
	if u != nil && u.State().CheckPassword(pass) {
		c.user.Store(u)
		c.setAuthed()
		return true
	}
	ctx := "toplevel"
	if c.sess.tx != nil {
		ctx = "multi"
	}
	c.srv.aclLog(&aclLogEntry{count: 1, reason: "auth", context: ctx, object: string(cmdName), username: name,
		ctime: time.Now().UnixMilli(), cinfo: c.info()})
	return false
}

// aclNoAuthNeeded reports whether a new connection is authenticated from
// the start: the default user is on and has no password.
func (s *Server) aclNoAuthNeeded() bool {
	st := s.acl.def.State()
	return st.NoPass && st.Enabled
}

// aclDefaultNoPass reports whether the default user has nopass (AUTH with
// one argument is then an error).
func (s *Server) aclDefaultNoPass() bool { return s.acl.def.State().NoPass }

// aclReset is RESET's part: back to the default user, authenticated only
// when it needs no password.
func (c *Client) aclReset() {
	c.user.Store(c.srv.acl.def)
	if !c.srv.aclNoAuthNeeded() {
		c.authed = false
		c.p.Authed = false
	}
}

// userName is the client's user as CLIENT LIST and ACL WHOAMI show it.
func (c *Client) userName() string {
	if u := c.user.Load(); u != nil {
		return u.Name()
	}
	return "default"
}

// aclDisconnect closes the connections of users (the caller's own after
// its reply).
func (s *Server) aclDisconnect(caller *Client, users []*acl.User) {
	if len(users) == 0 {
		return
	}
	gone := map[*acl.User]bool{}
	for _, u := range users {
		gone[u] = true
	}
	for _, o := range s.clientList() {
		if u := o.user.Load(); u != nil && gone[u] {
			if o == caller {
				o.quit = true
			} else {
				o.kill()
			}
		}
	}
}

// aclParams are the ACL's CONFIG parameters.
func aclParams(m map[string]configParam) {
	m["aclfile"] = configParam{get: func(s *Server) string { return s.acl.file },
		set: immutable}
	m["acllog-max-len"] = configParam{
		get: func(s *Server) string {
			s.acl.logMu.Lock()
			defer s.acl.logMu.Unlock()
			return itoa(int64(s.acl.logMax))
		},
		set: func(s *Server, v string) error {
			n, ok := parseInt([]byte(v))
			if !ok {
				return fmt.Errorf("argument couldn't be parsed into an integer")
			}
			if n < 0 || n > 1<<62 {
				return fmt.Errorf("argument must be between 0 and 9223372036854775807 inclusive")
			}
			s.acl.logMu.Lock()
			s.acl.logMax = int(n)
			if len(s.acl.log) > s.acl.logMax {
				s.acl.log = s.acl.log[:s.acl.logMax]
			}
			s.acl.logMu.Unlock()
			return nil
		},
	}
	m["acl-pubsub-default"] = configParam{
		get: func(s *Server) string {
			if s.acl.users.PubSubDefaultAll() {
				return "allchannels"
			}
			return "resetchannels"
		},
		set: func(s *Server, v string) error {
			switch strings.ToLower(v) {
			case "allchannels":
				s.acl.users.SetPubSubDefault(true)
			case "resetchannels":
				s.acl.users.SetPubSubDefault(false)
			default:
				return fmt.Errorf("argument(s) must be one of the following: allchannels, resetchannels")
			}
			return nil
		},
	}
}

// aclKillPubSub closes the connections of user u that are subscribed to a
// channel or pattern its rules no longer allow, as Redis 7.0 does after
// ACL SETUSER (the caller's own connection after its reply).
func (s *Server) aclKillPubSub(caller *Client, u *acl.User) {
	st := u.State()
	for _, sel := range st.Selectors {
		if sel.AllChannels {
			return
		}
	}
	var mine []*Client
	for _, o := range s.clientList() {
		if o.user.Load() == u && o.subscribed() {
			mine = append(mine, o)
		}
	}
	if len(mine) == 0 {
		return
	}
	var kill []*Client
	for _, o := range mine {
		if s.pubsub.AnyName(&o.sess.subs, func(k subKind, name string) bool {
			return !st.ChannelAllowed([]byte(name), k == kindPattern)
		}) {
			kill = append(kill, o)
		}
	}
	for _, o := range kill {
		if o == caller {
			o.quit = true
		} else {
			o.kill()
		}
	}
}
