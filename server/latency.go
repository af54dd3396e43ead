package server

// The latency monitor (LATENCY LATEST/HISTORY/RESET/GRAPH/DOCTOR) and
// LATENCY HISTOGRAM. With latency-monitor-threshold > 0 (milliseconds; 0,
// the default, turns it off) every event that took at least that long is
// sampled: per event, the worst latency of each second over the last 160
// samples and the all-time maximum, as Redis keeps them. Events:
//   command, fast-command  a command's run (cmdDone), as in Redis;
//   expire-cycle           one active-expiry pass of the cron;
//   aof-fsync-always       an AOF fsync replies wait for (appendfsync
//                          always); aof-fsync one in the background;
//   watchdog               a command that held shards past
//                          watchdog-threshold-ms (watchdog.go), so the
//                          watchdog's findings show up here too.
// Samples are added under a mutex, only for events over the threshold.

import (
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/damselflydb/damselfly/aof"
)

const latencyTSLen = 160

type latencySample struct {
	time    int64 // unix seconds; 0: unused
	latency int64 // ms
}

type latencySeries struct {
	samples [latencyTSLen]latencySample
	idx     int
	max     int64
}

type latencyMonitor struct {
	threshold atomic.Int64 // ms; 0 off
	mu        sync.Mutex
	events    map[string]*latencySeries
}

// addIfNeeded samples event when the monitor is on and ms passes it.
func (m *latencyMonitor) addIfNeeded(event string, d time.Duration) {
	if th := m.threshold.Load(); th > 0 && d.Milliseconds() >= th {
		m.add(event, d.Milliseconds())
	}
}

// add records a sample of event (ms), keeping the worst of each second.
func (m *latencyMonitor) add(event string, ms int64) {
	now := time.Now().Unix()
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.events == nil {
		m.events = map[string]*latencySeries{}
	}
	ts := m.events[event]
	if ts == nil {
		ts = &latencySeries{}
		m.events[event] = ts
	}
	ts.max = max(ts.max, ms)
	prev := &ts.samples[(ts.idx+latencyTSLen-1)%latencyTSLen]
	if prev.time == now {
		prev.latency = max(prev.latency, ms)
		return
	}
	ts.samples[ts.idx] = latencySample{time: now, latency: ms}
	ts.idx = (ts.idx + 1) % latencyTSLen
}

// ordered is the series' samples, oldest first (m.mu held).
func (ts *latencySeries) ordered() []latencySample {
	var out []latencySample
	for j := 0; j < latencyTSLen; j++ {
		if s := ts.samples[(ts.idx+j)%latencyTSLen]; s.time != 0 {
			out = append(out, s)
		}
	}
	return out
}

