package server

func registerConnection(reg registrar) {
	reg("ping", -1, "fast|x-no-data|x-pubsub-context", 0, 0, 0, "connection", cmdPing)
	reg("echo", 2, "fast|x-no-data", 0, 0, 0, "connection", func(c *Client, a [][]byte) { c.bulk(a[1]) })
	reg("quit", -1, "no_auth|fast|x-tx-control|x-no-data|x-pubsub-context", 0, 0, 0, "connection", func(c *Client, a [][]byte) { c.ok(); c.quit = true })
	reg("auth", -2, "no_auth|fast|x-no-data", 0, 0, 0, "connection", cmdAuth)
	reg("hello", -1, "no_auth|fast|x-no-data", 0, 0, 0, "connection", cmdHello)
	reg("select", 2, "fast|x-no-data", 0, 0, 0, "connection", cmdSelect)
	reg("client", -2, "admin|x-no-data", 0, 0, 0, "connection", cmdClient)
	reg("client|id", 2, "noscript|loading|stale", 0, 0, 0, "connection", cmdClient)
	reg("client|setname", 3, "noscript|loading|stale", 0, 0, 0, "connection", cmdClient)
	reg("client|getname", 2, "noscript|loading|stale", 0, 0, 0, "connection", cmdClient)
	reg("client|info", 2, "noscript|loading|stale", 0, 0, 0, "connection", cmdClient)
	reg("client|list", -2, "admin|noscript|loading|stale", 0, 0, 0, "connection", cmdClient)
	reg("client|kill", -3, "admin|noscript|loading|stale", 0, 0, 0, "connection", cmdClient)
	reg("client|unblock", -3, "admin|noscript|loading|stale", 0, 0, 0, "connection", cmdClient)
	reg("client|no-evict", 3, "admin|noscript|loading|stale", 0, 0, 0, "connection", cmdClient)
	reg("client|help", 2, "loading|stale", 0, 0, 0, "connection", cmdClient)
	reg("client|reply", 3, "noscript|loading|stale", 0, 0, 0, "connection", cmdClient)
	// clientadmin.go, tracking.go: TRACKING detaches (its invalidations
	// come from other goroutines) and sets shard hooks (x-own-locks).
	reg("client|tracking", -3, "noscript|loading|stale|x-detach|x-own-locks", 0, 0, 0, "connection", cmdClient)
	reg("client|caching", 3, "noscript|loading|stale", 0, 0, 0, "connection", cmdClient)
	reg("client|getredir", 2, "noscript|loading|stale", 0, 0, 0, "connection", cmdClient)
	reg("client|trackinginfo", 2, "noscript|loading|stale", 0, 0, 0, "connection", cmdClient)
	reg("client|pause", -3, "admin|noscript|loading|stale", 0, 0, 0, "connection", cmdClient)
	reg("client|unpause", 2, "admin|noscript|loading|stale", 0, 0, 0, "connection", cmdClient)
	reg("client|no-touch", 3, "noscript|loading|stale", 0, 0, 0, "connection", cmdClient)
	reg("client|setinfo", 4, "noscript|loading|stale", 0, 0, 0, "connection", cmdClient)
	reg("reset", 1, "no_auth|fast|x-tx-control|x-pubsub-context", 0, 0, 0, "connection", cmdReset)
}

func cmdPing(c *Client, args [][]byte) {
	if c.proto == 2 && c.subscribed() && len(args) <= 2 {
		c.array(2)
		c.bulkString("pong")
		if len(args) == 2 {
			c.bulk(args[1])
		} else {
			c.bulkString("")
		}
		return
	}
	switch len(args) {
	case 1:
		c.simple("PONG")
	case 2:
		c.bulk(args[1])
	default:
		c.err("ERR wrong number of arguments for 'ping' command")
	}
}

// checkAuth logs the client in as user (nil: "default") with pass
// (acl.go; a failure is logged in the ACL log under cmdName).
func (c *Client) checkAuth(user, pass, cmdName []byte) bool {
	return c.aclAuthenticate(user, pass, cmdName)
}

func (c *Client) setAuthed() {
	c.authed = true
	c.p.authed = true
}

func cmdAuth(c *Client, args [][]byte) {
	if len(args) > 3 {
		c.errSyntax()
		return
	}
	var user, pass []byte
	if len(args) == 2 {
		pass = args[1]
		if c.srv.aclDefaultNoPass() {
			c.err("ERR AUTH <password> called without any password configured for the default user. Are you sure your configuration is correct?")
			return
		}
	} else {
		user, pass = args[1], args[2]
	}
	if !c.checkAuth(user, pass, args[0]) {
		c.err("WRONGPASS invalid username-password pair or user is disabled.")
		return
	}
	c.setAuthed()
	c.ok()
}

