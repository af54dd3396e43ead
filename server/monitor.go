package server

// MONITOR: every command that runs is shown to the monitoring clients as
// one line in Redis's format,
//
//	+1339518083.107412 [0 127.0.0.1:60866] "keys" "*"
//
// (unix time with microseconds, the database after the command, the
// client's address, "lua" for a script's commands or "unix:<path>" for a
// Unix socket client, the arguments quoted as Redis's sdscatrepr quotes
// them). As in Redis 7.0 a command is shown after it ran (SELECT shows the
// new database) and only if it ran: refused commands are not shown; admin
// commands (CONFIG, DEBUG, ...) never; EVAL, EVALSHA and FCALL (skip_monitor)
// are shown before the commands they call; AUTH, HELLO's credentials and
// other secrets appear as "(redacted)".
//
// Invariants: feeding costs the data path one atomic load while nobody
// monitors. A monitor's output goes through its connection's bounded queue
// (the Pub/Sub writer, pubsub.go), never written by the feeding goroutine:
// past client-output-buffer-limit normal (or 64 MiB when that class is
// unlimited) the monitor is disconnected, so a slow monitor never blocks
// or grows without bound.

import (
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// monitorHardLimit bounds a monitor's queue when the normal class has no
// limit (Redis's default), so a monitor that does not read cannot hold
// unbounded memory.
const monitorHardLimit = 64 << 20

type monitors struct {
	n    atomic.Int32
	mu   sync.RWMutex
	list map[*Client]struct{}
}

func registerMonitor(reg registrar) {
	reg("monitor", 1, "admin|noscript|loading|stale|x-detach|x-no-data", 0, 0, 0, "server", cmdMonitor)
}

func cmdMonitor(c *Client, args [][]byte) {
	m := &c.srv.obs.mon
	m.mu.Lock()
	if _, ok := m.list[c]; ok {
		m.mu.Unlock()
		return // already monitoring: no reply, as Redis
	}
	if m.list == nil {
		m.list = map[*Client]struct{}{}
	}
	m.list[c] = struct{}{}
	m.n.Store(int32(len(m.list)))
	m.mu.Unlock()
	c.monitoring = true
	c.ok()
	c.startAsync() // output from other goroutines goes through a queue
	c.sess.outq.monitor.Store(true)
}

// monitorRefuses answers a monitoring client's command that touches the
// keyspace as Redis does (a monitor is a replica to it), and reports so.
func (c *Client) monitorRefuses(cmd *command) bool {
	for _, f := range cmd.flags {
		if f == "write" || f == "readonly" || f == "may_replicate" {
			c.err("ERR Replica can't interact with the keyspace")
			return true
		}
	}
	return false
}

// stopMonitor removes c from the monitors (RESET, disconnect).
func (c *Client) stopMonitor() {
	if !c.monitoring {
		return
	}
	c.monitoring = false
	m := &c.srv.obs.mon
	m.mu.Lock()
	delete(m.list, c)
	m.n.Store(int32(len(m.list)))
	m.mu.Unlock()
}

// isMonitor reports whether c is monitoring (CLIENT LIST flag O).
func (c *Client) isMonitor() bool {
	m := &c.srv.obs.mon
	if m.n.Load() == 0 {
		return false
	}
	m.mu.RLock()
	_, ok := m.list[c]
	m.mu.RUnlock()
	return ok
}

// monitorLimit is the output limit of a monitor's queue.
func (s *Server) monitorLimit() outLimit {
	lim := s.outLimits.Load().normal
	if lim.hard <= 0 && lim.soft <= 0 {
		lim.hard = monitorHardLimit
	}
	return lim
}

// feedMonitors shows the command args of c to every monitor.
func (c *Client) feedMonitors(cmd *command, args [][]byte, ctx callCtx) {
	args = redactArgs(cmd, args)
	var who string
	switch {
	case ctx == callScript:
		who = "lua"
	case c.isUnix:
		who = "unix:" + c.srv.unixPath
	default:
		who = c.addr
	}
	line := monitorLine(c.db, who, args)
	m := &c.srv.obs.mon
	m.mu.RLock()
	defer m.mu.RUnlock()
	for t := range m.list {
		if t == c && ctx == callDirect {
			// Its own command: after its reply, as Redis orders them.
			c.out = append(c.out, line...)
		} else if q := t.view.outq.Load(); q != nil { // t's session is its own goroutine's
			q.push(t, line)
		}
	}
}

// broadcast shows a line to every monitor (commands of no RESP client:
// the memcached front end's).
func (m *monitors) broadcast(line []byte) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	for t := range m.list {
		if q := t.view.outq.Load(); q != nil {
			q.push(t, line)
		}
	}
}

// monitorLine is one MONITOR line: now, the database, who ran the command
// and its arguments quoted.
func monitorLine(db int, who string, args [][]byte) []byte {
	now := time.Now()
	line := make([]byte, 0, 64+16*len(args))
	line = append(line, '+')
	line = strconv.AppendInt(line, now.Unix(), 10)
	line = append(line, '.')
	us := strconv.AppendInt(nil, int64(now.Nanosecond()/1000), 10)
	for i := len(us); i < 6; i++ {
		line = append(line, '0')
	}
	line = append(line, us...)
	line = append(line, " ["...)
	line = strconv.AppendInt(line, int64(db), 10)
	line = append(line, ' ')
	line = append(line, who...)
	line = append(line, "] "...)
	for i, a := range args {
		if i > 0 {
			line = append(line, ' ')
		}
		line = appendRepr(line, a)
	}
	return append(line, '\r', '\n')
}

// appendRepr quotes b as Redis's sdscatrepr: "..." with \\ \" \n \r \t \a
// \b escaped, printable ASCII as is and other bytes as \xHH.
func appendRepr(dst, b []byte) []byte {
	const hex = "0123456789abcdef"
	dst = append(dst, '"')
	for _, ch := range b {
		switch ch {
		case '\\', '"':
			dst = append(dst, '\\', ch)
		case '\n':
			dst = append(dst, '\\', 'n')
		case '\r':
			dst = append(dst, '\\', 'r')
		case '\t':
			dst = append(dst, '\\', 't')
		case '\a':
			dst = append(dst, '\\', 'a')
		case '\b':
			dst = append(dst, '\\', 'b')
		default:
			if ch >= ' ' && ch <= '~' {
				dst = append(dst, ch)
			} else {
				dst = append(dst, '\\', 'x', hex[ch>>4], hex[ch&15])
			}
		}
	}
	return append(dst, '"')
}
