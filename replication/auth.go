package replication

// masterCredentials are what the handshake sends with AUTH: masteruser
// (an ACL user, Redis 6+) and masterauth. CONFIG SET may change them while
// a link runs; like Redis, the new values are used from the next connect.
type masterCredentials struct {
	user, pass string
}

// SetMasterAuth sets masteruser and masterauth for the next handshake.
func (n *Node) SetMasterAuth(user, pass string) {
	n.creds.Store(&masterCredentials{user: user, pass: pass})
}

// authArgs is the AUTH command of the handshake, nil when there is no
// masterauth: as Redis, masteruser alone sends nothing.
func (n *Node) authArgs() []string {
	c := n.creds.Load()
	switch {
	case c == nil || c.pass == "":
		return nil
	case c.user != "":
		return []string{"AUTH", c.user, c.pass}
	default:
		return []string{"AUTH", c.pass}
	}
}
