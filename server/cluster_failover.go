package server

// Planned failover under a control plane: no acknowledged write is lost
// when a topology swaps a primary and its replica.
//
// A control plane fails a healthy primary over by pushing a new topology
// (CLUSTERX SETNODES) in which its replica is the primary. kvrocks-
// controller does no more than that: it picks the replica with the largest
// slave_repl_offset and pushes the topology to the nodes one by one, in
// either order. Between the replica's promotion and the old primary's
// demotion the old primary still acknowledges writes that the new one
// never sees; Redis's CLUSTER FAILOVER closes that window with a write
// pause on the primary until the replica has caught up. We do the same on
// whichever node learns of the swap first:
//
//   - The old primary told first (handOver): it pauses writes (CLIENT
//     PAUSE WRITE, internally), waits for the in-flight writes to commit
//     (every shard locked once), waits until the new primary has
//     acknowledged its replication offset, installs the topology (so it
//     becomes a replica and answers -MOVED), then lifts the pause. Paused
//     writers run their cluster check again and are redirected.
//   - The new primary told first (takeOver): while still linked to its
//     primary it asks it for CLIENT PAUSE WRITE, reads its
//     master_repl_offset, waits until its own offset reaches it, promotes
//     itself, pushes the same topology to the old primary (which becomes a
//     replica and redirects the paused writers), and lifts the pause.
//
// Both steps are bounded (failoverCatchUp): when the peer cannot be
// reached or does not catch up in time, the topology is installed anyway,
// as the control plane asked (what a forced failover does). A pause the
// user set with CLIENT PAUSE is left in force.

import (
	"context"
	"errors"
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/damselflydb/damselfly/cluster"
	"github.com/damselflydb/damselfly/resp"
)

// failoverCatchUp bounds how long a hand-off waits for the replica; the
// control plane's own call (3 s read timeout in kvrocks-controller) must
// not time out meanwhile.
const failoverCatchUp = 1500 * time.Millisecond

// handOver runs before a new topology t is installed; it returns what to
// do once it is (nil: nothing). The caller holds cs.mu.
func (s *Server) handOver(cur *clusterView, t *cluster.Topology, text string) func() {
	if cur.topo == nil || cur.me == nil {
		return nil
	}
	next := t.Node(cur.myID)
	if next == nil {
		return nil
	}
	switch {
	case cur.me.Primary && !next.Primary && !s.repl.IsReplica():
		// Demoted: the new primary is one of our replicas.
		np := t.Node(next.MasterID)
		if np == nil || !s.repl.ReplicaAttached(np.Host, np.Port) {
			return nil
		}
		resume := s.pauseWritesForFailover()
		s.drainWrites()
		off := s.repl.Offset()
		ok := s.repl.WaitReplica(context.Background(), np.Host, np.Port, off, failoverCatchUp)
		s.log.Info("cluster: handing over to the new primary", "primary", net.JoinHostPort(np.Host, strconv.Itoa(np.Port)), "offset", off, "caught_up", ok)
		return resume
	case !cur.me.Primary && next.Primary && s.repl.IsReplica():
		// Promoted: the old primary, if still up, pauses until we have
		// all it acknowledged, and learns the topology from us.
		old := cur.topo.Node(cur.me.MasterID)
		if old == nil {
			return nil
		}
		if h, p, ok := s.repl.LinkTarget(); !ok || h != old.Host || p != old.Port {
			return nil
		}
		return s.takeOver(old, text, t.Version)
	}
	return nil
}

// pauseWritesForFailover pauses writes for at most the hand-off's bound
// and returns the function that lifts the pause (unless the user's own
// pause is in force).
func (s *Server) pauseWritesForFailover() func() {
	userPause := s.pause.active() != pauseOff
	s.pauseClients(pauseWrite, time.Now().Add(2*failoverCatchUp).UnixMilli())
	return func() {
		if !userPause {
			s.unpauseClients()
		}
	}
}

// drainWrites returns once every write admitted before the pause has
// committed (a command holds its shards' locks until it is journaled).
func (s *Server) drainWrites() {
	all := s.store.All()
	s.store.LockMany(&all)
	s.store.UnlockMany(&all)
}