func (m *latencyMonitor) names() []string {
	out := make([]string, 0, len(m.events))
	for k := range m.events {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func registerLatency(reg registrar) {
	reg("latency", -2, "", 0, 0, 0, "server", cmdLatency)
	reg("latency|latest", 2, "admin|noscript|loading|stale", 0, 0, 0, "server", cmdLatency)
	reg("latency|doctor", 2, "admin|noscript|loading|stale", 0, 0, 0, "server", cmdLatency)
	reg("latency|help", 2, "loading|stale", 0, 0, 0, "server", cmdLatency)
	reg("latency|reset", -2, "admin|noscript|loading|stale", 0, 0, 0, "server", cmdLatency)
	reg("latency|history", 3, "admin|noscript|loading|stale", 0, 0, 0, "server", cmdLatency)
	reg("latency|graph", 3, "admin|noscript|loading|stale", 0, 0, 0, "server", cmdLatency)
	reg("latency|histogram", -2, "admin|noscript|loading|stale", 0, 0, 0, "server", cmdLatency)
}

var latencyHelp = []string{
	"LATENCY <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
	"DOCTOR",
	"    Return a human readable latency analysis report.",
	"GRAPH <event>",
	"    Return an ASCII latency graph for the <event> class.",
	"HISTORY <event>",
	"    Return time-latency samples for the <event> class.",
	"LATEST",
	"    Return the latest latency samples for all events.",
	"RESET [<event> ...]",
	"    Reset latency data of one or more <event> classes.",
	"    (default: reset all data for all event classes)",
	"HISTOGRAM [COMMAND ...]",
	"    Return a cumulative distribution of latencies in the format of a histogram for the specified command names.",
	"    If no commands are specified then all histograms are replied.",
	"HELP",
	"    Prints this help.",
}

func cmdLatency(c *Client, args [][]byte) {
	m := &c.srv.obs.latency
	sub := lower(args[1])
	switch {
	case sub == "help" && len(args) == 2:
		c.helpReply(latencyHelp)
	case sub == "latest" && len(args) == 2:
		m.mu.Lock()
		names := m.names()
		type row struct{ t, last, max int64 }
		rows := make([]row, len(names))
		for i, n := range names {
			ts := m.events[n]
			last := ts.samples[(ts.idx+latencyTSLen-1)%latencyTSLen]
			rows[i] = row{last.time, last.latency, ts.max}
		}
		m.mu.Unlock()
		c.array(len(names))
		for i, n := range names {
			c.array(4)
			c.bulkString(n)
			c.int(rows[i].t)
			c.int(rows[i].last)
			c.int(rows[i].max)
		}
	case sub == "history" && len(args) == 3:
		m.mu.Lock()
		var samples []latencySample
		if ts := m.events[string(args[2])]; ts != nil {
			samples = ts.ordered()
		}
		m.mu.Unlock()
		c.array(len(samples))
		for _, s := range samples {
			c.array(2)
			c.int(s.time)
			c.int(s.latency)
		}
	case sub == "graph" && len(args) == 3:
		m.mu.Lock()
		ts := m.events[string(args[2])]
		var graph string
		if ts != nil {
			graph = latencyGraph(string(args[2]), ts)
		}
		m.mu.Unlock()
		if ts == nil {
			c.err("ERR No samples available for event '" + sanitize(args[2], 128) + "'")
			return
		}
		c.verbatim(graph)
	case sub == "reset":
		m.mu.Lock()
		n := 0
		if len(args) == 2 {
			n = len(m.events)
			m.events = nil
		} else {
			for _, e := range args[2:] {
				if _, ok := m.events[string(e)]; ok {
					delete(m.events, string(e))
					n++
				}
			}
		}
		m.mu.Unlock()
		c.int(int64(n))
	case sub == "doctor" && len(args) == 2:
		c.verbatim(c.srv.latencyDoctor())
	case sub == "histogram":
		c.latencyHistogram(args[2:])
	default:
		c.subcommandSyntaxError(args)
	}
}

// latencyHistogram is LATENCY HISTOGRAM: per command, its calls and the
// cumulative distribution of its run times in power-of-two microsecond
// buckets (1024 ns, doubling), as Redis reports them.
func (c *Client) latencyHistogram(names [][]byte) {
	var cmds []*command
	if len(names) == 0 {
		c.srv.eachCommand(func(cmd *command) { cmds = append(cmds, cmd) })
	} else {
		seen := map[*command]bool{}
		for _, n := range names {
			cmd := c.srv.cmds[lower(n)]
			if p, sub, ok := strings.Cut(lower(n), "|"); ok {
				if cmd = c.srv.cmds[p]; cmd != nil {
					cmd = cmd.subs[sub]
				}
			}
			if cmd == nil {
				continue
			}
			group := []*command{cmd}
			if len(cmd.subs) > 0 {
				group = mapValues(cmd.subs)
				sort.Slice(group, func(i, j int) bool { return group[i].name < group[j].name })
			}
			for _, g := range group {
				if !seen[g] && g.stats != nil {
					seen[g] = true
					cmds = append(cmds, g)
				}
			}
		}
	}
	var snaps []cmdSnapshot
	for _, cmd := range cmds {
		if sn := cmd.stats.snapshot(cmd.name, true); sn.hist != nil && sn.hist.Total > 0 {
			snaps = append(snaps, sn)
		}
	}
	c.mapHeader(len(snaps))
	for _, sn := range snaps {
		c.bulkString(sn.name)
		c.mapHeader(2)
		c.bulkString("calls")
		c.int(sn.hist.Total)
		c.bulkString("histogram_usec")
		buckets := sn.hist.Log(1024)
		c.mapHeader(len(buckets))
		for _, b := range buckets {
			c.int(b.Upper / 1000)
			c.int(b.Count)
		}
	}
}

// latencyGraph draws an event's samples, oldest left, 4 rows high, with
// each column's age under it (m.mu held).
func latencyGraph(event string, ts *latencySeries) string {
	samples := ts.ordered()
	lo, hi := int64(0), int64(0)
	for i, s := range samples {
		if i == 0 || s.latency < lo {
			lo = s.latency
		}
		hi = max(hi, s.latency)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s - high %d ms, low %d ms (all time high %d ms)\n", event, hi, lo, ts.max)
	b.WriteString(strings.Repeat("-", 80) + "\n")
	const rows = 4
	if len(samples) > 80 {
		samples = samples[len(samples)-80:]
	}
	height := make([]int, len(samples)) // 1..rows*2 half-rows
	for i, s := range samples {
		h := rows * 2
		if hi > lo {
			h = 1 + int(float64(s.latency-lo)/float64(hi-lo)*float64(rows*2-1))
		}
		height[i] = h
	}
	for r := rows - 1; r >= 0; r-- {
		for _, h := range height {
			switch {
			case h >= 2*r+2:
				if h == 2*r+2 {
					b.WriteByte('_')
				} else {
					b.WriteByte('|')
				}
			case h == 2*r+1:
				b.WriteByte('o')
			default:
				b.WriteByte(' ')
			}
		}
		b.WriteByte('\n')
	}
	labels := make([]string, len(samples))
	width := 0
	now := time.Now().Unix()
	for i, s := range samples {
		e := now - s.time
		switch {
		case e < 60:
			labels[i] = strconv.FormatInt(e, 10) + "s"
		case e < 3600:
			labels[i] = strconv.FormatInt(e/60, 10) + "m"
		case e < 86400:
			labels[i] = strconv.FormatInt(e/3600, 10) + "h"
		default:
			labels[i] = strconv.FormatInt(e/86400, 10) + "d"
		}
		width = max(width, len(labels[i]))
	}
	for r := 0; r < width; r++ {
		b.WriteByte('\n')
		for _, l := range labels {
			if r < len(l) {
				b.WriteByte(l[r])
			} else {
				b.WriteByte(' ')
			}
		}
	}
	b.WriteByte('\n')
	return b.String()
}

// latencyDoctor is LATENCY DOCTOR's report: per event, its spikes and
// their statistics, then what may help.
func (s *Server) latencyDoctor() string {
	m := &s.obs.latency
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.threshold.Load() == 0 && len(m.events) == 0 {
		return "I'm sorry, Dave, I can't do that. Latency monitoring is disabled in this Redis instance. " +
			"You may use \"CONFIG SET latency-monitor-threshold <milliseconds>.\" in order to enable it. " +
			"If we weren't in a deep space mission I'd suggest to take a look at https://redis.io/topics/latency-monitor.\n"
	}
	if len(m.events) == 0 {
		return "Dave, no latency spike was observed during the lifetime of this Redis instance, not in the slightest bit. " +
			"I honestly think you ought to sit down calmly, take a stress pill, and think things over.\n"
	}
	var b strings.Builder
	b.WriteString("Dave, I have observed latency spikes in this Damselfly instance. You don't mind talking about it, do you Dave?\n\n")
	advice := map[string]bool{}
	for i, name := range m.names() {
		ts := m.events[name]
		samples := ts.ordered()
		var sum int64
		for _, x := range samples {
			sum += x.latency
		}
		avg := sum / int64(max(len(samples), 1))
		var dev int64
		for _, x := range samples {
			d := x.latency - avg
			dev += max(d, -d)
		}
		dev /= int64(max(len(samples), 1))
		period := 0.0
		if len(samples) > 1 {
			period = float64(samples[len(samples)-1].time-samples[0].time) / float64(len(samples)-1)
		}
		fmt.Fprintf(&b, "%d. %s: %d latency spikes (average %dms, mean deviation %dms, period %.2f sec). Worst all time event %dms.\n",
			i+1, name, len(samples), avg, dev, period, ts.max)
		switch name {
		case "command", "fast-command", "watchdog":
			advice["slow"] = true
		case "expire-cycle":
			advice["expire"] = true
		}
	}
	b.WriteString("\nI have a few advices for you:\n\n")
	if advice["slow"] {
		fmt.Fprintf(&b, "- Check your SLOWLOG (slowlog-log-slower-than is %d microseconds) and INFO commandstats / LATENCY HISTOGRAM "+
			"for commands with a high cost per call: large KEYS, SMEMBERS, HGETALL, SORT, LRANGE or Lua scripts hold their shards while they run; "+
			"prefer SCAN and its relatives, and split big values.\n", s.obs.slow.threshold.Load())
	}
	if advice["expire"] {
		b.WriteString("- Many keys expire at the same time: spread their TTLs (add a random part) so the active expiry cycle does less at once.\n")
	}
	b.WriteString("- The latency monitor samples only events of at least latency-monitor-threshold milliseconds " +
		"(" + strconv.FormatInt(m.threshold.Load(), 10) + "); LATENCY RESET clears what it has seen.\n")
	return b.String()
}

// aofFsyncLatency samples AOF fsyncs: "aof-fsync-always" when replies wait
// for them (appendfsync always), "aof-fsync" otherwise (a background fsync
// that only delays the next one).
func (s *Server) aofFsyncLatency(d time.Duration, p aof.Policy) {
	if p == aof.FsyncAlways {
		s.obs.latency.addIfNeeded("aof-fsync-always", d)
	} else {
		s.obs.latency.addIfNeeded("aof-fsync", d)
	}
}

func latencyParams(m map[string]configParam) {
	m["latency-monitor-threshold"] = configParam{
		get: func(s *Server) string { return strconv.FormatInt(s.obs.latency.threshold.Load(), 10) },
		set: func(s *Server, v string) error {
			n, err := parseConfigInt(v, 0, math.MaxInt64)
			if err != nil {
				return err
			}
			s.obs.latency.threshold.Store(n)
			return nil
		},
	}
}
