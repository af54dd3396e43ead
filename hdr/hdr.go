// Package hdr is a concurrent latency histogram with HdrHistogram's bucket
// layout at two significant digits (the precision Redis 7 uses for its
// per-command latency histograms): values below 256 are counted exactly,
// and above that every power-of-two range [2^k·128, 2^k·256) is split into
// 128 equal sub-buckets, so a recorded value is known to within 1/128.
//
// Invariants: Record is lock-free (one atomic add on a counter array that
// is allocated once and never moves) and may run concurrently with Record,
// Reset and the readers; values above Max are counted as Max. Readers
// (Snapshot) see each counter atomically but not the histogram as a whole
// at one instant, which is what statistics need.
package hdr

import (
	"math/bits"
	"sync/atomic"
)

const (
	subBits  = 8            // sub-bucket count 256 = 2^subBits
	subCount = 1 << subBits // values below this are exact
	subHalf  = subCount / 2 // sub-buckets per power of two above subCount
	// Max is the largest value told apart (1 s in nanoseconds, as in
	// Redis); larger values are recorded as Max.
	Max = 1_000_000_000
)

// buckets is how many counters cover 0..Max.
var buckets = index(Max) + 1

// index is the counter of value v (v <= Max).
func index(v uint64) int {
	if v < subCount {
		return int(v)
	}
	k := bits.Len64(v) - subBits // v>>k is in [subHalf, subCount)
	return subCount + (k-1)*subHalf + int(v>>k) - subHalf
}

// lowest and width of counter i: the values it stands for are
// [lowest, lowest+width).
func bounds(i int) (lowest, width uint64) {
	if i < subCount {
		return uint64(i), 1
	}
	j := i - subCount
	k := j/subHalf + 1
	return uint64(j%subHalf+subHalf) << k, 1 << k
}

// Histogram counts values (nanoseconds, by convention) concurrently.
type Histogram struct {
	counts []atomic.Int64 // no separate total: one atomic add per Record
}

// New returns an empty histogram (about 24 KiB).
func New() *Histogram { return &Histogram{counts: make([]atomic.Int64, buckets)} }

// Record counts one value.
func (h *Histogram) Record(v int64) {
	if v < 0 {
		v = 0
	} else if v > Max {
		v = Max
	}
	h.counts[index(uint64(v))].Add(1)
}

// Reset zeroes every counter.
func (h *Histogram) Reset() {
	for i := range h.counts {
		h.counts[i].Store(0)
	}
}

// Snapshot is a histogram's counts at one time; several histograms (one
// per event loop) add into one snapshot.
type Snapshot struct {
	counts []int64
	Total  int64
}

// NewSnapshot returns an empty snapshot to add histograms into.
func NewSnapshot() *Snapshot { return &Snapshot{counts: make([]int64, buckets)} }

// Add adds h's current counts.
func (s *Snapshot) Add(h *Histogram) {
	if h == nil {
		return
	}
	var n int64
	for i := range h.counts {
		c := h.counts[i].Load()
		s.counts[i] += c
		n += c
	}
	s.Total += n
}

// ValueAtPercentile is the highest value equivalent to the one at
// percentile p (0..100), like HdrHistogram's hdr_value_at_percentile; 0 for
// an empty snapshot.
func (s *Snapshot) ValueAtPercentile(p float64) int64 {
	if s.Total == 0 {
		return 0
	}
	p = min(max(p, 0), 100)
	want := int64(p/100*float64(s.Total) + 0.5)
	if want < 1 {
		want = 1
	}
	var seen int64
	for i, c := range s.counts {
		seen += c
		if seen >= want {
			lo, w := bounds(i)
			return int64(lo + w - 1)
		}
	}
	return Max
}

// Bucket is one step of a cumulative distribution: Count values were at
// most Upper.
type Bucket struct {
	Upper int64
	Count int64
}

// Log returns the cumulative counts at first, 2·first, 4·first, ... as
// HdrHistogram's log iterator reports them (each step counts the values up
// to the highest value equivalent to its bound, and Upper is that value),
// keeping only the steps where the count grew, as Redis's LATENCY
// HISTOGRAM does.
func (s *Snapshot) Log(first int64) []Bucket {
	var out []Bucket
	if s.Total == 0 {
		return out
	}
	var cum, prev int64
	i := 0
	for bound := uint64(first); ; bound *= 2 {
		for ; i < len(s.counts); i++ {
			if lo, _ := bounds(i); lo > bound {
				break
			}
			cum += s.counts[i]
		}
		if cum > prev {
			j := index(min(bound, Max))
			lo, w := bounds(j)
			out = append(out, Bucket{Upper: int64(lo + w - 1), Count: cum})
			prev = cum
		}
		if cum >= s.Total || i >= len(s.counts) {
			return out
		}
	}
}

// Cumulative returns, for each bound (ascending), how many values were at
// most that bound (a counter is counted under a bound when its lowest
// value is, so a count may include values up to 1/128 above the bound):
// the buckets of a Prometheus histogram.
func (s *Snapshot) Cumulative(upper []int64) []int64 {
	out := make([]int64, len(upper))
	var cum int64
	i := 0
	for j, b := range upper {
		for ; i < len(s.counts); i++ {
			if lo, _ := bounds(i); int64(lo) > b {
				break
			}
			cum += s.counts[i]
		}
		out[j] = cum
	}
	return out
}
