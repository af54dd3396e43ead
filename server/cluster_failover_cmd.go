package server

// CLUSTER FAILOVER [FORCE|TAKEOVER] on a replica, Redis 7.0's command on
// the control plane's topology.
//
// Redis answers +OK once the request is accepted and fails over in the
// background (a manual failover that does not complete within 5 s is
// abandoned, logged only); so do we, on a goroutine of the server. The
// new layout is the current topology with this replica in its primary's
// place (cluster.Topology.WithFailover) at the SAME version: the version
// numbers belong to the control plane, and a node that invented one would
// make the controller's next push look stale (or equal, and be ignored)
// on the nodes that saw it.
//
//   - Default (coordinated, as Redis's manual failover): the replica asks
//     its primary for CLIENT PAUSE WRITE, reads its master_repl_offset and
//     waits until its own offset reaches it (abandoning, and unpausing the
//     primary, after 5 s). Then it pushes the new layout to the primary
//     (CLUSTERX SETNODES ... FORCE): the primary's planned hand-off
//     (cluster_failover.go) drains the writes admitted before the pause,
//     waits for this replica's ACK of its final offset and becomes a
//     replica; the pause stays (it is ours). The replica then installs the
//     layout itself (promotion), lifts the primary's pause (its paused
//     writers run their cluster check again: -MOVED to the new primary) and
//     pushes the layout to every other node it lists.
//   - FORCE: no agreement of the primary (it may be down): the replica
//     promotes itself at once and pushes the layout to every node,
//     the old primary included when it answers. Writes the primary
//     acknowledged that had not reached the replica are lost, as in Redis.
//   - TAKEOVER: the same here. Redis's FORCE still waits for the votes of
//     a majority of primaries and TAKEOVER does not; without a cluster bus
//     there are no votes, so both act alone.
//
// The control plane is not told: kvrocks-controller keeps its own layout
// and its next topology (a higher version) is installed as usual; if it
// still names the old primary, that push is itself a planned failover back
// (no acknowledged write lost either way). Tell the controller (its shard
// failover API) to make the change stick, or fail over through it.
// A push with FORCE also ends a slot migration in progress on the nodes it
// reaches (their migration maps are reset); do not fail over mid-migration.

import (
	"net"
	"strconv"
	"sync"
	"time"

	"github.com/damselflydb/damselfly/cluster"
	"github.com/damselflydb/damselfly/resp"
)

const (
	// manualFailoverTimeout is Redis's CLUSTER_MF_TIMEOUT: how long the
	// replica may take to catch up with its paused primary.
	manualFailoverTimeout = 5 * time.Second
	// manualFailoverPause is how long the primary's writes are paused at
	// most (Redis: CLUSTER_MF_TIMEOUT * CLUSTER_MF_PAUSE_MULT).
	manualFailoverPause = 2 * manualFailoverTimeout
)

// manualFailover serializes CLUSTER FAILOVER runs on a node.
type manualFailover struct {
	mu sync.Mutex
}

func (c *Client) clusterFailover(args [][]byte) {
	if len(args) > 3 {
		c.err("ERR unknown subcommand or wrong number of arguments for '" + sanitize(args[1], 128) + "'. Try CLUSTER HELP.")
		return
	}
	force := false
	if len(args) == 3 {
		switch {
		case eq(args[2], "force"), eq(args[2], "takeover"):
			force = true
		default:
			c.err("ERR syntax error")
			return
		}
	}
	s := c.srv
	v := s.cluster.view.Load()
	if v.topo == nil || v.me == nil || v.me.Primary {
		c.err("ERR You should send CLUSTER FAILOVER to a replica")
		return
	}
	old := v.topo.Node(v.me.MasterID)
	if old == nil {
		c.err("ERR I'm a replica but my master is unknown to me")
		return
	}
	if !force && (!s.repl.IsReplica() || s.repl.Role().State != "connected") {
		c.err("ERR Master is down or failed, please use CLUSTER FAILOVER FORCE")
		return
	}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		defer func() {
			if r := recover(); r != nil { // never take the server down
				s.log.Error("cluster: panic in a manual failover", "panic", r)
			}
		}()
		s.runManualFailover(force)
	}()
	c.ok()
}

