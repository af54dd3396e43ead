package acl

import (
	"fmt"
	"strings"
)

// ValidUserName reports whether name may name a user (no spaces or NUL
// bytes, as Redis requires).
func ValidUserName(name string) bool {
	return !strings.ContainsAny(name, " \x00")
}

// ParseUserLine splits one line of an ACL file or a config file's "user"
// directive ("user alice on >pw ~* +@all") into the user name and its
// rules. Arguments are separated by single spaces, as Redis splits them.
// ok is false when the line does not start with "user name"; a blank line
// gives an empty name and ok true.
func ParseUserLine(line string) (name string, rules []string, ok bool) {
	line = strings.Trim(line, " \t\r\n")
	if line == "" {
		return "", nil, true
	}
	var args []string
	for _, a := range strings.Split(line, " ") {
		if a != "" {
			args = append(args, a)
		}
	}
	if len(args) < 2 || args[0] != "user" {
		return "", nil, false
	}
	for i := range args[2:] {
		args[2+i] = strings.Trim(args[2+i], "\t\r\n")
	}
	return args[1], args[2:], true
}

// CheckRules reports the first rule of a user definition that would not
// apply (Redis's SETUSER error text), without creating the user; for
// configuration files checked before the server starts.
func (c *Catalog) CheckRules(rules []string) error {
	us := NewUsers(c)
	_, _, err := us.SetUser("check", rules)
	return err
}

// Load replaces every user by the users of an ACL file's lines, or changes
// nothing and returns Redis's error text (file names the file in it). The
// default user keeps its identity (clients authenticated as it stay) and
// takes the file's rules, or a fresh default's when the file has none. It
// returns the users that were replaced: every old user but the default.
func (us *Users) Load(file string, lines []string) ([]*User, error) {
	fresh := &Users{cat: us.cat, users: map[string]*User{}}
	us.mu.RLock()
	fresh.resetChannels = us.resetChannels
	us.mu.RUnlock()
	var errs strings.Builder
	for i, line := range lines {
		n := i + 1
		name, rules, ok := ParseUserLine(line)
		if !ok {
			fmt.Fprintf(&errs, "%s:%d should start with user keyword followed by the username. ", file, n)
			continue
		}
		if name == "" {
			continue
		}
		if !ValidUserName(name) {
			fmt.Fprintf(&errs, "'%s:%d: username '%s' contains invalid characters. ", file, n, name)
			continue
		}
		if fresh.users[name] != nil {
			fmt.Fprintf(&errs, "WARNING: Duplicate user '%s' found on line %d. ", name, n)
			continue
		}
		merged, err := mergeSelectorArgs(rules)
		if err != nil {
			fmt.Fprintf(&errs, "%s:%d: Unmatched parenthesis in selector definition.", file, n)
			fresh.users[name] = &User{name: name}
			fresh.users[name].publish(fresh.newState())
			continue
		}
		st := fresh.newState()
		for _, r := range merged {
			if err := st.apply(fresh, r); err != nil {
				msg := err.Error()
				if re, ok := err.(*RuleError); ok {
					msg = "Error in applying operation '" + re.Rule + "': " + re.Err.Error()
				}
				fmt.Fprintf(&errs, "%s:%d: %s. ", file, n, msg)
				break
			}
		}
		u := &User{name: name}
		u.publish(st)
		fresh.users[name] = u
	}
	if errs.Len() > 0 {
		errs.WriteString("WARNING: ACL errors detected, no change to the previously active ACL rules was performed")
		return nil, fmt.Errorf("%s", errs.String())
	}
	us.mu.Lock()
	defer us.mu.Unlock()
	def := us.users["default"]
	var newDef *State
	if u := fresh.users["default"]; u != nil {
		newDef = u.state.Load()
	} else {
		newDef = defaultState(us.cat)
	}
	var replaced []*User
	for name, u := range us.users {
		if name != "default" {
			st := u.state.Load().clone()
			st.Deleted = true
			u.publish(st)
			replaced = append(replaced, u)
		}
	}
	fresh.users["default"] = def
	def.publish(newDef)
	us.users = fresh.users
	return replaced, nil
}

// Lines returns the users in ACL file format, sorted by name (ACL SAVE).
func (us *Users) Lines() []string {
	var out []string
	for _, n := range us.Names() {
		if u := us.Get(n); u != nil {
			out = append(out, u.Describe())
		}
	}
	return out
}

// SetPubSubDefault sets acl-pubsub-default: whether new users and "reset"
// start with every channel (allchannels) or none (resetchannels, Redis
// 7.0's default).
func (us *Users) SetPubSubDefault(all bool) {
	us.mu.Lock()
	us.resetChannels = !all
	us.mu.Unlock()
}

// PubSubDefaultAll reports acl-pubsub-default.
func (us *Users) PubSubDefaultAll() bool {
	us.mu.RLock()
	defer us.mu.RUnlock()
	return !us.resetChannels
}