// takeOver pauses the old primary's writes and waits until this replica
// has everything it acknowledged; it returns the step that, once this node
// is primary, pushes the topology to the old primary and lifts its pause.
func (s *Server) takeOver(old *cluster.Node, text string, version int64) func() {
	addr := net.JoinHostPort(old.Host, strconv.Itoa(old.Port))
	nc, err := net.DialTimeout("tcp", addr, 300*time.Millisecond)
	if err != nil {
		s.log.Warn("cluster: cannot reach the old primary, promoting without it", "primary", addr, "err", err)
		return nil
	}
	p := &peerConn{nc: nc, rd: resp.NewReader(nc)}
	deadline := time.Now().Add(failoverCatchUp)
	// The replication link's credentials, else the cluster's password
	// (as the migration link uses).
	if auth := s.repl.AuthArgs(); auth != nil {
		p.call(deadline, auth...)
	} else if pass := s.cfg.requirePass(); pass != "" {
		p.call(deadline, "AUTH", pass)
	}
	pauseMS := strconv.FormatInt((2 * failoverCatchUp).Milliseconds(), 10)
	if _, err := p.call(deadline, "CLIENT", "PAUSE", pauseMS, "WRITE"); err != nil {
		s.log.Warn("cluster: cannot pause the old primary, promoting without it", "primary", addr, "err", err)
		nc.Close()
		return nil
	}
	unpause := func() {
		deadline := time.Now().Add(failoverCatchUp)
		if _, err := p.call(deadline, "CLUSTERX", "SETNODES", text, strconv.FormatInt(version, 10)); err != nil {
			s.log.Warn("cluster: cannot push the topology to the old primary", "primary", addr, "err", err)
		}
		p.call(deadline, "CLIENT", "UNPAUSE")
		nc.Close()
	}
	info, err := p.call(deadline, "INFO", "replication")
	target := int64(-1)
	if err == nil && peerInfoField(info, "role") == "master" {
		target, _ = strconv.ParseInt(peerInfoField(info, "master_repl_offset"), 10, 64)
	}
	if target < 0 {
		s.log.Info("cluster: the old primary already handed over", "primary", addr)
		return unpause
	}
	caught := false
	for time.Now().Before(deadline) {
		if s.repl.Offset() >= target {
			caught = true
			break
		}
		time.Sleep(time.Millisecond)
	}
	s.log.Info("cluster: taking over from the old primary", "primary", addr, "offset", target, "caught_up", caught)
	return unpause
}

// peerConn is a plain connection to another node of the cluster.
type peerConn struct {
	nc net.Conn
	rd *resp.Reader
}

// call sends one command and reads its reply: the text of a simple or
// bulk reply, or the error of an error reply.
func (p *peerConn) call(deadline time.Time, args ...string) (string, error) {
	var b []byte
	b = append(b, '*')
	b = strconv.AppendInt(b, int64(len(args)), 10)
	b = append(b, '\r', '\n')
	for _, a := range args {
		b = append(b, '$')
		b = strconv.AppendInt(b, int64(len(a)), 10)
		b = append(b, '\r', '\n')
		b = append(b, a...)
		b = append(b, '\r', '\n')
	}
	p.nc.SetDeadline(deadline)
	if _, err := p.nc.Write(b); err != nil {
		return "", err
	}
	v, err := p.rd.ReadValue()
	if err != nil {
		return "", err
	}
	if v.Type == '-' {
		return "", errors.New(string(v.Str))
	}
	return string(v.Str), nil
}

// peerInfoField is one field's value in INFO text ("" when absent).
func peerInfoField(info, key string) string {
	for _, line := range strings.Split(info, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSuffix(line, "\r"), key+":"); ok {
			return v
		}
	}
	return ""
}

// clusterAfterPause runs the cluster check again for a write that waited
// out a pause: the pause may have been a failover's, after which this node
// no longer serves the slot (the write is redirected, not refused as
// READONLY). It reports whether the command was answered.
func (c *Client) clusterAfterPause(cmd *command, args [][]byte) bool {
	if c.srv.cluster == nil || !c.mayReplicate(cmd) {
		return false
	}
	return c.clusterCheck(cmd, args)
}
