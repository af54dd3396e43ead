package acl

import "strings"

// Denial says why a command was refused; the order is Redis's, used to
// report the most relevant refusal of several selectors.
type Denial int

// The results of a permission check.
const (
	OK Denial = iota
	DeniedCmd
	DeniedKey
	DeniedAuth
	DeniedChannel
)

// Key is one key argument of a command with the access it needs.
type Key struct {
	Name []byte
	Perm uint8 // Read, Write, both, or 0 (any pattern will do)
	Pos  int   // argument index
}

// Channel is one Pub/Sub channel argument of a command.
type Channel struct {
	Name    []byte
	Pattern bool // PSUBSCRIBE: must equal an allowed pattern literally
	Pos     int
}

// Unrestricted reports whether the user may run any command on any key
// and channel, so that the caller can skip gathering keys (computed when
// the state is published: one field read on the command path).
func (st *State) Unrestricted() bool { return st.unrestricted }

func (st *State) computeUnrestricted() bool {
	for _, s := range st.Selectors {
		if s.AllKeys && s.AllChannels && s.allAllowed() {
			return true
		}
	}
	return false
}

// allAllowed reports whether every command of the catalog is allowed.
func (s *Selector) allAllowed() bool {
	n := len(s.cat.names)
	for i, w := range s.allowed {
		if i < n/64 {
			if w != ^uint64(0) {
				return false
			}
		} else if bits := n % 64; bits != 0 && w&(1<<bits-1) != 1<<bits-1 {
			return false
		}
	}
	return true
}

// Check reports whether a call of command id with these keys and channels
// is allowed, and if not why and at which argument (Redis's most relevant
// refusal across the selectors). firstArg is the call's first argument
// (nil when none), for rules like "+select|0".
func (st *State) Check(id int, firstArg []byte, keys []Key, chans []Channel) (Denial, int) {
	worst, pos := OK, -1
	for _, s := range st.Selectors {
		d, p := s.check(id, firstArg, keys, chans)
		if d == OK {
			return OK, -1
		}
		if d > worst || (d == worst && p > pos) {
			worst, pos = d, p
		}
	}
	return worst, pos
}

func (s *Selector) check(id int, firstArg []byte, keys []Key, chans []Channel) (Denial, int) {
	if id < 0 || !s.CanRun(id) && !s.firstArgAllowed(id, firstArg) {
		return DeniedCmd, 0
	}
	if !s.AllKeys {
		for i := range keys {
			k := &keys[i]
			if !s.keyAllowed(k.Name, k.Perm) {
				return DeniedKey, k.Pos
			}
		}
	}
	if !s.AllChannels {
		for _, c := range chans {
			if !s.channelAllowed(c.Name, c.Pattern) {
				return DeniedChannel, c.Pos
			}
		}
	}
	return OK, -1
}

// keyAllowed reports whether some pattern grants perm on key.
func (s *Selector) keyAllowed(key []byte, perm uint8) bool {
	if s.AllKeys {
		return true
	}
	for i := range s.Keys {
		k := &s.Keys[i]
		if k.Perm&perm != perm {
			continue
		}
		switch {
		case k.prefix:
			// "lit*": no glob needed
			if len(key) >= len(k.Pattern)-1 && string(key[:len(k.Pattern)-1]) == k.Pattern[:len(k.Pattern)-1] {
				return true
			}
		case s.cat.match(k.Pattern, key):
			return true
		}
	}
	return false
}

func (s *Selector) channelAllowed(ch []byte, pattern bool) bool {
	if s.AllChannels {
		return true
	}
	for _, p := range s.Channels {
		if pattern {
			if p == string(ch) {
				return true
			}
		} else if s.cat.match(p, ch) {
			return true
		}
	}
	return false
}

// ChannelAllowed reports whether any selector of the user allows channel
// ch (a pattern must be allowed literally), as a subscriber needs.
func (st *State) ChannelAllowed(ch []byte, pattern bool) bool {
	for _, s := range st.Selectors {
		if s.channelAllowed(ch, pattern) {
			return true
		}
	}
	return false
}

func (s *Selector) firstArgAllowed(id int, arg []byte) bool {
	if arg == nil {
		return false
	}
	for _, fa := range s.firstArgs[id] {
		if strings.EqualFold(fa, string(arg)) {
			return true
		}
	}
	return false
}

// CommandAllowed reports whether some selector lets the user run command
// id at all (whatever its keys), as CLIENT KILL and DRYRUN-like callers ask.
func (st *State) CommandAllowed(id int) bool {
	for _, s := range st.Selectors {
		if s.CanRun(id) {
			return true
		}
	}
	return false
}
