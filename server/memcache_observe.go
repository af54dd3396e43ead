package server

// Memcached commands in the Redis-side observability surfaces.
//
// Every command the memcached front end runs (text and meta protocols) is
// reported here (memcache.Config.Observe) and shown as a command named
// "mc_" + its memcached name:
//
//   - INFO commandstats: cmdstat_mc_get, cmdstat_mc_set, cmdstat_mc_mg, ...
//     (calls, usec, failed_calls for ERROR/CLIENT_ERROR/SERVER_ERROR replies,
//     rejected_calls for keys refused in cluster mode); latencystats:
//     latency_percentiles_usec_mc_get, ...; total_commands_processed and
//     instantaneous_ops_per_sec include them; CONFIG RESETSTAT resets them.
//   - SLOWLOG: an entry whose arguments are "mc_<name>", the command line's
//     other tokens and, for a storage command, its data block; the client
//     is the memcached client's address, with no name.
//   - LATENCY: the "command" / "fast-command" events, as Redis's.
//   - MONITOR: a line in Redis's format, database 0, the memcached client's
//     address, then the same arguments as SLOWLOG's:
//     +1700000000.123456 [0 127.0.0.1:50412] "mc_set" "k" "0" "0" "5" "hello"
//
// They are not Redis commands: COMMAND, ACL and the dispatcher never see
// them (they live outside the command table, in mcObserver). Memcached
// errors are not counted in errorstats (they have no Redis error prefix).

import (
	"bytes"
	"time"

	"github.com/damselflydb/damselfly/hdr"
	"github.com/damselflydb/damselfly/memcache"
)

// mcObserver is the server's memcache.Observer.
type mcObserver struct {
	s    *Server
	cmds [memcache.NumCmds]*command
}

// initMemcacheObserve creates the mc_ commands' counters (New, after
// initObserve).
func (s *Server) initMemcacheObserve() {
	o := &mcObserver{s: s}
	for i := range o.cmds {
		c := memcache.Cmd(i)
		o.cmds[i] = &command{name: "mc_" + c.String(), fast: c.Fast(),
			stats: &cmdStats{slots: make([]cmdSlot, s.obs.nslots)}}
	}
	s.mcObs = o
}

// memcacheCommands are the mc_ commands, for the statistics' walks.
func (s *Server) memcacheCommands() []*command {
	if s.mcObs == nil {
		return nil
	}
	return s.mcObs.cmds[:]
}

// Observe records one memcached command (memcache.Observer).
func (o *mcObserver) Observe(ev *memcache.Observed) {
	s := o.s
	cmd := o.cmds[ev.Cmd]
	sl := &cmd.stats.slots[int(ev.Conn)&(s.obs.nslots-1)]
	if ev.Outcome == memcache.Rejected {
		sl.rejected.Add(1)
		return
	}
	held := ev.Duration
	if cmdStatsCompiled {
		sl.calls.Add(1)
		sl.ns.Add(int64(held))
		if ev.Outcome == memcache.Failed {
			sl.failed.Add(1)
		}
		if s.obs.latTracking.Load() {
			h := sl.hist.Load()
			if h == nil {
				h = hdr.New()
				if !sl.hist.CompareAndSwap(nil, h) {
					h = sl.hist.Load()
				}
			}
			h.Record(int64(held))
		}
	}
	us := int64(held / time.Microsecond)
	var args [][]byte
	if th := s.obs.slow.threshold.Load(); th >= 0 && us >= th {
		args = mcArgs(cmd, ev)
		s.obs.slow.add(args, us, ev.Remote, "")
	}
	if th := s.obs.latency.threshold.Load(); th > 0 && us/1000 >= th {
		e := "command"
		if cmd.fast {
			e = "fast-command"
		}
		s.obs.latency.add(e, us/1000)
	}
	if s.obs.mon.n.Load() > 0 {
		if args == nil {
			args = mcArgs(cmd, ev)
		}
		s.obs.mon.broadcast(monitorLine(0, ev.Remote, args))
	}
}

// mcArgs is how SLOWLOG and MONITOR show a memcached command: its mc_
// name, the line's other tokens, the data block of a storage command.
// They are views of ev's buffers (valid during Observe).
func mcArgs(cmd *command, ev *memcache.Observed) [][]byte {
	args := [][]byte{[]byte(cmd.name)}
	toks := bytes.Fields(ev.Line)
	if len(toks) > 1 {
		args = append(args, toks[1:]...)
	}
	if ev.Data != nil {
		args = append(args, ev.Data)
	}
	return args
}
