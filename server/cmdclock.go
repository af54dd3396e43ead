package server

// The command clock: the wall time, in milliseconds, at which the running
// command began (cmdBegin sets it, cmdDone clears it). Redis 7.0 judges
// key expiry during a command by the time cached when call() began, not
// by a fresh clock read per lookup; the hot commands (GET, SET) do the
// same here, which also saves them two clock reads per call (measured:
// clock_gettime was 6% of the CPU of SET at -P 16, BENCHMARKS.md issue 20).
// Outside a command (cmdMs 0: replication and AOF apply, internal calls)
// nowMs reads the clock.

// nowMs is the running command's start time, or the time now.
func (c *Client) nowMs() int64 {
	if c.cmdMs != 0 {
		return c.cmdMs
	}
	return now()
}
