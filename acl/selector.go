package acl

import (
	"errors"
	"strings"
)

// Key permissions a key pattern grants, and a key access needs.
const (
	Read  uint8 = 1
	Write uint8 = 2
)

// KeyPattern is one key pattern with the access it grants.
type KeyPattern struct {
	Perm    uint8 // Read|Write for "~p"
	Pattern string
	prefix  bool // Pattern is a literal followed by one '*' (matched without glob)
}

// isPrefixPattern reports whether p is a literal prefix followed by '*'.
func isPrefixPattern(p string) bool {
	if len(p) < 2 || p[len(p)-1] != '*' {
		return false
	}
	return !strings.ContainsAny(p[:len(p)-1], "*?[\\")
}

// Selector is one set of command, key and channel permissions. A user has a
// root selector and any number of further ones; a command runs when one
// selector allows all of it.
type Selector struct {
	cat         *Catalog
	allowed     []uint64         // bit per command id
	future      bool             // commands unknown to the catalog (+@all)
	firstArgs   map[int][]string // "+select|0": first arguments allowed for a denied command
	AllKeys     bool
	Keys        []KeyPattern
	AllChannels bool
	Channels    []string
}

func newSelector(cat *Catalog) *Selector {
	return &Selector{cat: cat, allowed: make([]uint64, (len(cat.names)+63)/64)}
}

func (s *Selector) clone() *Selector {
	n := *s
	n.allowed = append([]uint64(nil), s.allowed...)
	if s.firstArgs != nil {
		n.firstArgs = make(map[int][]string, len(s.firstArgs))
		for id, fa := range s.firstArgs {
			n.firstArgs[id] = append([]string(nil), fa...)
		}
	}
	n.Keys = append([]KeyPattern(nil), s.Keys...)
	n.Channels = append([]string(nil), s.Channels...)
	return &n
}

// CanRun reports whether the selector allows command id.
func (s *Selector) CanRun(id int) bool { return s.allowed[id>>6]&(1<<(id&63)) != 0 }

func (s *Selector) set(id int, on bool) {
	if on {
		s.allowed[id>>6] |= 1 << (id & 63)
	} else {
		s.allowed[id>>6] &^= 1 << (id & 63)
	}
}

func (s *Selector) allCommands(on bool) {
	var v uint64
	if on {
		v = ^uint64(0)
	}
	for i := range s.allowed {
		s.allowed[i] = v
	}
	s.future = on
	s.firstArgs = nil
}

// changePerm allows or denies command id and, for a container command,
// every subcommand of it (Redis's ACLChangeSelectorPerm), forgetting the
// first arguments allowed for it.
func (s *Selector) changePerm(id int, on bool) {
	s.set(id, on)
	delete(s.firstArgs, id)
	for _, sub := range s.cat.subs[id] {
		s.set(sub, on)
	}
}

// applyCategory allows or denies every command of a category.
func (s *Selector) applyCategory(cat string, on bool) {
	for _, id := range s.cat.cats[cat] {
		s.changePerm(id, on)
	}
}

// The error texts of ACL SETUSER, as Redis words them.
var (
	errUnknownCmd   = errors.New("Unknown command or category name in ACL")
	errSyntax       = errors.New("Syntax error")
	errKeysAfterAll = errors.New("Adding a pattern after the * pattern (or the 'allkeys' flag) is not valid and does not have any effect. Try 'resetkeys' to start with an empty list of patterns")
	errChanAfterAll = errors.New("Adding a pattern after the * pattern (or the 'allchannels' flag) is not valid and does not have any effect. Try 'resetchannels' to start with an empty list of channels")
	errNoPassword   = errors.New("The password you are trying to remove from the user does not exist")
	errBadHash      = errors.New("The password hash must be exactly 64 characters and contain only lowercase hexadecimal characters")
	errFirstArg     = errors.New("Allowing first-arg of a subcommand is not supported")
)

// RuleError is a rule that could not be applied.
type RuleError struct {
	Rule string
	Err  error
}

func (e *RuleError) Error() string {
	return "Error in ACL SETUSER modifier '" + e.Rule + "': " + e.Err.Error()
}

// mergeSelectorArgs joins the arguments of a selector written across
// several arguments ("(+get", "~k)") into one rule.
func mergeSelectorArgs(rules []string) ([]string, error) {
	var out []string
	var open []string
	for _, r := range rules {
		if open != nil {
			open = append(open, r)
			if strings.HasSuffix(r, ")") {
				out = append(out, strings.Join(open, " "))
				open = nil
			}
			continue
		}
		if strings.HasPrefix(r, "(") && !strings.HasSuffix(r, ")") {
			open = []string{r}
			continue
		}
		out = append(out, r)
	}
	if open != nil {
		return nil, &unbalancedError{start: open[0]}
	}
	return out, nil
}

type unbalancedError struct{ start string }

