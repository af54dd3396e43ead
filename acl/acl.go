// Package acl holds Redis 7.0 access control lists: users, their passwords
// (stored as SHA-256 digests), and the selectors that say which commands,
// keys and Pub/Sub channels a user may use.
//
// Design and invariants:
//   - The package knows commands only through a Catalog the server builds
//     from its command table: every command and subcommand ("parent|sub")
//     has a small integer id and its ACL categories. The package never
//     imports the server.
//   - A User is a name and an atomically swapped, immutable State. Rules are
//     applied to a copy and published at once, so a permission check reads
//     one consistent state with no lock, and a client of a user sees the
//     user's new rules at its next command (as in Redis, where clients share
//     the user object).
//   - A selector's command permissions are a bitmap (plus the first
//     arguments allowed by "+cmd|arg"); GETUSER and LIST describe it as Redis
//     7.0 does, by the best fit of categories and then single commands,
//     not by replaying the rules as given.
//   - Users holds the users by name behind a mutex; only ACL commands,
//     AUTH and configuration take it.
package acl

import (
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
)

// Categories are Redis 7.0's ACL categories, in the order ACL CAT lists them.
var categories = [...]string{
	"keyspace", "read", "write", "set", "sortedset", "list", "hash", "string", "bitmap",
	"hyperloglog", "geo", "stream", "pubsub", "admin", "fast", "slow", "blocking",
	"dangerous", "connection", "transaction", "scripting",
}

// Categories returns the ACL category names in Redis's order.
func Categories() []string { return categories[:] }

// CommandInfo describes one command or subcommand to the catalog.
type CommandInfo struct {
	Name       string   // lower case; "parent|sub" for a subcommand
	Categories []string // without '@'
}

// Catalog maps command names to ids and categories to commands. It is
// immutable once built.
type Catalog struct {
	names  []string
	ids    map[string]int
	cats   map[string][]int
	subs   map[int][]int
	parent []int
	match  func(pattern string, s []byte) bool
}

// NewCatalog builds a catalog; ids are assigned in name order. match is
// the glob matcher for key and channel patterns (Redis's stringmatch).
func NewCatalog(cmds []CommandInfo, match func(pattern string, s []byte) bool) *Catalog {
	sorted := append([]CommandInfo(nil), cmds...)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i].Name < sorted[j].Name })
	c := &Catalog{match: match, ids: map[string]int{}, cats: map[string][]int{}, subs: map[int][]int{}}
	for i, ci := range sorted {
		c.names = append(c.names, ci.Name)
		c.ids[ci.Name] = i
		for _, cat := range ci.Categories {
			c.cats[cat] = append(c.cats[cat], i)
		}
	}
	c.parent = make([]int, len(c.names))
	for i, n := range c.names {
		c.parent[i] = -1
		if p, _, ok := strings.Cut(n, "|"); ok {
			if pid, ok := c.ids[p]; ok {
				c.parent[i] = pid
				c.subs[pid] = append(c.subs[pid], i)
			}
		}
	}
	return c
}

// ID returns a command's id, or -1.
func (c *Catalog) ID(name string) int {
	if id, ok := c.ids[name]; ok {
		return id
	}
	return -1
}

// Name returns the name of command id.
func (c *Catalog) Name(id int) string { return c.names[id] }

// InCategory lists the names of the commands in category cat, and whether
// the category exists.
func (c *Catalog) InCategory(cat string) ([]string, bool) {
	if !validCategory(cat) {
		return nil, false
	}
	var out []string
	for _, id := range c.cats[cat] {
		out = append(out, c.names[id])
	}
	return out, true
}

func validCategory(cat string) bool {
	for _, c := range categories {
		if c == cat {
			return true
		}
	}
	return false
}

// HashPassword returns the SHA-256 digest of a password in lower-case hex.
func HashPassword(p []byte) string {
	h := sha256.Sum256(p)
	return hex.EncodeToString(h[:])
}

// GenPass returns bits random bits as lower-case hex (rounded up to a
// nibble).
func GenPass(bits int) string {
	n := (bits + 7) / 8
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		panic("acl: no randomness: " + err.Error())
	}
	return hex.EncodeToString(b)[:(bits+3)/4]
}

// User is one ACL user.
type User struct {
	name  string
	state atomic.Pointer[State]
}

// Name returns the user's name.
func (u *User) Name() string { return u.name }

// State returns the user's current rules.
func (u *User) State() *State { return u.state.Load() }

// State is an immutable snapshot of a user's flags, passwords and
// selectors.
type State struct {
	Enabled   bool
	NoPass    bool
	Passwords []string // hex SHA-256 digests, in insertion order
	Deleted   bool     // the user was removed
	// Sanitize is "", "sanitize-payload" or "skip-sanitize-payload" (a
	// flag Redis shows; RESTORE's payload checks do not depend on it here).
	Sanitize  string
	Selectors []*Selector

	unrestricted bool // some selector allows everything (Unrestricted)
}

// Root returns the user's root selector.
func (s *State) Root() *Selector { return s.Selectors[0] }

