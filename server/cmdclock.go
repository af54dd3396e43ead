package server

import "time"

// The command clock: the wall time, in milliseconds, at which the running
// command began (cmdBegin sets it, cmdDone clears it). Redis 7.0 judges
// key expiry during a command by the time cached when call() began, not
// by a fresh clock read per lookup; the hot commands (GET, SET) do the
// same here, which also saves them two clock reads per call (measured:
// clock_gettime was 6% of the CPU of SET at -P 16, BENCHMARKS.md issue 20).
// So do the shared collection lookups (getColl, lookup: HSET, LPUSH, SADD
// ...). Outside a command (cmdMs 0: replication and AOF apply, internal
// calls) nowMs reads the clock. A command that waits inside its handler
// and then looks again (a blocked BLPOP woken) refreshes cmdMs first, as
// Redis serves a woken client with a fresh time.

// nowMs is the running command's start time, or the time now.
func (c *Client) nowMs() int64 {
	if c.cmdMs != 0 {
		return c.cmdMs
	}
	return now()
}

// refreshCmdClock moves the running command's time to now, after it
// waited (blockOn).
func (c *Client) refreshCmdClock() {
	if c.cmdMs != 0 {
		c.cmdMs = now()
	}
}

// Clock reads per pipelined command (issue 20). A command's duration
// (commandstats, latencystats, SLOWLOG, LATENCY, the watchdog) is measured
// on the monotonic clock from its start to its end. Within one batch of
// requests read together (processInput), the end of one command is the
// start of the next: one monotonic read per command instead of a wall and
// a monotonic read at the start and another at the end. The batch's first
// command reads the wall clock once (time.Now); the commands after it get
// their wall start (cmdMs) from that reading plus the monotonic time since,
// so a whole batch costs one wall read. The shared boundary is dropped
// (the next command reads the clock afresh) whenever something may have
// waited between two commands: a pause, a busy script, the OOM check, a
// panic, the end of the batch. Outside a batch (EXEC's queued commands,
// scripts, replication and AOF apply) every command reads the clock.
type cmdClock struct {
	off   int64 // wall ns minus monotonic ns, as read at the batch's first command
	last  int64 // in a batch: the previous command's end (monotonic ns), 0 none
	batch bool  // processInput is running a batch
}

// The monotonic clock is the server's tsc.Clock: the CPU's time-stamp
// counter where usable (about 14 ns a read here against 40 ns for the
// runtime's nanotime on kvm-clock), read once per command.

// cmdStart is the start of a command run directly: its monotonic time in
// ns and its wall time in ms (for cmdMs).
func (c *Client) cmdStart() (mono, wallMs int64) {
	k := &c.clk
	if k.last != 0 {
		return k.last, (k.off + k.last) / 1e6
	}
	t := time.Now()
	mono = c.srv.clock.Nanos()
	k.off = t.UnixNano() - mono
	return mono, t.UnixMilli()
}

// monoNow is the monotonic time in ns (never 0).
func (c *Client) monoNow() int64 { return c.srv.clock.Nanos() }

// cmdEnded keeps a direct command's end as the next command's start while
// in a batch.
func (c *Client) cmdEnded(end int64) {
	if c.clk.batch {
		c.clk.last = end
	}
}

// clockBreak drops the shared boundary: the next command reads the clock.
// It returns false, to sit in a condition before a wait.
func (c *Client) clockBreak() bool {
	c.clk.last = 0
	return false
}
