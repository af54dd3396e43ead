package netpoll

import "runtime/metrics"

// schedProbe tells an io_uring loop whether goroutines wait for a P.
//
// Between two busy iterations the io_uring loop waits for the next
// completion in a system call that keeps its P (ring.waitBriefly): cheaper
// per request than parking on the Go poller, but while it waits nothing
// else can run on that P. With every P held that way (one loop per P, a
// steady trickle of requests), work off the loops, such as a BGSAVE's
// serializer or a client's blocked command, only ran when preemption took
// the P away: a save took 5-7x longer than on epoll. So before such a wait
// the loop asks the scheduler, through runtime/metrics (there is no other
// public way), how many goroutines are runnable; if any, it parks on the
// Go poller instead, which hands the P over at once, as the epoll loop
// always does when it has nothing to do.
//
// A read takes the scheduler's lock and costs ~0.2 µs; the loop asks only
// when it is about to wait (nothing is ready), and at most once per
// probeEvery of busy waiting.
type schedProbe struct {
	sample [1]metrics.Sample
	procs  [2]metrics.Sample // goroutines running, GOMAXPROCS (idleP)
	last   int64             // nanotime of the last read
	busy   bool              // what it said
}

// probeEvery bounds how often a loop reads the metric while it keeps
// finding nothing runnable: a goroutine that becomes runnable waits at
// most this plus one brief wait for the loop's P.
const probeEvery = 50_000 // ns

func newSchedProbe() *schedProbe {
	p := &schedProbe{}
	p.sample[0].Name = "/sched/goroutines/runnable:goroutines"
	p.procs[0].Name = "/sched/goroutines/running:goroutines"
	p.procs[1].Name = "/sched/gomaxprocs:threads"
	return p
}

// othersRunnable reports whether goroutines wait for a P; now is the
// loop's clock (UnixNano).
func (p *schedProbe) othersRunnable(now int64) bool {
	if p.busy || now-p.last >= probeEvery || now < p.last {
		metrics.Read(p.sample[:])
		p.last = now
		v := p.sample[0].Value
		p.busy = v.Kind() == metrics.KindUint64 && v.Uint64() > 0
	}
	return p.busy
}

// forget makes the next othersRunnable read the metric: goroutines may
// have become runnable since (the loop let the scheduler poll the network).
func (p *schedProbe) forget() { p.last = 0; p.busy = false }

// idleP reports whether a P may be idle: fewer goroutines run than there
// are Ps. (One whose goroutine waits in a blocking system call counts as
// idle here, and may be.)
func (p *schedProbe) idleP() bool {
	metrics.Read(p.procs[:])
	running, procs := p.procs[0].Value, p.procs[1].Value
	return running.Kind() == metrics.KindUint64 && procs.Kind() == metrics.KindUint64 && running.Uint64() < procs.Uint64()
}
