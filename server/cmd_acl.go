package server

// The ACL command (Redis 7.0's subcommands and replies) and the ACL file.

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/damselflydb/damselfly/acl"
)

func registerACL(reg registrar) {
	reg("acl", -2, "x-no-data", 0, 0, 0, "server", cmdACL)
	for _, sub := range []struct {
		name  string
		arity int
		flags string
	}{
		{"cat", -2, "noscript|loading|stale"},
		{"deluser", -3, "admin|noscript|loading|stale"},
		{"dryrun", -4, "admin|noscript|loading|stale"},
		{"genpass", -2, "noscript|loading|stale"},
		{"getuser", 3, "admin|noscript|loading|stale"},
		{"help", 2, "loading|stale"},
		{"list", 2, "admin|noscript|loading|stale"},
		{"load", 2, "admin|noscript|loading|stale"},
		{"log", -2, "admin|noscript|loading|stale"},
		{"save", 2, "admin|noscript|loading|stale"},
		{"setuser", -3, "admin|noscript|loading|stale"},
		{"users", 2, "admin|noscript|loading|stale"},
		{"whoami", 2, "noscript|loading|stale"},
	} {
		reg("acl|"+sub.name, sub.arity, sub.flags, 0, 0, 0, "server", cmdACL)
	}
}

const aclNoFileErr = "ERR This Redis instance is not configured to use an ACL file. You may want to specify users via the " +
	"ACL SETUSER command and then issue a CONFIG REWRITE (assuming you have a Redis configuration file set) in order to " +
	"store users in the Redis configuration."

var aclHelp = []string{
	"ACL <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
	"CAT [<category>]",
	"    List all commands that belong to <category>, or all command categories",
	"    when no category is specified.",
	"DELUSER <username> [<username> ...]",
	"    Delete a list of users.",
	"DRYRUN <username> <command> [<arg> ...]",
	"    Returns whether the user can execute the given command without executing the command.",
	"GETUSER <username>",
	"    Get the user's details.",
	"GENPASS [<bits>]",
	"    Generate a secure 256-bit user password. The optional `bits` argument can",
	"    be used to specify a different size.",
	"LIST",
	"    Show users details in config file format.",
	"LOAD",
	"    Reload users from the ACL file.",
	"LOG [<count> | RESET]",
	"    Show the ACL log entries.",
	"SAVE",
	"    Save the current config to the ACL file.",
	"SETUSER <username> <attribute> [<attribute> ...]",
	"    Create or modify a user with the specified attributes.",
	"USERS",
	"    List all the registered usernames.",
	"WHOAMI",
	"    Return the current connection username.",
	"HELP",
	"    Prints this help.",
}

// aclSubcommands are ACL's subcommands; DRYRUN lives in acl.go.
var aclSubcommands = map[string]subcommandHandler{
	"help":    func(c *Client, _ [][]byte) { c.helpReply(aclHelp) },
	"whoami":  func(c *Client, _ [][]byte) { c.bulkString(c.userName()) },
	"users":   aclUsers,
	"list":    aclList,
	"setuser": aclSetUser,
	"deluser": aclDelUser,
	"getuser": aclGetUser,
	"cat":     aclCat,
	"genpass": aclGenPass,
	"log":     aclLog,
	"dryrun":  func(c *Client, args [][]byte) { c.aclDryRun(args) },
	"save":    aclSave,
	"load":    aclLoad,
}

func cmdACL(c *Client, args [][]byte) {
	dispatchSubcommand(c, args, aclSubcommands, "ACL")
}

// aclWrongArgs answers a subcommand given too many arguments.
func aclWrongArgs(c *Client, args [][]byte) {
	c.err("ERR unknown subcommand or wrong number of arguments for '" + sanitize(args[1], 128) + "'. Try ACL HELP.")
}

func aclUsers(c *Client, _ [][]byte) {
	names := c.srv.acl.users.Names()
	c.array(len(names))
	for _, n := range names {
		c.bulkString(n)
	}
}

func aclList(c *Client, _ [][]byte) {
	lines := c.srv.acl.users.Lines()
	c.array(len(lines))
	for _, l := range lines {
		c.bulkString(l)
	}
}

// aclSetUser is ACL SETUSER name rule...; a changed user's Pub/Sub
// clients that lost channel access are disconnected.
func aclSetUser(c *Client, args [][]byte) {
	name := string(args[2])
	if !acl.ValidUserName(name) {
		c.err("ERR Usernames can't contain spaces or null characters")
		return
	}
	rules := make([]string, len(args)-3)
	for i, r := range args[3:] {
		rules[i] = string(r)
	}
	u, old, err := c.srv.acl.users.SetUser(name, rules)
	if err != nil {
		c.err("ERR " + err.Error())
		return
	}
	if old != nil {
		c.srv.aclKillPubSub(c, u)
	}
	c.ok()
}

