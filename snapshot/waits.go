package snapshot

import (
	"fmt"
	"strings"
	"sync/atomic"
	"time"
)

// waits measures what a save costs the writers: how long a write's
// pre-change hook ran (shard locked, so every client of that shard waited
// as long) and how long the traversal held a shard lock at once. These are
// the two ways a writer waits behind a snapshot; Stats reports their
// maxima so that a save's log line says whether the "about 1 ms" goal held.
type waits struct {
	hookMax  atomic.Int64 // ns, longest hook run that captured a bucket
	workMax  atomic.Int64 // ns, the same without its waits for the budget
	hookSum  atomic.Int64 // ns, summed over those runs
	hooks    atomic.Int64 // hook runs that captured a bucket
	holdMax  atomic.Int64 // ns, longest traversal lock hold
	holdSum  atomic.Int64 // ns, summed over traversal lock holds
	holds    atomic.Int64
	budgetNs atomic.Int64 // ns hooks spent waiting for room in the budget
	// hist counts the waits of each cause by decade (waitBounds); sum and
	// top are each cause's total and longest wait (ns).
	hist     [waitCauses][len(waitBounds) + 1]atomic.Int64
	sum, top [waitCauses]atomic.Int64
}

// The causes a writer waits behind a save, each with its own histogram:
// a hook's own work (capturing a bucket: encoding small keys, taking
// references), a hook's wait for room in the budget, a dropping writer's
// wait for room (bigvalues.go: the last resort), and a traversal lock
// hold (every writer of the shard waits behind it), and a writer's copy of
// a big value the save has not encoded yet before it changes or drops it
// (Unshare, Dropped: a clone of a collection, or of a string changed in
// place, including any wait for the encoder to finish that one value).
// The two budget waits above hold the shard lock; a connection's wait at
// the WriterGate (gate.go: its write took the budget past the soft limit)
// holds nothing and slows that connection only: "conn budget".
const (
	causeHookWork = iota
	causeHookBudget
	causeDropBudget
	causeHold
	causeCopy
	causeConnBudget
	waitCauses
)

var causeNames = [waitCauses]string{"hook work", "hook budget (locked)", "drop budget (locked)", "hold", "copy", "conn budget (unlocked)"}

// BudgetWaits counts one kind of wait for room in a save's memory budget.
type BudgetWaits struct {
	N          int64
	Total, Max time.Duration
}

func (b BudgetWaits) String() string {
	return fmt.Sprintf("%d (total %v, max %v)", b.N, b.Total.Round(time.Microsecond), b.Max.Round(time.Microsecond))
}

// waitBounds are the histogram's upper bounds; a last bucket counts the
// waits above the last bound.
var waitBounds = [...]time.Duration{10 * time.Microsecond, 100 * time.Microsecond, time.Millisecond,
	10 * time.Millisecond, 100 * time.Millisecond}

// WaitHist is a save's histogram of writer waits per cause (Stats.Waits).
type WaitHist [waitCauses][len(waitBounds) + 1]int64

// String gives each cause's counts as "cause ≤10µs/≤100µs/≤1ms/≤10ms/≤100ms/more",
// leaving out causes that never happened.
func (h WaitHist) String() string {
	var b strings.Builder
	for c, counts := range h {
		var n int64
		for _, v := range counts {
			n += v
		}
		if n == 0 {
			continue
		}
		if b.Len() > 0 {
			b.WriteString("; ")
		}
		fmt.Fprintf(&b, "%s", causeNames[c])
		for i, v := range counts {
			sep := "/"
			if i == 0 {
				sep = " "
			}
			fmt.Fprintf(&b, "%s%d", sep, v)
		}
	}
	if b.Len() == 0 {
		return "none"
	}
	return b.String() + " (≤10µs/≤100µs/≤1ms/≤10ms/≤100ms/more)"
}

// note counts one wait of cause c.
func (w *waits) note(c int, d time.Duration) {
	i := 0
	for i < len(waitBounds) && d > waitBounds[i] {
		i++
	}
	w.hist[c][i].Add(1)
	w.sum[c].Add(int64(d))
	setMax(&w.top[c], int64(d))
}

// conn counts a connection's wait at the WriterGate (gate.go).
func (w *waits) conn(d time.Duration) { w.note(causeConnBudget, d) }

// budgetWaits sums cause c's waits.
func (w *waits) budgetWaits(c int) BudgetWaits {
	var b BudgetWaits
	for i := range w.hist[c] {
		b.N += w.hist[c][i].Load()
	}
	b.Total, b.Max = time.Duration(w.sum[c].Load()), time.Duration(w.top[c].Load())
	return b
}

func setMax(a *atomic.Int64, v int64) {
	for {
		old := a.Load()
		if v <= old || a.CompareAndSwap(old, v) {
			return
		}
	}
}

func (w *waits) hook(d, budget time.Duration) {
	w.note(causeHookWork, d-budget)
	if budget > 0 {
		w.note(causeHookBudget, budget)
	}
	setMax(&w.hookMax, int64(d))
	setMax(&w.workMax, int64(d-budget))
	w.hookSum.Add(int64(d))
	w.hooks.Add(1)
}

func (w *waits) hold(d time.Duration) {
	w.note(causeHold, d)
	setMax(&w.holdMax, int64(d))
	w.holdSum.Add(int64(d))
	w.holds.Add(1)
}

// fill copies the measurements into st.
func (w *waits) fill(st *Stats) {
	st.HookMax = time.Duration(w.hookMax.Load())
	st.HookWorkMax = time.Duration(w.workMax.Load())
	st.HoldMax = time.Duration(w.holdMax.Load())
	st.Hooks = w.hooks.Load()
	st.HookTotal = time.Duration(w.hookSum.Load())
	st.Holds = w.holds.Load()
	st.HoldTotal = time.Duration(w.holdSum.Load())
	st.HookBudgetWait = time.Duration(w.budgetNs.Load())
	st.HookBudget, st.DropBudget, st.ConnBudget = w.budgetWaits(causeHookBudget), w.budgetWaits(causeDropBudget), w.budgetWaits(causeConnBudget)
	for c := range w.hist {
		for i := range w.hist[c] {
			st.Waits[c][i] = w.hist[c][i].Load()
		}
	}
}