func (e *unbalancedError) Error() string {
	return "Unmatched parenthesis in acl selector starting at '" + e.start + "'."
}

// apply applies one rule to a user's state.
func (st *State) apply(us *Users, rule string) error {
	cat := us.cat
	fail := func(err error) error { return &RuleError{Rule: rule, Err: err} }
	low := strings.ToLower(rule)
	switch {
	case rule == "":
		// an empty rule changes nothing, as in Redis
	case low == "on":
		st.Enabled = true
	case low == "off":
		st.Enabled = false
	case low == "nopass":
		st.NoPass = true
		st.Passwords = nil
	case low == "resetpass":
		st.NoPass = false
		st.Passwords = nil
	case low == "reset":
		*st = *us.newState()
		st.Sanitize = "sanitize-payload"
	case low == "sanitize-payload", low == "skip-sanitize-payload":
		st.Sanitize = low
	case low == "clearselectors":
		st.Selectors = st.Selectors[:1]
	case strings.HasPrefix(rule, ">"):
		st.addPassword(HashPassword([]byte(rule[1:])))
	case strings.HasPrefix(rule, "#"):
		if !validHash(rule[1:]) {
			return fail(errBadHash)
		}
		st.addPassword(rule[1:])
	case strings.HasPrefix(rule, "<"), strings.HasPrefix(rule, "!"):
		h := rule[1:]
		if rule[0] == '<' {
			h = HashPassword([]byte(h))
		} else if !validHash(h) {
			return fail(errBadHash)
		}
		i := indexOf(st.Passwords, h)
		if i < 0 {
			return fail(errNoPassword)
		}
		st.Passwords = append(st.Passwords[:i:i], st.Passwords[i+1:]...)
	case strings.HasPrefix(rule, "(") && strings.HasSuffix(rule, ")"):
		sel := newSelector(cat)
		sel.AllChannels = !us.resetChannels
		for _, r := range strings.Fields(rule[1 : len(rule)-1]) {
			if err := sel.apply(r); err != nil {
				return fail(err)
			}
		}
		st.Selectors = append(st.Selectors, sel)
	default:
		if err := st.Root().apply(rule); err != nil {
			return fail(err)
		}
	}
	return nil
}

func (st *State) addPassword(h string) {
	st.NoPass = false
	if indexOf(st.Passwords, h) < 0 {
		st.Passwords = append(st.Passwords, h)
	}
}

func indexOf(list []string, s string) int {
	for i, v := range list {
		if v == s {
			return i
		}
	}
	return -1
}

