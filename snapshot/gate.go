package snapshot

import (
	"sync"
	"time"
)

// WriterGate slows the connections that fill a save's memory budget
// instead of their shards. The budget (budget.go) has a soft limit, half
// of Options.MaxExtraMemory: while more than that is in use the gate is
// closed. A writer whose charge (a big value dropped before the save wrote
// it, or a hook's chunk) leaves the budget over the soft limit marks its
// shard (shard.Shard.MarkGate, shard locked); the server moves the mark to
// the connection that wrote when it unlocks, and that connection waits at
// the gate before its next write command, holding no lock, until the gate
// opens: the budget is back under the soft limit, or the save ended or
// failed (Write always opens it before returning). Other clients of the
// shard and of the connection's event loop go on meanwhile. The hard limit
// (the configured value) stays the bound: a writer that would pass it
// still waits for room with its shard locked (the last resort), which only
// happens to writers that do not wait at the gate (replica apply, AOF
// loading, the memcached front end) or when many connections overshoot
// the soft limit at once.
//
// One gate serves every save of a server (one save runs at a time); the
// zero value is open. Its waits are counted in the running save's Stats
// ("conn budget" waits), measured at the gate from each wait's start to
// the gate's opening, so that they count even if the waiter runs later.
type WriterGate struct {
	mu     sync.Mutex
	opened chan struct{} // nil while open; closed when the gate opens
	enters []time.Time   // the waits on the current closure, by start
	w      *waits        // the running save's, nil between saves
}

// Closed reports whether the gate is closed now.
func (g *WriterGate) Closed() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.opened != nil
}

// Wait returns nil if the gate is open, or a channel closed when it opens;
// a non-nil channel counts as one wait of the running save.
func (g *WriterGate) Wait() <-chan struct{} {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.opened == nil {
		return nil
	}
	g.enters = append(g.enters, time.Now())
	return g.opened
}

// close closes the gate (no-op if closed).
func (g *WriterGate) close() {
	g.mu.Lock()
	if g.opened == nil {
		g.opened = make(chan struct{})
	}
	g.mu.Unlock()
}

// open opens the gate (no-op if open), counting the waits it ends.
func (g *WriterGate) open() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.opened == nil {
		return
	}
	close(g.opened)
	g.opened = nil
	now := time.Now()
	for _, t := range g.enters {
		if g.w != nil {
			g.w.conn(now.Sub(t))
		}
	}
	g.enters = g.enters[:0]
}

// begin attaches the gate to a starting save's measurements.
func (g *WriterGate) begin(w *waits) {
	g.mu.Lock()
	g.w = w
	g.mu.Unlock()
}

// end opens the gate (the save is over) and detaches it from the save.
func (g *WriterGate) end() {
	g.open()
	g.mu.Lock()
	g.w = nil
	g.mu.Unlock()
}
