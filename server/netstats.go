package server

// INFO stats' network counters and instantaneous rates, as Redis 7.0 has
// them: total_net_input_bytes, total_net_output_bytes,
// total_net_repl_input_bytes, total_net_repl_output_bytes,
// instantaneous_ops_per_sec and instantaneous_{input,output}[_repl]_kbps.
//
// Invariants:
//   - What counts where is Redis's: bytes read from a RESP client are
//     input and bytes written to it output, except that the replication
//     stream a replica reads from its primary is repl input and everything
//     a primary writes to a replica after PSYNC/SYNC (the RDB and the
//     stream) is repl output. A replica's REPLCONF ACKs count as the
//     primary's input and the replica's output, as in Redis. Memcached
//     connections are not counted here (memcached's own stats bytes_read
//     and bytes_written report them).
//   - Hot path cost: one uncontended atomic add per read(2) and per
//     write(2) batch, not per request, into the client's statSlot (one
//     cache line per event loop, as the command counters). INFO sums the
//     slots. The replication links count through a net.Conn wrapper
//     (countConn): their reads and writes are large batches.
//   - The rates are sampled every 100 ms by the cron into rings of 16
//     samples and averaged, as Redis's trackInstantaneousMetric does; the
//     kbps figures include replication traffic, the _repl_ ones only it.
//   - CONFIG RESETSTAT zeroes the counters and the rings.

import (
	"context"
	"net"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// netSlot is one event loop's share of the byte counters.
type netSlot struct {
	in, out atomic.Int64
	_       [48]byte // one 64-byte line per slot
}

// instMetric is one of Redis's instantaneous metrics: the last 16
// per-second rates, sampled by the cron.
type instMetric struct {
	lastTime  int64 // unix ms of the last sample
	lastCount int64
	samples   [16]int64
	idx       int
}

func (m *instMetric) track(nowMs, count int64) {
	if m.lastTime > 0 {
		if t := nowMs - m.lastTime; t > 0 {
			m.samples[m.idx] = (count - m.lastCount) * 1000 / t
		} else {
			m.samples[m.idx] = 0
		}
		m.idx = (m.idx + 1) % len(m.samples)
	}
	m.lastTime, m.lastCount = nowMs, count
}

func (m *instMetric) value() int64 {
	var sum int64
	for _, v := range m.samples {
		sum += v
	}
	return sum / int64(len(m.samples))
}

// The instantaneous metrics, in Redis's order.
const (
	instOps = iota
	instIn
	instOut
	instReplIn
	instReplOut
	instCount
)

// netStats is the server's network accounting.
type netStats struct {
	slots           []netSlot
	replIn, replOut atomic.Int64
	mu              sync.Mutex // guards inst
	inst            [instCount]instMetric
}

// initNetStats sizes the per-loop slots (New, after initObserve).
func (s *Server) initNetStats() {
	s.netAcct = &netStats{slots: make([]netSlot, s.obs.nslots)}
}

// netRead counts n bytes read from c.
func (c *Client) netRead(n int) {
	if n > 0 {
		c.srv.netAcct.slots[c.statSlot].in.Add(int64(n))
	}
}

// netWrote counts n bytes written to c.
func (c *Client) netWrote(n int) {
	if n > 0 {
		c.srv.netAcct.slots[c.statSlot].out.Add(int64(n))
	}
}

// totals sums the counters.
func (ns *netStats) totals() (in, out, replIn, replOut int64) {
	for i := range ns.slots {
		in += ns.slots[i].in.Load()
		out += ns.slots[i].out.Load()
	}
	return in, out, ns.replIn.Load(), ns.replOut.Load()
}

// netCron samples the instantaneous metrics (the server cron, every 100 ms).
func (s *Server) netCron() {
	ns := s.netAcct
	// The counters are read under mu, which CONFIG RESETSTAT holds while
	// it zeroes them: a sample read before a reset and tracked after it
	// would count all the traffic before the reset as a burst after it.
	ns.mu.Lock()
	in, out, rin, rout := ns.totals()
	ops := s.totalCommands()
	now := time.Now().UnixMilli()
	ns.inst[instOps].track(now, ops)
	ns.inst[instIn].track(now, in+rin)
	ns.inst[instOut].track(now, out+rout)
	ns.inst[instReplIn].track(now, rin)
	ns.inst[instReplOut].track(now, rout)
	ns.mu.Unlock()
}

// infoNetStats writes INFO stats' fields from instantaneous_ops_per_sec to
// instantaneous_output_repl_kbps (after total_commands_processed).
func (s *Server) infoNetStats(field func(string, any)) {
	ns := s.netAcct
	in, out, rin, rout := ns.totals()
	var v [instCount]int64
	ns.mu.Lock()
	for i := range v {
		v[i] = ns.inst[i].value()
	}
	ns.mu.Unlock()
	kbps := func(x int64) string { return strconv.FormatFloat(float64(x)/1024, 'f', 2, 64) }
	field("instantaneous_ops_per_sec", v[instOps])
	field("total_net_input_bytes", in)
	field("total_net_output_bytes", out)
	field("total_net_repl_input_bytes", rin)
	field("total_net_repl_output_bytes", rout)
	field("instantaneous_input_kbps", kbps(v[instIn]))
	field("instantaneous_output_kbps", kbps(v[instOut]))
	field("instantaneous_input_repl_kbps", kbps(v[instReplIn]))
	field("instantaneous_output_repl_kbps", kbps(v[instReplOut]))
}

// resetNetStats is CONFIG RESETSTAT's share (Redis's resetServerStats):
// counters to zero, the rings emptied, the next sample taken from zero.
func (s *Server) resetNetStats() {
	ns := s.netAcct
	ns.mu.Lock() // no cron sample between the zeroing and the rings' reset
	for i := range ns.slots {
		ns.slots[i].in.Store(0)
		ns.slots[i].out.Store(0)
	}
	ns.replIn.Store(0)
	ns.replOut.Store(0)
	now := time.Now().UnixMilli()
	for i := range ns.inst {
		ns.inst[i] = instMetric{lastTime: now}
	}
	ns.mu.Unlock()
}

// countConn counts a replication link's traffic: reads into rd, writes
// into wr.
type countConn struct {
	net.Conn
	rd, wr *atomic.Int64
}

func (c countConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	if n > 0 {
		c.rd.Add(int64(n))
	}
	return n, err
}

func (c countConn) Write(p []byte) (int, error) {
	n, err := c.Conn.Write(p)
	if n > 0 {
		c.wr.Add(int64(n))
	}
	return n, err
}

// replicaConn wraps the connection of a replica that sent PSYNC/SYNC:
// what the primary writes to it is repl output, its ACKs plain input.
func (s *Server) replicaConn(nc net.Conn) net.Conn {
	return countConn{Conn: nc, rd: &s.netAcct.slots[0].in, wr: &s.netAcct.replOut}
}

// primaryConn wraps a replica's link to its primary: the stream it reads
// is repl input, its handshake and ACKs plain output.
func (s *Server) primaryConn(nc net.Conn) net.Conn {
	return countConn{Conn: nc, rd: &s.netAcct.replIn, wr: &s.netAcct.slots[0].out}
}

// replDialCounted dials the primary (replDial) and counts the link.
func (s *Server) replDialCounted(ctx context.Context, addr string) (net.Conn, error) {
	nc, err := s.replDial(ctx, addr)
	if err != nil {
		return nil, err
	}
	return s.primaryConn(nc), nil
}
