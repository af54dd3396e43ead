package tsc

import (
	"testing"
	"time"
)

// The clock agrees with the runtime's monotonic clock over a sleep, within
// generous bounds (a loaded machine delays the second readings).
func TestClockTracksMonotonic(t *testing.T) {
	c := New()
	t.Logf("uses TSC: %v", c.UsesTSC())
	if n := c.Nanos(); n < int64(time.Second) || n > int64(time.Minute) {
		t.Fatalf("first reading %d ns: want about 1s (the origin is a second back)", n)
	}
	best := time.Duration(1 << 62)
	for range 5 {
		n0, m0 := c.Nanos(), time.Now()
		time.Sleep(20 * time.Millisecond)
		m1, n1 := time.Now(), c.Nanos()
		// The Clock's interval lies inside the runtime's, up to calibration error.
		d := time.Duration(n1-n0) - m1.Sub(m0)
		if d < 0 {
			d = -d
		}
		best = min(best, d)
	}
	if best > time.Millisecond {
		t.Fatalf("the clock differs from the monotonic clock by %v over 20ms", best)
	}
}

func TestClockMonotonicOnOneGoroutine(t *testing.T) {
	c := New()
	last := c.Nanos()
	for range 100000 {
		n := c.Nanos()
		if n < last-int64(time.Microsecond) {
			t.Fatalf("went back from %d to %d", last, n)
		}
		last = max(last, n)
	}
}

func BenchmarkNanos(b *testing.B) {
	c := New()
	var s int64
	for b.Loop() {
		s += c.Nanos()
	}
	_ = s
}

func BenchmarkTimeSince(b *testing.B) {
	o := time.Now()
	var s int64
	for b.Loop() {
		s += int64(time.Since(o))
	}
	_ = s
}
