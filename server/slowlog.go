package server

// SLOWLOG: commands that ran longer than slowlog-log-slower-than
// microseconds (-1: none; 0: all), newest first, at most slowlog-max-len
// entries, each as Redis 7.0 keeps it: id, unix time, duration in
// microseconds, at most 32 arguments of at most 128 bytes each (the rest
// summarized), the client's address and name. Secrets are redacted as in
// MONITOR (redactArgs). Entries are added only for slow commands, under a
// mutex the fast path never takes (cmdDone reads one atomic).

import (
	"math"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

const (
	slowlogMaxArgc = 32
	slowlogMaxArg  = 128
)

type slowEntry struct {
	id         int64
	unix       int64
	us         int64
	args       [][]byte
	addr, name string
}

type slowlog struct {
	threshold atomic.Int64 // µs; -1 off
	maxLen    atomic.Int64
	mu        sync.Mutex
	nextID    int64
	entries   []slowEntry // oldest first
}

func (l *slowlog) init() {
	l.threshold.Store(10000)
	l.maxLen.Store(128)
}

// slowlogPush logs a command that took us microseconds.
func (c *Client) slowlogPush(cmd *command, args [][]byte, us int64) {
	c.mu.Lock()
	name := c.name
	c.mu.Unlock()
	c.srv.obs.slow.add(redactArgs(cmd, args), us, c.addr, name)
}

// add appends an entry for a command of us microseconds run by the client
// at addr named name, its arguments trimmed as Redis trims them.
func (l *slowlog) add(args [][]byte, us int64, addr, name string) {
	n := len(args)
	if n > slowlogMaxArgc {
		n = slowlogMaxArgc
	}
	kept := make([][]byte, n)
	for j := 0; j < n; j++ {
		switch a := args[j]; {
		case n != len(args) && j == n-1:
			kept[j] = []byte("... (" + strconv.Itoa(len(args)-n+1) + " more arguments)")
		case len(a) > slowlogMaxArg:
			kept[j] = append(append([]byte(nil), a[:slowlogMaxArg]...),
				"... ("+strconv.Itoa(len(a)-slowlogMaxArg)+" more bytes)"...)
		default:
			kept[j] = append([]byte(nil), a...)
		}
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.entries = append(l.entries, slowEntry{id: l.nextID, unix: time.Now().Unix(), us: us, args: kept, addr: addr, name: name})
	l.nextID++
	l.trim()
}

// trim drops the oldest entries past slowlog-max-len (l.mu held).
func (l *slowlog) trim() {
	if over := len(l.entries) - int(l.maxLen.Load()); over > 0 {
		l.entries = append(l.entries[:0], l.entries[over:]...)
	}
}

func registerSlowlog(reg registrar) {
	reg("slowlog", -2, "", 0, 0, 0, "server", cmdSlowlog)
	reg("slowlog|get", -2, "admin|loading|stale", 0, 0, 0, "server", cmdSlowlog)
	reg("slowlog|len", 2, "admin|loading|stale", 0, 0, 0, "server", cmdSlowlog)
	reg("slowlog|reset", 2, "admin|loading|stale", 0, 0, 0, "server", cmdSlowlog)
	reg("slowlog|help", 2, "loading|stale", 0, 0, 0, "server", cmdSlowlog)
}

var slowlogHelp = []string{
	"SLOWLOG <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
	"GET [<count>]",
	"    Return top <count> entries from the slowlog (default: 10, -1 mean all).",
	"    Entries are made of:",
	"    id, timestamp, time in microseconds, arguments array, client IP and port,",
	"    client name",
	"LEN",
	"    Return the length of the slowlog.",
	"RESET",
	"    Reset the slowlog.",
	"HELP",
	"    Prints this help.",
}

func cmdSlowlog(c *Client, args [][]byte) {
	l := &c.srv.obs.slow
	sub := lower(args[1])
	switch {
	case sub == "help" && len(args) == 2:
		c.helpReply(slowlogHelp)
	case sub == "reset" && len(args) == 2:
		l.mu.Lock()
		l.entries = nil
		l.mu.Unlock()
		c.ok()
	case sub == "len" && len(args) == 2:
		l.mu.Lock()
		n := len(l.entries)
		l.mu.Unlock()
		c.int(int64(n))
	case sub == "get" && (len(args) == 2 || len(args) == 3):
		count := int64(10)
		if len(args) == 3 {
			n, ok := parseInt(args[2])
			if !ok || n < -1 {
				c.err("ERR count should be greater than or equal to -1")
				return
			}
			count = n
		}
		l.mu.Lock()
		var out []slowEntry
		for i := len(l.entries) - 1; i >= 0 && (count < 0 || int64(len(out)) < count); i-- {
			out = append(out, l.entries[i])
		}
		l.mu.Unlock()
		c.array(len(out))
		for _, e := range out {
			c.array(6)
			c.int(e.id)
			c.int(e.unix)
			c.int(e.us)
			c.array(len(e.args))
			for _, a := range e.args {
				c.bulk(a)
			}
			c.bulkString(e.addr)
			c.bulkString(e.name)
		}
	default:
		c.subcommandSyntaxError(args)
	}
}

func slowlogParams(m map[string]configParam) {
	m["slowlog-log-slower-than"] = configParam{
		get: func(s *Server) string { return strconv.FormatInt(s.obs.slow.threshold.Load(), 10) },
		set: func(s *Server, v string) error {
			n, err := parseConfigInt(v, -1, math.MaxInt64)
			if err != nil {
				return err
			}
			s.obs.slow.threshold.Store(n)
			return nil
		},
	}
	m["slowlog-max-len"] = configParam{
		get: func(s *Server) string { return strconv.FormatInt(s.obs.slow.maxLen.Load(), 10) },
		set: func(s *Server, v string) error {
			n, err := parseConfigInt(v, 0, math.MaxInt64)
			if err != nil {
				return err
			}
			l := &s.obs.slow
			l.mu.Lock()
			l.maxLen.Store(n)
			l.trim()
			l.mu.Unlock()
			return nil
		},
	}
}

// redactArgs hides what Redis hides from MONITOR and SLOWLOG: AUTH's
// arguments, HELLO's AUTH credentials, MIGRATE's AUTH/AUTH2 passwords and
// CONFIG SET's sensitive values. args is returned as is when nothing is
// hidden.
func redactArgs(cmd *command, args [][]byte) [][]byte {
	var hide func(i int) bool
	switch cmd.name {
	case "auth":
		hide = func(i int) bool { return i >= 1 }
	case "hello":
		at := -1
		for i := 2; i < len(args); i++ {
			if eq(args[i], "auth") {
				at = i
				break
			}
		}
		if at < 0 {
			return args
		}
		hide = func(i int) bool { return i == at+1 || i == at+2 }
	case "migrate":
		set := map[int]bool{}
		for i := 6; i < len(args); i++ {
			if eq(args[i], "auth") {
				set[i+1] = true
			} else if eq(args[i], "auth2") {
				set[i+1], set[i+2] = true, true
			}
		}
		hide = func(i int) bool { return set[i] }
	case "config|set":
		hide = func(i int) bool {
			return i >= 3 && i%2 == 1 && (eq(args[i-1], "requirepass") || eq(args[i-1], "masterauth") || eq(args[i-1], "masteruser") ||
				eq(args[i-1], "tls-key-file-pass") || eq(args[i-1], "tls-client-key-file-pass"))
		}
	default:
		return args
	}
	out := make([][]byte, len(args))
	for i, a := range args {
		if hide(i) {
			a = []byte("(redacted)")
		}
		out[i] = a
	}
	return out
}
