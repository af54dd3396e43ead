package server

import (
	"errors"
	"net"
	"strings"
)

// Protected actions, as in Redis 7: a few things that let a client write
// arbitrary files or crash the server (CONFIG SET dir/dbfilename, DEBUG) are
// refused unless enable-protected-configs / enable-debug-command say "yes",
// or "local" and the client comes from the loopback interface or a Unix
// socket. Both settings are start-up only (Config), never CONFIG SET: a
// client that could flip them would bypass the protection.

// Values of Config.EnableProtectedConfigs and Config.EnableDebugCommand.
const (
	ProtectedNo    = "no"
	ProtectedYes   = "yes"
	ProtectedLocal = "local"
)

// CheckProtectedAction validates an enable-protected-configs /
// enable-debug-command value ("" means no).
func CheckProtectedAction(v string) error {
	switch strings.ToLower(v) {
	case "", ProtectedNo, ProtectedYes, ProtectedLocal:
		return nil
	}
	return errors.New("argument(s) must be one of the following: no, yes, local")
}

func normProtected(v string) string {
	if v = strings.ToLower(v); v == "" {
		return ProtectedNo
	}
	return v
}

// protectedConfigs are the CONFIG SET parameters guarded by
// enable-protected-configs (Redis 7.0's PROTECTED_CONFIG set).
var protectedConfigs = map[string]bool{"dir": true, "dbfilename": true, "dbdirs": true}

// allowProtected applies one protected-action setting to this client.
func (c *Client) allowProtected(setting string) bool {
	switch setting {
	case ProtectedYes:
		return true
	case ProtectedLocal:
		return c.isLocal()
	}
	return false
}

// isLocal reports a Unix socket or loopback client.
func (c *Client) isLocal() bool {
	if c.isUnix || c.fromPrimary {
		return true
	}
	host, _, err := net.SplitHostPort(c.addr)
	if err != nil {
		return false
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// debugDenied answers a DEBUG that enable-debug-command does not allow and
// reports whether it did.
func (c *Client) debugDenied(cmd *command) bool {
	if cmd.name != "debug" || c.allowProtected(c.srv.enableDebug) {
		return false
	}
	c.err("ERR DEBUG command not allowed. If the enable-debug-command option is set to \"local\", " +
		"you can run it from a local connection, otherwise you need to set this option in the configuration file, " +
		"and then restart the server.")
	c.txFlag()
	return true
}

// configSetDenied is the CONFIG SET error for a protected or immutable
// parameter ("" when the client may set it).
func (c *Client) configSetDenied(name string) string {
	if immutableConfigs[name] {
		return "can't set immutable config"
	}
	if protectedConfigs[name] && !c.allowProtected(c.srv.enableProtectedConfigs) {
		return "can't set protected config"
	}
	return ""
}

// immutableConfigs are start-up settings that CONFIG GET shows and CONFIG
// SET refuses with Redis's error.
var immutableConfigs = map[string]bool{"enable-protected-configs": true, "enable-debug-command": true, "enable-module-command": true}

// protectedParams adds the protected-action settings to the CONFIG table.
func protectedParams(m map[string]configParam) {
	refuse := func(*Server, string) error { return errors.New("can't set immutable config") }
	m["enable-protected-configs"] = configParam{get: func(s *Server) string { return s.enableProtectedConfigs }, set: refuse}
	m["enable-debug-command"] = configParam{get: func(s *Server) string { return s.enableDebug }, set: refuse}
	m["enable-module-command"] = configParam{get: func(s *Server) string { return ProtectedNo }, set: refuse}
}
