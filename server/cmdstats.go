package server

// Command statistics: INFO commandstats, errorstats and latencystats with
// Redis 7.0's fields, and the one place where a command's end is observed
// (cmdBegin/cmdDone), which also feeds SLOWLOG (slowlog.go), the latency
// monitor (latency.go), the watchdog (watchdog.go) and MONITOR (monitor.go).
//
// Invariants:
//   - Hot path cost: per command, one monotonic clock read within a
//     pipelined batch (cmdclock.go: the previous command's end is the next
//     one's start; the batch's first command also reads the wall clock),
//     shared by every consumer, and three uncontended atomic adds plus one
//     histogram add. Counters are
//     sharded: each command has one slot per event loop (cmdSlot, a cache
//     line apart), chosen by the client's statSlot; no lock is taken.
//   - calls/usec/failed_calls count commands that ran (cmd.fn), including
//     those run by EXEC and by scripts, as Redis's call() does;
//     rejected_calls counts commands refused before running (arity, NOAUTH,
//     OOM, BUSY, ...), as Redis's rejectCommand does. total_commands_processed
//     is the sum of calls, so the two always agree.
//   - An error reply is counted where it is written (Client.err and the
//     other err helpers): total_error_replies and errorstat_<PREFIX>, where
//     the prefix is the first word when a space ends it within 32 bytes and
//     ERR otherwise; at most 128 prefixes, then only ERRORSTATS_DISABLED
//     until CONFIG RESETSTAT, as Redis does.
//   - A run's duration excludes time spent waiting without locks (blocking
//     commands), like the watchdog's.

import (
	"errors"
	"fmt"
	"math/bits"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/damselflydb/damselfly/hdr"
	"github.com/damselflydb/damselfly/netpoll"
)

// cmdSlot is one event loop's share of a command's counters.
type cmdSlot struct {
	calls    atomic.Int64
	ns       atomic.Int64
	rejected atomic.Int64
	failed   atomic.Int64
	hist     atomic.Pointer[hdr.Histogram]
	_        [24]byte // one 64-byte line per slot
}

// cmdStats is a command's counters.
type cmdStats struct {
	slots []cmdSlot
}

// statsSlots is the number of slots per command: the event loops (GOMAXPROCS)
// rounded up to a power of two, at most 16 (loops beyond share slots; the
// counters are atomic, so sharing costs only contention).
func statsSlots() int {
	n := min(runtime.GOMAXPROCS(0), 16)
	return 1 << bits.Len(uint(n-1))
}

// observe is the server's observability state: command statistics,
// errorstats, their switches, SLOWLOG, the latency monitor and MONITOR.
type observe struct {
	nslots      int
	latTracking atomic.Bool
	percentiles atomic.Pointer[[]float64] // latency-tracking-info-percentiles

	errMu      sync.Mutex
	errs       atomic.Pointer[map[string]*atomic.Int64] // copy on write
	errTotal   atomic.Int64
	errDisable bool // past 128 prefixes (under errMu)

	memPeak atomic.Int64 // used_memory_peak (info_exporter.go)

	slow    slowlog
	latency latencyMonitor
	mon     monitors
}

// initObserve gives every command its counters (New).
func (s *Server) initObserve() {
	o := &s.obs
	o.nslots = statsSlots()
	o.latTracking.Store(true)
	p := []float64{50, 99, 99.9}
	o.percentiles.Store(&p)
	m := map[string]*atomic.Int64{}
	o.errs.Store(&m)
	o.slow.init()
	for _, cmd := range s.cmds {
		cmd.stats = &cmdStats{slots: make([]cmdSlot, o.nslots)}
		for _, sub := range cmd.subs {
			sub.stats = &cmdStats{slots: make([]cmdSlot, o.nslots)}
		}
	}
}