// runManualFailover fails this replica over (see the file comment).
func (s *Server) runManualFailover(force bool) {
	s.manualFO.mu.Lock()
	defer s.manualFO.mu.Unlock()
	v := s.cluster.view.Load()
	if v.topo == nil || v.me == nil || v.me.Primary {
		return // promoted meanwhile
	}
	old := v.topo.Node(v.me.MasterID)
	if old == nil {
		return
	}
	t, err := v.topo.WithFailover(v.myID)
	if err != nil {
		s.log.Warn("cluster: manual failover", "err", err)
		return
	}
	text, version := t.Text(), strconv.FormatInt(t.Version, 10)
	var p *peerConn
	if !force {
		s.log.Warn("cluster: manual failover user request accepted")
		if p = s.dialPeer(old); p == nil {
			s.log.Warn("cluster: manual failover timed out: the primary cannot be reached")
			return
		}
		defer p.nc.Close()
		if !s.manualCatchUp(p) {
			p.call(time.Now().Add(time.Second), "CLIENT", "UNPAUSE")
			s.log.Warn("cluster: manual failover timed out")
			return
		}
		// The primary drains, waits for our ACK and becomes our replica.
		if _, err := p.call(time.Now().Add(3*time.Second), "CLUSTERX", "SETNODES", text, version, "FORCE"); err != nil {
			p.call(time.Now().Add(time.Second), "CLIENT", "UNPAUSE")
			s.log.Warn("cluster: manual failover: the primary refused the hand-off", "err", err)
			return
		}
	} else {
		s.log.Warn("cluster: forced failover user request accepted")
	}
	if err := s.installNodes(text, t.Version, true, false); err != nil {
		s.log.Warn("cluster: manual failover: installing the topology", "err", err)
		return
	}
	s.log.Info("cluster: failover done, this node is the shard's primary", "version", t.Version)
	if p != nil {
		p.call(time.Now().Add(time.Second), "CLIENT", "UNPAUSE")
	}
	s.pushTopology(t, text, version, p != nil, old.ID)
}

// manualCatchUp pauses the primary's writes and waits until this replica
// has reached its offset; false when it did not in time.
func (s *Server) manualCatchUp(p *peerConn) bool {
	deadline := time.Now().Add(manualFailoverTimeout)
	pauseMS := strconv.FormatInt(manualFailoverPause.Milliseconds(), 10)
	if _, err := p.call(deadline, "CLIENT", "PAUSE", pauseMS, "WRITE"); err != nil {
		s.log.Warn("cluster: manual failover: cannot pause the primary", "err", err)
		return false
	}
	info, err := p.call(deadline, "INFO", "replication")
	if err != nil || peerInfoField(info, "role") != "master" {
		return false
	}
	target, err := strconv.ParseInt(peerInfoField(info, "master_repl_offset"), 10, 64)
	if err != nil {
		return false
	}
	for s.repl.Offset() < target {
		if time.Now().After(deadline) || !s.repl.IsReplica() {
			return false
		}
		select {
		case <-s.done: // shutting down
			return false
		case <-time.After(time.Millisecond):
		}
	}
	return true
}

// dialPeer opens an authenticated connection to another node (nil when it
// cannot be reached).
func (s *Server) dialPeer(n *cluster.Node) *peerConn {
	addr := net.JoinHostPort(n.Host, strconv.Itoa(n.Port))
	nc, err := net.DialTimeout("tcp", addr, 500*time.Millisecond)
	if err != nil {
		return nil
	}
	p := &peerConn{nc: nc, rd: resp.NewReader(nc)}
	deadline := time.Now().Add(time.Second)
	// The replication link's credentials, else the cluster's password (as
	// the hand-off and the migration link use).
	if auth := s.repl.AuthArgs(); auth != nil {
		p.call(deadline, auth...)
	} else if pass := s.cfg.requirePass(); pass != "" {
		p.call(deadline, "AUTH", pass)
	}
	return p
}

// pushTopology sends the failover's layout to every other node (the old
// primary too unless told already), in parallel, best effort: a node that
// misses it keeps redirecting to the old primary, which redirects here.
func (s *Server) pushTopology(t *cluster.Topology, text, version string, oldTold bool, oldID string) {
	me := s.cluster.view.Load().myID
	var wg sync.WaitGroup
	for _, n := range t.Nodes {
		if n.ID == me || oldTold && n.ID == oldID {
			continue
		}
		wg.Add(1)
		go func(n *cluster.Node) {
			defer wg.Done()
			p := s.dialPeer(n)
			if p == nil {
				s.log.Warn("cluster: failover: node unreachable", "node", n.ID)
				return
			}
			defer p.nc.Close()
			if _, err := p.call(time.Now().Add(3*time.Second), "CLUSTERX", "SETNODES", text, version, "FORCE"); err != nil {
				s.log.Warn("cluster: failover: node refused the topology", "node", n.ID, "err", err)
			}
		}(n)
	}
	wg.Wait()
}