func validHash(h string) bool {
	if len(h) != 64 {
		return false
	}
	for _, c := range h {
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return true
}

// apply applies one selector rule (commands, keys, channels).
func (s *Selector) apply(rule string) error {
	low := strings.ToLower(rule)
	switch {
	case low == "allkeys" || rule == "~*":
		s.AllKeys = true
		s.Keys = nil
	case low == "resetkeys":
		s.AllKeys = false
		s.Keys = nil
	case low == "allchannels" || rule == "&*":
		s.AllChannels = true
		s.Channels = nil
	case low == "resetchannels":
		s.AllChannels = false
		s.Channels = nil
	case low == "allcommands" || low == "+@all":
		s.allCommands(true)
	case low == "nocommands" || low == "-@all":
		s.allCommands(false)
	case strings.HasPrefix(rule, "~") || strings.HasPrefix(rule, "%"):
		return s.addKeyPattern(rule)
	case strings.HasPrefix(rule, "&"):
		if s.AllChannels {
			return errChanAfterAll
		}
		if indexOf(s.Channels, rule[1:]) < 0 {
			s.Channels = append(s.Channels, rule[1:])
		}
	case strings.HasPrefix(rule, "+@") || strings.HasPrefix(rule, "-@"):
		cat := low[2:]
		if !validCategory(cat) {
			return errUnknownCmd
		}
		s.applyCategory(cat, rule[0] == '+')
	case strings.HasPrefix(rule, "+") || strings.HasPrefix(rule, "-"):
		name := low[1:]
		if id := s.cat.ID(name); id >= 0 {
			s.changePerm(id, rule[0] == '+')
			return nil
		}
		i := strings.LastIndexByte(name, '|')
		if rule[0] == '-' || i < 0 {
			return errUnknownCmd
		}
		id := s.cat.ID(name[:i])
		switch {
		case id < 0:
			return errUnknownCmd
		case s.cat.parent[id] >= 0:
			return errFirstArg
		case i == len(name)-1 || len(s.cat.subs[id]) > 0:
			// "debug|" is malformed; "config|nosuch" names no subcommand.
			if i == len(name)-1 {
				return errSyntax
			}
			return errUnknownCmd
		}
		// "+select|0": a first argument allowed for an otherwise
		// denied command (Redis 7.0 keeps it, deprecated).
		fa := name[i+1:]
		if s.firstArgs == nil {
			s.firstArgs = map[int][]string{}
		}
		if indexOf(s.firstArgs[id], fa) < 0 {
			s.firstArgs[id] = append(s.firstArgs[id], fa)
		}
	default:
		return errSyntax
	}
	return nil
}

func (s *Selector) addKeyPattern(rule string) error {
	perm := Read | Write
	pat := rule[1:]
	if rule[0] == '%' {
		spec, p, ok := strings.Cut(rule[1:], "~")
		if !ok || spec == "" {
			return errSyntax
		}
		perm = 0
		for _, c := range strings.ToUpper(spec) {
			switch c {
			case 'R':
				perm |= Read
			case 'W':
				perm |= Write
			default:
				return errSyntax
			}
		}
		pat = p
	}
	if s.AllKeys {
		return errKeysAfterAll
	}
	if pat == "*" && perm == Read|Write {
		s.AllKeys = true
		s.Keys = nil
		return nil
	}
	for i, k := range s.Keys {
		if k.Pattern == pat {
			s.Keys[i].Perm |= perm
			return nil
		}
	}
	s.Keys = append(s.Keys, KeyPattern{Perm: perm, Pattern: pat, prefix: isPrefixPattern(pat)})
	return nil
}

// describeCommands returns the command rules as Redis 7.0 shows them: it
// does not keep the rules as given but describes the permission bitmap,
// starting from +@all or -@all, then greedily the categories that agree
// with the bitmap more than they disagree (fewest disagreements first,
// then most agreements; a chosen category counts as against the bitmap
// for the next choices), then the single commands that still differ (in
// name order; Redis's order is its hash table's) and the allowed first
// arguments.
func (s *Selector) describeCommands() string {
	fake := newSelector(s.cat)
	var parts []string
	additive := !s.future
	sign := "+@"
	if s.future {
		parts = append(parts, "+@all")
		fake.allCommands(true)
		sign = "-@"
	} else {
		parts = append(parts, "-@all")
	}
	temp := s.clone()
	applied := make([]bool, len(categories))
	for {
		best, minDiff, maxSame := -1, int(^uint(0)>>1), 0
		for j, cat := range categories {
			if applied[j] {
				continue
			}
			on, off := 0, 0
			for _, id := range s.cat.cats[cat] {
				if temp.CanRun(id) {
					on++
				} else {
					off++
				}
			}
			diff, same := on, off
			if additive {
				diff, same = off, on
			}
			if same > diff && (diff < minDiff || diff == minDiff && same > maxSame) {
				best, minDiff, maxSame = j, diff, same
			}
		}
		if best < 0 {
			break
		}
		fake.applyCategory(categories[best], additive)
		temp.applyCategory(categories[best], !additive)
		parts = append(parts, sign+categories[best])
		applied[best] = true
	}
	for id, name := range s.cat.names {
		if u := s.CanRun(id); u != fake.CanRun(id) {
			sign := "-"
			if u {
				sign = "+"
			}
			parts = append(parts, sign+name)
			fake.changePerm(id, u)
		}
		for _, fa := range s.firstArgs[id] {
			parts = append(parts, "+"+name+"|"+fa)
		}
	}
	return strings.Join(parts, " ")
}

// DescribeKeys returns the key patterns as GETUSER shows them.
func (s *Selector) DescribeKeys() string {
	if s.AllKeys {
		return "~*"
	}
	parts := make([]string, 0, len(s.Keys))
	for _, k := range s.Keys {
		parts = append(parts, k.describe())
	}
	return strings.Join(parts, " ")
}

func (k KeyPattern) describe() string {
	switch k.Perm {
	case Read:
		return "%R~" + k.Pattern
	case Write:
		return "%W~" + k.Pattern
	}
	return "~" + k.Pattern
}

// DescribeChannels returns the channel patterns as GETUSER shows them.
func (s *Selector) DescribeChannels() string {
	if s.AllChannels {
		return "&*"
	}
	parts := make([]string, 0, len(s.Channels))
	for _, c := range s.Channels {
		parts = append(parts, "&"+c)
	}
	return strings.Join(parts, " ")
}

// DescribeCommands returns the command rules as GETUSER shows them.
func (s *Selector) DescribeCommands() string { return s.describeCommands() }

// describe returns the selector as ACL LIST shows it.
func (s *Selector) describe() string {
	var parts []string
	if s.AllKeys {
		parts = append(parts, "~*")
	} else {
		for _, k := range s.Keys {
			parts = append(parts, k.describe())
		}
	}
	if s.AllChannels {
		parts = append(parts, "&*")
	} else {
		parts = append(parts, "resetchannels")
		for _, c := range s.Channels {
			parts = append(parts, "&"+c)
		}
	}
	parts = append(parts, s.describeCommands())
	return strings.Join(parts, " ")
}
