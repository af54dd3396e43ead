// Package tsc is a cheap monotonic clock for timing commands: the CPU's
// time-stamp counter, scaled to nanoseconds. On this project's VMs the
// kernel's clock source is kvm-clock, whose vDSO read (Go's nanotime) costs
// about 40 ns; RDTSC costs about 14 ns. A pipelined GET spends roughly
// 500 ns of user-space CPU, so the clock read that ends every command
// (commandstats, latencystats, SLOWLOG) is worth making cheap (issue 20).
//
// Invariants: a Clock is calibrated once, when made, against the runtime's
// monotonic clock; afterwards it never changes and is safe for concurrent
// use. It uses the counter only where the CPU reports an invariant TSC
// (constant rate, running in every power state) on amd64; elsewhere it
// falls back to the runtime's monotonic clock, with the same meaning.
// Readings are nanoseconds since about a second before the Clock was made,
// so they are never 0 (callers use 0 for "none"). Two readings taken on
// different CPUs may be slightly out of order; callers that subtract them
// clamp at 0.
package tsc

import (
	"math/bits"
	"time"
)

// Clock converts counter readings to nanoseconds.
type Clock struct {
	origin time.Time // fallback clock's origin
	t0     uint64    // counter at the origin
	mult   uint64    // ns per tick, fixed point with 32 fraction bits; 0: use origin
}

// calibration is how long New watches both clocks. The ratio's error is
// about a clock read's jitter over this window, well under 0.1%.
const calibration = 2 * time.Millisecond

// New calibrates a Clock (it sleeps about 2 ms when the counter is usable).
func New() *Clock {
	c := &Clock{origin: time.Now().Add(-time.Second)}
	if !invariant() {
		return c
	}
	n0, t0 := time.Now(), read()
	time.Sleep(calibration)
	n1, t1 := time.Now(), read()
	ns, ticks := n1.Sub(n0), t1-t0
	if ns <= 0 || ticks == 0 || t1 < t0 {
		return c
	}
	mult := uint64(float64(ns) / float64(ticks) * (1 << 32))
	// A plausible counter runs at 100 MHz to 10 GHz.
	if mult < (1<<32)/10 || mult > 10*(1<<32) {
		return c
	}
	// Anchor the counter on the fallback's scale: origin is a second back.
	c.t0 = t0 - uint64(float64(n0.Sub(c.origin))*(1<<32)/float64(mult))
	c.mult = mult
	return c
}

// UsesTSC reports whether the clock reads the time-stamp counter.
func (c *Clock) UsesTSC() bool { return c.mult != 0 }

// Nanos is the time in ns since the Clock's origin.
func (c *Clock) Nanos() int64 {
	if c.mult == 0 {
		return int64(time.Since(c.origin))
	}
	hi, lo := bits.Mul64(read()-c.t0, c.mult)
	return int64(hi<<32 | lo>>32)
}