// aclDelUser is ACL DELUSER name...; the deleted users' clients are
// disconnected.
func aclDelUser(c *Client, args [][]byte) {
	var names []string
	for _, n := range args[2:] {
		if string(n) == "default" {
			c.err("ERR The 'default' user cannot be removed")
			return
		}
		names = append(names, string(n))
	}
	gone := c.srv.acl.users.Delete(names)
	c.srv.aclDisconnect(c, gone)
	c.int(int64(len(gone)))
}

// aclGetUser is ACL GETUSER name: flags, passwords, the root selector's
// rules and the other selectors.
func aclGetUser(c *Client, args [][]byte) {
	u := c.srv.acl.users.Get(string(args[2]))
	if u == nil {
		c.null()
		return
	}
	st := u.State()
	c.mapHeader(6)
	c.bulkString("flags")
	flags := st.Flags()
	c.setHeader(len(flags))
	for _, f := range flags {
		c.bulkString(f)
	}
	c.bulkString("passwords")
	c.array(len(st.Passwords))
	for _, p := range st.Passwords {
		c.bulkString(p)
	}
	describeSelector(c, st.Root())
	c.bulkString("selectors")
	c.array(len(st.Selectors) - 1)
	for _, sel := range st.Selectors[1:] {
		c.mapHeader(3)
		describeSelector(c, sel)
	}
}

// aclCat is ACL CAT [category]: the categories, or the implemented
// commands of one.
func aclCat(c *Client, args [][]byte) {
	if len(args) > 3 {
		aclWrongArgs(c, args)
		return
	}
	if len(args) == 2 {
		cats := acl.Categories()
		c.array(len(cats))
		for _, k := range cats {
			c.bulkString(k)
		}
		return
	}
	names, ok := c.srv.acl.users.Catalog().InCategory(lower(args[2]))
	if !ok {
		c.err("ERR Unknown category '" + sanitize(args[2], 128) + "'")
		return
	}
	var impl []string
	for _, n := range names {
		if c.srv.lookupName(n) != nil {
			impl = append(impl, n)
		}
	}
	c.array(len(impl))
	for _, n := range impl {
		c.bulkString(n)
	}
}

// aclGenPass is ACL GENPASS [bits].
func aclGenPass(c *Client, args [][]byte) {
	if len(args) > 3 {
		aclWrongArgs(c, args)
		return
	}
	bits := int64(256)
	if len(args) == 3 {
		n, ok := parseInt(args[2])
		if !ok {
			c.errNotInteger()
			return
		}
		bits = n
	}
	if bits <= 0 || bits > 4096 {
		c.err("ERR ACL GENPASS argument must be the number of bits for the output password, a positive number up to 4096")
		return
	}
	c.bulkString(acl.GenPass(int(bits)))
}

// aclLog is ACL LOG [count | RESET].
func aclLog(c *Client, args [][]byte) {
	if len(args) > 3 {
		aclWrongArgs(c, args)
		return
	}
	count := int64(10)
	if len(args) == 3 {
		if eq(args[2], "reset") {
			a := &c.srv.acl
			a.logMu.Lock()
			clear(a.log)
			a.log = a.log[:0]
			a.logMu.Unlock()
			c.ok()
			return
		}
		n, ok := parseInt(args[2])
		if !ok {
			c.errNotInteger()
			return
		}
		count = max(n, 0)
	}
	c.aclLogReply(int(min(count, 1<<30)))
}

// aclSave is ACL SAVE: the users to the ACL file.
func aclSave(c *Client, _ [][]byte) {
	a := &c.srv.acl
	if a.file == "" {
		c.err(aclNoFileErr)
		return
	}
	if err := c.srv.saveACLFile(); err != nil {
		c.srv.log.Warn("ACL SAVE failed", "file", a.file, "err", err)
		c.err("ERR There was an error trying to save the ACLs. Please check the server logs for more information")
		return
	}
	c.ok()
}

// aclLoad is ACL LOAD: the users from the ACL file.
func aclLoad(c *Client, _ [][]byte) {
	if c.srv.acl.file == "" {
		c.err(aclNoFileErr)
		return
	}
	if err := c.srv.loadACLFileFrom(c); err != nil {
		c.err("ERR " + err.Error())
		return
	}
	c.ok()
}

