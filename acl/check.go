package acl

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
// and channel, so that the caller can skip gathering keys.
func (st *State) Unrestricted() bool {
	for _, s := range st.Selectors {
		if s.future && len(s.rules) == 0 && s.AllKeys && s.AllChannels {
			return true
		}
	}
	return false
}

// Check reports whether a call of command id with these keys and channels
// is allowed, and if not why and at which argument (Redis's most relevant
// refusal across the selectors).
func (st *State) Check(id int, keys []Key, chans []Channel) (Denial, int) {
	worst, pos := OK, -1
	for _, s := range st.Selectors {
		d, p := s.check(id, keys, chans)
		if d == OK {
			return OK, -1
		}
		if d > worst || (d == worst && p > pos) {
			worst, pos = d, p
		}
	}
	return worst, pos
}

func (s *Selector) check(id int, keys []Key, chans []Channel) (Denial, int) {
	if id < 0 || !s.CanRun(id) {
		return DeniedCmd, 0
	}
	if !s.AllKeys {
		for _, k := range keys {
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
	for _, k := range s.Keys {
		if k.Perm&perm == perm && s.cat.match([]byte(k.Pattern), key) {
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
		} else if s.cat.match([]byte(p), ch) {
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
