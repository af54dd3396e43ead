package snapshot

import (
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
	setMax(&w.hookMax, int64(d))
	setMax(&w.workMax, int64(d-budget))
	w.hookSum.Add(int64(d))
	w.hooks.Add(1)
}

func (w *waits) hold(d time.Duration) {
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
}