// statSlotOf is the slot of the clients of event loop l.
func (s *Server) statSlotOf(l *netpoll.Loop) uint8 {
	for i, x := range s.loops {
		if x == l {
			return uint8(i & (s.obs.nslots - 1))
		}
	}
	return 0
}

// dispatching notes the command being dispatched, so that an error written
// before it runs counts as rejected (execute).
func (c *Client) dispatching(cmd *command) { c.rejectable = cmd }

// noteError counts an error reply (s without the leading '-').
func (c *Client) noteError(s string) {
	c.errCount++
	if cmd := c.rejectable; cmd != nil {
		c.rejectable = nil
		if cmd.stats != nil {
			cmd.stats.slots[c.statSlot].rejected.Add(1)
		}
	}
	c.srv.obs.countError(s)
}

// rememberCallError keeps the error a script's redis.call got, so that the
// script's own error reply, when it passes that error on, is not counted
// in errorstats a second time (the command's error was), as in Redis.
func (c *Client) rememberCallError(reply []byte) {
	if len(reply) > 0 && reply[0] == '-' {
		line, _, _ := strings.Cut(string(reply[1:]), "\r\n")
		c.callErr = line
	}
}

// noteScriptError counts a script's error reply: the script's command
// failed; errorstats counts it unless it passes on what redis.call got.
func (c *Client) noteScriptError(s string) {
	c.errCount++
	if c.callErr == "" || !strings.HasPrefix(s, c.callErr) {
		c.srv.obs.countError(s)
	}
	c.callErr = ""
}

// errorPrefix is Redis's errorstats key of an error text.
func errorPrefix(s string) string {
	s = strings.TrimPrefix(s, "-")
	i := strings.IndexByte(s, ' ')
	if i < 0 || i >= 32 {
		return "ERR"
	}
	return s[:i]
}

func (o *observe) countError(s string) {
	o.errTotal.Add(1)
	p := errorPrefix(s)
	if n := (*o.errs.Load())[p]; n != nil {
		n.Add(1)
		return
	}
	o.errMu.Lock()
	defer o.errMu.Unlock()
	old := *o.errs.Load()
	if n := old[p]; n != nil {
		n.Add(1)
		return
	}
	if o.errDisable {
		return
	}
	m := make(map[string]*atomic.Int64, len(old)+1)
	if len(old) >= 128 {
		o.errDisable = true
		m["ERRORSTATS_DISABLED"] = new(atomic.Int64)
		m["ERRORSTATS_DISABLED"].Store(1)
	} else {
		for k, v := range old {
			m[k] = v
		}
		m[p] = new(atomic.Int64)
		m[p].Store(1)
	}
	o.errs.Store(&m)
}

// callCtx is how a command was called: by its client, queued in MULTI and
// run by EXEC, or by a script.
type callCtx uint8

const (
	callDirect callCtx = iota
	callQueued
	callScript
)

// cmdBegin starts observing a run of cmd with a fresh clock read; the
// result (a monotonic start, cmdclock.go) goes to cmdDone.
func (c *Client) cmdBegin(cmd *command, args [][]byte) int64 {
	c.clk.last = 0 // a nested run (EXEC, script) reads the clock afresh
	mono, wallMs := c.cmdStart()
	c.cmdBeginAt(cmd, args, wallMs)
	return mono
}

// cmdBeginAt starts observing a run of cmd that started at wall time
// wallMs (cmdclock.go).
func (c *Client) cmdBeginAt(cmd *command, args [][]byte, wallMs int64) {
	c.rejectable = nil
	if c.callErr != "" && !c.sess.inScript {
		c.callErr = "" // a script's, now over
	}
	c.waitedNs = 0
	if c.srv.obs.mon.n.Load() > 0 && cmd.skipMonitor {
		c.feedMonitors(cmd, args, callDirect) // scripts show before what they call
	}
	c.cmdMs = wallMs // cmdclock.go
}

