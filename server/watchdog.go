package server

import (
	"errors"
	"strconv"
	"strings"
	"sync/atomic"
	"time"
)

// The watchdog reports commands that hold shards for long: any command
// whose run time, minus the time it spent waiting without locks (a blocking
// command's wait in blockOn), passes watchdog-threshold-ms (default 250;
// 0 turns it off) is logged at WARN with its name and the shape of its
// arguments (their count and sizes, never their bytes: they may be secrets
// or user data), and counted in INFO stats (watchdog_slow_commands,
// watchdog_last_command, watchdog_max_ms). Every shard a command touches is
// locked while it runs, so this is the time other clients of those shards
// were kept waiting; Redis's latency monitor plays the same role.
//
// Commands that wait by design without holding shards (WAIT, SAVE,
// SHUTDOWN, replication hand-offs, DEBUG SLEEP) are not reported.

const defaultWatchdogMs = 250

type watchdog struct {
	thresholdMs atomic.Int64
	slow        atomic.Int64
	maxMs       atomic.Int64
	last        atomic.Pointer[string]
}

// watchExempt reports commands whose run time is waiting, not holding
// shards: they block, detach, take their own locks, or are refused inside
// MULTI because they are long by nature (SAVE, SHUTDOWN, SYNC).
func watchExempt(cmd *command) bool {
	return cmd.blocking || cmd.mayBlock || cmd.ownLocks || cmd.noMulti
}

// watchEnd reports a command that held shards too long; held is its run
// time less its waits, measured once for every observer (cmdstats.go's
// cmdDone, which also feeds the latency monitor from the same figure).
func (c *Client) watchEnd(cmd *command, args [][]byte, held time.Duration) {
	th := c.srv.wd.thresholdMs.Load()
	if th <= 0 {
		return
	}
	if held < time.Duration(th)*time.Millisecond || watchExempt(cmd) {
		return
	}
	wd := &c.srv.wd
	ms := held.Milliseconds()
	wd.slow.Add(1)
	for cur := wd.maxMs.Load(); ms > cur && !wd.maxMs.CompareAndSwap(cur, ms); cur = wd.maxMs.Load() {
	}
	name := cmd.name
	wd.last.Store(&name)
	c.srv.obs.latency.add("watchdog", ms) // LATENCY shows what the watchdog saw

	c.srv.log.Warn("watchdog: command held shards too long", "command", name, "args", argShape(args[1:]),
		"ms", ms, "client", c.id, "addr", c.addr)
}

// argShape describes arguments without their contents: "3 args: 40B 1B 7B".
func argShape(args [][]byte) string {
	var b strings.Builder
	b.WriteString(strconv.Itoa(len(args)))
	b.WriteString(" args:")
	for i, a := range args {
		if i == 8 {
			b.WriteString(" ...")
			break
		}
		b.WriteByte(' ')
		b.WriteString(strconv.Itoa(len(a)))
		b.WriteByte('B')
	}
	return b.String()
}

func (s *Server) watchdogInfo(field func(name string, v any)) {
	field("watchdog_slow_commands", s.wd.slow.Load())
	field("watchdog_max_ms", s.wd.maxMs.Load())
	last := ""
	if p := s.wd.last.Load(); p != nil {
		last = *p
	}
	field("watchdog_last_command", last)
}

func watchdogParam(m map[string]configParam) {
	m["watchdog-threshold-ms"] = configParam{
		get: func(s *Server) string { return strconv.FormatInt(s.wd.thresholdMs.Load(), 10) },
		set: func(s *Server, v string) error {
			n, ok := parseInt([]byte(v))
			if !ok || n < 0 {
				return errors.New("argument must be a number of milliseconds >= 0")
			}
			s.wd.thresholdMs.Store(n)
			return nil
		},
	}
}