func cmdHello(c *Client, args [][]byte) {
	proto := c.proto
	i := 1
	if len(args) > 1 {
		v, ok := parseInt(args[1])
		if !ok {
			c.err("ERR Protocol version is not an integer or out of range")
			return
		}
		if v < 2 || v > 3 {
			c.err("NOPROTO unsupported protocol version")
			return
		}
		proto = int(v)
		i = 2
	}
	var name []byte
	hasName := false
	for ; i < len(args); i++ {
		switch {
		case eq(args[i], "auth") && i+2 < len(args):
			if !c.checkAuth(args[i+1], args[i+2], args[0]) {
				c.err("WRONGPASS invalid username-password pair or user is disabled.")
				return
			}
			c.setAuthed()
			i += 2
		case eq(args[i], "setname") && i+1 < len(args):
			name, hasName = args[i+1], true
			i++
		default:
			c.err("ERR Syntax error in HELLO option '" + sanitize(args[i], 128) + "'")
			return
		}
	}
	if !c.authed {
		c.err("NOAUTH HELLO must be called with the client already authenticated, otherwise the HELLO <proto> AUTH <user> <pass> option can be used to authenticate the client and select the RESP protocol version at the same time")
		return
	}
	if hasName {
		if !validClientName(name) {
			c.err("ERR Client names cannot contain spaces, newlines or special characters.")
			return
		}
		c.mu.Lock()
		c.name = string(name)
		c.mu.Unlock()
	}
	c.proto = proto
	c.view.proto.Store(int32(proto))
	c.mapHeader(7)
	c.bulkString("server")
	c.bulkString("redis")
	c.bulkString("version")
	c.bulkString(RedisVersion)
	c.bulkString("proto")
	c.int(int64(proto))
	c.bulkString("id")
	c.int(c.id)
	c.bulkString("mode")
	c.bulkString(c.srv.redisMode())
	c.bulkString("role")
	c.bulkString(c.srv.role())
	c.bulkString("modules")
	c.array(0)
}

func validClientName(b []byte) bool {
	for _, ch := range b {
		if ch < '!' || ch > '~' {
			return false
		}
	}
	return true
}

func cmdSelect(c *Client, args [][]byte) {
	n, ok := parseInt32Arg(c, args[1])
	if !ok {
		return
	}
	if n < 0 || n >= int64(c.srv.store.DBNum()) {
		c.err("ERR DB index is out of range")
		return
	}
	c.setDB(int(n))
	c.ok()
}

func cmdReset(c *Client, args [][]byte) {
	c.resetSession()
	c.setDB(0)
	c.proto = 2
	c.view.proto.Store(2)
	c.mu.Lock()
	c.name = ""
	c.mu.Unlock()
	c.aclReset()
	c.simple("RESET")
}

func cmdClient(c *Client, args [][]byte) {
	sub := lower(args[1])
	if c.clientAdminCmd(sub, args) { // clientadmin.go
		return
	}
	switch sub {
	case "id":
		c.int(c.id)
	case "setname":
		if len(args) != 3 {
			c.err("ERR wrong number of arguments for 'client|setname' command")
			return
		}
		if !validClientName(args[2]) {
			c.err("ERR Client names cannot contain spaces, newlines or special characters.")
			return
		}
		c.mu.Lock()
		c.name = string(args[2])
		c.mu.Unlock()
		c.ok()
	case "getname":
		c.mu.Lock()
		name := c.name
		c.mu.Unlock()
		if name == "" {
			c.null()
		} else {
			c.bulkString(name)
		}
	case "info":
		c.verbatim(c.info() + "\n")
	case "unblock":
		c.clientUnblock(args)
	case "reply":
		c.clientReply(args)
	case "help":
		c.array(1)
		c.simple("CLIENT <subcommand> [<arg> ...]. Subcommands are: ID, SETNAME, GETNAME, INFO, LIST, KILL, UNBLOCK, HELP.")
	default:
		c.err("ERR unknown subcommand '" + sanitize(args[1], 128) + "'. Try CLIENT HELP.")
	}
}

// clientUnblock is CLIENT UNBLOCK id [TIMEOUT|ERROR].
func (c *Client) clientUnblock(args [][]byte) {
	if len(args) < 3 || len(args) > 4 {
		c.err("ERR wrong number of arguments for 'client|unblock' command")
		return
	}
	id, ok := parseInt(args[2])
	if !ok {
		c.errNotInteger()
		return
	}
	how := int32(unblockTimeout)
	if len(args) == 4 {
		switch {
		case eq(args[3], "timeout"):
		case eq(args[3], "error"):
			how = unblockError
		default:
			c.err("ERR CLIENT UNBLOCK reason should be TIMEOUT or ERROR")
			return
		}
	}
	c.srv.clientsMu.Lock()
	target := c.srv.clients[id]
	c.srv.clientsMu.Unlock()
	c.boolInt(target != nil && target.unblock(how))
}

// kill closes the client's connection; its goroutine or loop notices and
// cleans up.
func (c *Client) kill() {
	c.closed.Store(true)
	c.closeConn()
}

func (s *Server) clientList() []*Client {
	s.clientsMu.Lock()
	defer s.clientsMu.Unlock()
	out := make([]*Client, 0, len(s.clients))
	for _, c := range s.clients {
		out = append(out, c)
	}
	return out
}