func describeSelector(c *Client, sel *acl.Selector) {
	c.bulkString("commands")
	c.bulkString(sel.DescribeCommands())
	c.bulkString("keys")
	c.bulkString(sel.DescribeKeys())
	c.bulkString("channels")
	c.bulkString(sel.DescribeChannels())
}

// lookupName finds an implemented command or subcommand by full name.
func (s *Server) lookupName(name string) *command {
	p, sub, ok := strings.Cut(name, "|")
	cmd := s.cmds[p]
	if cmd == nil || !ok {
		return cmd
	}
	if sc := cmd.subs[sub]; sc != nil && sc.implemented() {
		return sc
	}
	return nil
}

func (c *Client) aclLogReply(count int) {
	a := &c.srv.acl
	a.logMu.Lock()
	entries := make([]aclLogEntry, 0, min(count, len(a.log)))
	for i := 0; i < len(a.log) && i < count; i++ {
		entries = append(entries, *a.log[i])
	}
	a.logMu.Unlock()
	now := time.Now().UnixMilli()
	c.array(len(entries))
	for _, e := range entries {
		c.mapHeader(7)
		c.bulkString("count")
		c.int(e.count)
		c.bulkString("reason")
		c.bulkString(e.reason)
		c.bulkString("context")
		c.bulkString(e.context)
		c.bulkString("object")
		c.bulkString(e.object)
		c.bulkString("username")
		c.bulkString(e.username)
		c.bulkString("age-seconds")
		c.double(float64(now-e.ctime) / 1000)
		c.bulkString("client-info")
		c.bulkString(e.cinfo)
	}
}

func (c *Client) aclDryRun(args [][]byte) {
	u := c.srv.acl.users.Get(string(args[2]))
	if u == nil {
		c.err("ERR User '" + sanitize(args[2], 128) + "' not found")
		return
	}
	cargs := args[3:]
	cmd := c.srv.cmds[lower(cargs[0])]
	if cmd != nil && cmd.subs != nil && len(cargs) > 1 {
		cmd = cmd.lookupSub(c, cargs)
	}
	if cmd == nil {
		c.err("ERR Command '" + sanitize(cargs[0], 128) + "' not found")
		return
	}
	if !cmd.arityOK(cargs) {
		c.err("ERR wrong number of arguments for '" + cmd.name + "' command")
		return
	}
	if cmd.noAuth {
		c.ok()
		return
	}
	d, pos := aclCheck(u.State(), cmd, cargs)
	switch d {
	case acl.OK:
		c.ok()
	case acl.DeniedCmd:
		c.bulkString("This user has no permissions to run the '" + cmd.name + "' command")
	case acl.DeniedKey:
		c.bulkString("This user has no permissions to access the '" + string(cargs[pos]) + "' key")
	case acl.DeniedChannel:
		c.bulkString("This user has no permissions to access the '" + string(cargs[pos]) + "' channel")
	}
}

// loadACLFile loads the ACL file at start (no clients yet).
func (s *Server) loadACLFile() error { return s.loadACLFileFrom(nil) }

// loadACLFileFrom replaces the users by the ACL file's and disconnects the
// clients of every user but the default (caller's after its reply).
func (s *Server) loadACLFileFrom(caller *Client) error {
	data, err := os.ReadFile(s.acl.file)
	if err != nil {
		return fmt.Errorf("Error loading ACLs, opening file '%s': %s", s.acl.file, errText(err))
	}
	replaced, err := s.acl.users.Load(s.acl.file, strings.Split(string(data), "\n"))
	if err != nil {
		return err
	}
	s.aclDisconnect(caller, replaced)
	return nil
}

// saveACLFile writes every user to the ACL file: a temporary file in the
// same directory, fsynced, then renamed over it, then the directory
// fsynced, so a crash leaves the old file or the new one.
func (s *Server) saveACLFile() error {
	var b strings.Builder
	for _, l := range s.acl.users.Lines() {
		b.WriteString(l)
		b.WriteByte('\n')
	}
	dir := filepath.Dir(s.acl.file)
	f, err := os.CreateTemp(dir, ".acl-*.tmp")
	if err != nil {
		return err
	}
	tmp := f.Name()
	defer os.Remove(tmp) // after a successful rename there is nothing to remove
	if _, err := f.WriteString(b.String()); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	if err := os.Rename(tmp, s.acl.file); err != nil {
		return err
	}
	if d, err := os.Open(dir); err == nil {
		_ = d.Sync()
		d.Close()
	}
	return nil
}