// cmdDone records a finished run of cmd begun at start (monotonic ns,
// cmdclock.go), with errs the client's error count before it ran; it
// returns the run's end.
func (c *Client) cmdDone(cmd *command, args [][]byte, start int64, errs uint32, ctx callCtx) int64 {
	end := c.monoNow()
	if end < start {
		end = start // two CPUs' counters slightly apart (internal/tsc)
	}
	elapsed := time.Duration(end - start)
	c.cmdMs = 0
	held := elapsed - time.Duration(c.waitedNs)
	s := c.srv
	if cmdStatsCompiled && cmd.stats != nil {
		sl := &cmd.stats.slots[c.statSlot]
		sl.calls.Add(1)
		sl.ns.Add(int64(held))
		if c.errCount != errs {
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
	if ctx != callScript {
		if th := s.obs.slow.threshold.Load(); th >= 0 && us >= th && !cmd.skipSlowlog {
			c.slowlogPush(cmd, args, us)
		}
		if th := s.obs.latency.threshold.Load(); th > 0 && us/1000 >= th {
			ev := "command"
			if cmd.fast {
				ev = "fast-command"
			}
			s.obs.latency.add(ev, us/1000)
		}
		c.watchEnd(cmd, args, held)
	}
	if s.obs.mon.n.Load() > 0 && !cmd.skipMonitor && !cmd.admin {
		c.feedMonitors(cmd, args, ctx)
	}
	if ctx != callDirect {
		// An error inside EXEC or a script is its command's, not EXEC's
		// or the script's (which may catch it).
		c.errCount = errs
	}
	return end
}

// cmdSnapshot is a command's counters summed over its slots.
type cmdSnapshot struct {
	name                        string
	calls, ns, rejected, failed int64
	hist                        *hdr.Snapshot // nil: no histogram
}

func (st *cmdStats) snapshot(name string, withHist bool) cmdSnapshot {
	r := cmdSnapshot{name: name}
	for i := range st.slots {
		sl := &st.slots[i]
		r.calls += sl.calls.Load()
		r.ns += sl.ns.Load()
		r.rejected += sl.rejected.Load()
		r.failed += sl.failed.Load()
		if h := sl.hist.Load(); withHist && h != nil {
			if r.hist == nil {
				r.hist = hdr.NewSnapshot()
			}
			r.hist.Add(h)
		}
	}
	return r
}

// eachCommand calls fn for every command and subcommand, by name.
func (s *Server) eachCommand(fn func(cmd *command)) {
	var all []*command
	for _, cmd := range s.cmds {
		if cmd.stats != nil {
			all = append(all, cmd)
		}
		for _, sub := range cmd.subs {
			if sub.stats != nil {
				all = append(all, sub)
			}
		}
	}
	all = append(all, s.memcacheCommands()...) // memcache_observe.go
	sort.Slice(all, func(i, j int) bool { return all[i].name < all[j].name })
	for _, cmd := range all {
		fn(cmd)
	}
}

// commandSnapshots returns the counters of every command that was called
// or rejected since the last reset.
func (s *Server) commandSnapshots(withHist bool) []cmdSnapshot {
	var out []cmdSnapshot
	s.eachCommand(func(cmd *command) {
		if sn := cmd.stats.snapshot(cmd.name, withHist); sn.calls > 0 || sn.rejected > 0 || sn.failed > 0 {
			out = append(out, sn)
		}
	})
	return out
}

// totalCommands is total_commands_processed: every run of every command.
func (s *Server) totalCommands() int64 {
	var n int64
	for _, cmd := range s.cmds {
		for _, st := range append([]*command{cmd}, mapValues(cmd.subs)...) {
			if st.stats != nil {
				for i := range st.stats.slots {
					n += st.stats.slots[i].calls.Load()
				}
			}
		}
	}
	for _, st := range s.memcacheCommands() { // memcache_observe.go
		for i := range st.stats.slots {
			n += st.stats.slots[i].calls.Load()
		}
	}
	return n
}

func mapValues(m map[string]*command) []*command {
	out := make([]*command, 0, len(m))
	for _, v := range m {
		out = append(out, v)
	}
	return out
}

// resetObserveStats is CONFIG RESETSTAT's share: command, error and
// latency statistics.
func (s *Server) resetObserveStats() {
	s.eachCommand(func(cmd *command) {
		for i := range cmd.stats.slots {
			sl := &cmd.stats.slots[i]
			sl.calls.Store(0)
			sl.ns.Store(0)
			sl.rejected.Store(0)
			sl.failed.Store(0)
			if h := sl.hist.Load(); h != nil {
				h.Reset()
			}
		}
	})
	o := &s.obs
	o.errMu.Lock()
	m := map[string]*atomic.Int64{}
	o.errs.Store(&m)
	o.errDisable = false
	o.errMu.Unlock()
	o.errTotal.Store(0)
}

// infoCommandStats writes INFO commandstats' lines.
func (s *Server) infoCommandStats(b *strings.Builder) {
	for _, sn := range s.commandSnapshots(false) {
		usec := sn.ns / 1000
		per := 0.0
		if sn.calls > 0 {
			per = float64(usec) / float64(sn.calls)
		}
		fmt.Fprintf(b, "cmdstat_%s:calls=%d,usec=%d,usec_per_call=%.2f,rejected_calls=%d,failed_calls=%d\r\n",
			sn.name, sn.calls, usec, per, sn.rejected, sn.failed)
	}
}

// infoErrorStats writes INFO errorstats' lines, in byte order.
func (s *Server) infoErrorStats(b *strings.Builder) {
	m := *s.obs.errs.Load()
	names := make([]string, 0, len(m))
	for k := range m {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, k := range names {
		fmt.Fprintf(b, "errorstat_%s:count=%d\r\n", k, m[k].Load())
	}
}

// infoLatencyStats writes INFO latencystats' lines.
func (s *Server) infoLatencyStats(b *strings.Builder) {
	if !s.obs.latTracking.Load() {
		return
	}
	ps := *s.obs.percentiles.Load()
	for _, sn := range s.commandSnapshots(true) {
		if sn.hist == nil || sn.hist.Total == 0 {
			continue
		}
		b.WriteString("latency_percentiles_usec_")
		b.WriteString(sn.name)
		b.WriteByte(':')
		for i, p := range ps {
			if i > 0 {
				b.WriteByte(',')
			}
			fmt.Fprintf(b, "p%s=%.3f", formatPercentile(p), float64(sn.hist.ValueAtPercentile(p))/1000)
		}
		b.WriteString("\r\n")
	}
}

// formatPercentile writes a percentile as Redis does ("%f" trimmed:
// 50, 99, 99.9).
func formatPercentile(p float64) string {
	return strconv.FormatFloat(p, 'f', -1, 64)
}

// observeParams are the CONFIG parameters of this file, slowlog.go and
// latency.go.
func observeParams(m map[string]configParam) {
	m["latency-tracking"] = boolParam(func(s *Server) *atomic.Bool { return &s.obs.latTracking }, nil)
	m["latency-tracking-info-percentiles"] = configParam{
		get: func(s *Server) string {
			ps := *s.obs.percentiles.Load()
			out := make([]string, len(ps))
			for i, p := range ps {
				out[i] = formatPercentile(p)
			}
			return strings.Join(out, " ")
		},
		set: func(s *Server, v string) error {
			var ps []float64
			for _, f := range strings.Fields(v) {
				p, err := strconv.ParseFloat(f, 64)
				if err != nil || p < 0 || p > 100 {
					return errors.New("Invalid latency-tracking-info-percentiles parameters")
				}
				ps = append(ps, p)
			}
			s.obs.percentiles.Store(&ps)
			return nil
		},
	}
	slowlogParams(m)
	latencyParams(m)
}