// CheckPassword reports whether pass logs in as this user.
func (s *State) CheckPassword(pass []byte) bool {
	if !s.Enabled || s.Deleted {
		return false
	}
	if s.NoPass {
		return true
	}
	h := HashPassword(pass)
	ok := false
	for _, p := range s.Passwords {
		if subtle.ConstantTimeCompare([]byte(p), []byte(h)) == 1 {
			ok = true
		}
	}
	return ok
}

func (s *State) clone() *State {
	n := &State{Enabled: s.Enabled, NoPass: s.NoPass, Sanitize: s.Sanitize, Passwords: append([]string(nil), s.Passwords...)}
	for _, sel := range s.Selectors {
		n.Selectors = append(n.Selectors, sel.clone())
	}
	return n
}

// Users is the set of users by name.
type Users struct {
	cat   *Catalog
	mu    sync.RWMutex
	users map[string]*User
	// resetChannels is acl-pubsub-default's zero value inverted: false
	// would give new users every channel; NewUsers sets Redis 7.0's
	// default, resetchannels.
	resetChannels bool
}

// NewUsers returns the users of a fresh server: "default", on, nopass,
// with every permission.
func NewUsers(cat *Catalog) *Users {
	us := &Users{cat: cat, users: map[string]*User{}, resetChannels: true}
	d := &User{name: "default"}
	d.publish(defaultState(cat))
	us.users["default"] = d
	return us
}

func defaultState(cat *Catalog) *State {
	st := &State{Selectors: []*Selector{newSelector(cat)}}
	st.Enabled, st.NoPass = true, true
	root := st.Root()
	root.allCommands(true)
	root.AllKeys, root.AllChannels = true, true
	return st
}

// Catalog returns the command catalog.
func (us *Users) Catalog() *Catalog { return us.cat }

// newState is a new user's state: off, no password, no permissions, and
// every channel when acl-pubsub-default is allchannels.
func (us *Users) newState() *State {
	root := newSelector(us.cat)
	root.AllChannels = !us.resetChannels
	return &State{Selectors: []*Selector{root}}
}

// Get returns a user by name, or nil.
func (us *Users) Get(name string) *User {
	us.mu.RLock()
	defer us.mu.RUnlock()
	return us.users[name]
}

// Names returns the user names, sorted.
func (us *Users) Names() []string {
	us.mu.RLock()
	defer us.mu.RUnlock()
	out := make([]string, 0, len(us.users))
	for n := range us.users {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// SetUser applies rules to the user name, creating it when absent. Either
// every rule applies or none does; the error is Redis's reply text. It
// returns the user and its state before the change (nil when new).
func (us *Users) SetUser(name string, rules []string) (*User, *State, error) {
	merged, err := mergeSelectorArgs(rules)
	if err != nil {
		return nil, nil, err
	}
	us.mu.Lock()
	defer us.mu.Unlock()
	u := us.users[name]
	var old, st *State
	if u != nil {
		old = u.state.Load()
		st = old.clone()
	} else {
		st = us.newState()
	}
	for _, r := range merged {
		if err := st.apply(us, r); err != nil {
			return nil, nil, err
		}
	}
	if u == nil {
		u = &User{name: name}
		us.users[name] = u
	}
	u.publish(st)
	return u, old, nil
}

// Delete removes users by name and returns the removed ones (the default
// user cannot be removed: the caller checks).
func (us *Users) Delete(names []string) []*User {
	us.mu.Lock()
	defer us.mu.Unlock()
	var out []*User
	for _, n := range names {
		if u := us.users[n]; u != nil {
			delete(us.users, n)
			st := u.state.Load().clone()
			st.Deleted = true
			u.publish(st)
			out = append(out, u)
		}
	}
	return out
}

// SetDefaultPassword makes pass the default user's only password (empty:
// nopass), as requirepass does.
func (us *Users) SetDefaultPassword(pass string) {
	rules := []string{"resetpass", "nopass"}
	if pass != "" {
		rules = []string{"resetpass", ">" + pass}
	}
	if _, _, err := us.SetUser("default", rules); err != nil {
		panic("acl: " + err.Error())
	}
}

// publish makes st the user's state.
func (u *User) publish(st *State) {
	st.unrestricted = st.computeUnrestricted()
	u.state.Store(st)
}

// Describe returns the user as ACL LIST shows it.
func (u *User) Describe() string {
	st := u.state.Load()
	var b strings.Builder
	b.WriteString("user ")
	b.WriteString(u.name)
	b.WriteString(" ")
	b.WriteString(strings.Join(st.Flags(), " "))
	for _, p := range st.Passwords {
		b.WriteString(" #")
		b.WriteString(p)
	}
	b.WriteString(" ")
	b.WriteString(st.Root().describe())
	for _, sel := range st.Selectors[1:] {
		b.WriteString(" (")
		b.WriteString(sel.describe())
		b.WriteString(")")
	}
	return b.String()
}

// Flags returns the user's flags as GETUSER lists them.
func (s *State) Flags() []string {
	f := []string{"off"}
	if s.Enabled {
		f[0] = "on"
	}
	if s.NoPass {
		f = append(f, "nopass")
	}
	if s.Sanitize != "" {
		f = append(f, s.Sanitize)
	}
	return f
}
