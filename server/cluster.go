package server

// Redis Cluster's client protocol under an outside control plane.
//
// Design and invariants:
//   - --cluster-mode no (s.cluster == nil: the request path pays one nil
//     check), yes (the topology comes from a control plane through CLUSTERX
//     SETNODES/SETSLOT, kvrocks-controller's contract) or emulated (a
//     one-node cluster owning every slot, for clients that only speak
//     cluster).
//   - What a node knows of the cluster is one immutable clusterView behind
//     an atomic pointer: the request path loads it once per command and
//     never locks; a change (CLUSTERX, a migration step) builds a new view
//     under clusterState.mu and swaps it in.
//   - Routing follows Redis's getNodeByQuery: the keys come from the
//     command table's key specs (for EXEC, from every queued command); keys
//     of different slots are -CROSSSLOT; an unassigned slot is
//     -CLUSTERDOWN Hash slot not served; a slot served elsewhere is -MOVED,
//     except reads on a replica of its owner after READONLY, and a slot
//     being imported here after ASKING (or from the migration link).
//   - The internal clients (the primary's stream, AOF replay) are never
//     redirected: they must apply whatever they are given.

import (
	"net"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/damselflydb/damselfly/cluster"
)

const (
	clusterModeNo = iota
	clusterModeYes
	clusterModeEmulated
)

// ParseClusterMode checks --cluster-mode's value.
func ParseClusterMode(s string) (int, bool) {
	switch strings.ToLower(s) {
	case "", "no":
		return clusterModeNo, true
	case "yes":
		return clusterModeYes, true
	case "emulated":
		return clusterModeEmulated, true
	}
	return 0, false
}

// clusterState is the server's cluster role.
type clusterState struct {
	mode int
	mu   sync.Mutex // serializes changes of view
	view atomic.Pointer[clusterView]
	mig  migration // the outgoing slot migration (cluster_migrate.go)
}

// clusterView is one immutable picture of the cluster as this node sees it.
type clusterView struct {
	topo *cluster.Topology // nil: no topology pushed yet
	myID string
	me   *cluster.Node // nil: not (yet) in the topology
	// migrated are slots this node handed over (answered with MOVED to the
	// address until the control plane's topology says so); imported are
	// slots received here, served before the topology names this node.
	migrated map[int]string
	imported map[int]bool
	// importing are the slots a migration is streaming into this node (-1:
	// none); forbidden the slots whose writes are paused for the hand-off
	// (-1: none).
	importing cluster.Range
	forbidden cluster.Range // Start -1: none
}

var noSlots = cluster.Range{Start: -1, End: -1}

// clusterSession is a connection's cluster flags.
type clusterSession struct {
	readonly  bool // READONLY: reads served by a replica of the slot's owner
	asking    bool // ASKING: the next command may use an importing slot
	importing bool // the migration link of a source node
	keys      [][]byte
}

func (s *Server) initCluster(cfg Config) {
	mode, _ := ParseClusterMode(cfg.ClusterMode)
	if mode == clusterModeNo {
		return
	}
	cs := &clusterState{mode: mode}
	v := &clusterView{myID: randomHex(cluster.NodeIDLen), importing: noSlots, forbidden: noSlots}
	if mode == clusterModeEmulated {
		host := cfg.Bind
		if ip := net.ParseIP(host); host == "" || ip == nil || ip.IsUnspecified() {
			host = "127.0.0.1"
		}
		v.topo = cluster.Single(v.myID, host, cfg.Port)
		v.me = v.topo.Nodes[0]
	}
	cs.view.Store(v)
	cs.mig.slot = -1
	s.cluster = cs
	s.store.EnableSlotIndex()
}

// emulatedPort fixes the emulated node's port once the listener has one
// (Port 0 picks it at Start).
func (s *Server) clusterStarted() {
	cs := s.cluster
	if cs == nil || cs.mode != clusterModeEmulated {
		return
	}
	cs.mu.Lock()
	defer cs.mu.Unlock()
	v := *cs.view.Load()
	me := v.topo.Nodes[0]
	v.topo = cluster.Single(v.myID, me.Host, s.port)
	v.me = v.topo.Nodes[0]
	cs.view.Store(&v)
}

// update builds a new view from the current one and publishes it; the
// caller holds cs.mu.
func (cs *clusterState) update(fn func(v *clusterView)) {
	v := *cs.view.Load()
	fn(&v)
	cs.view.Store(&v)
}

// clusterCheck answers the command with a redirection or a cluster error
// when this node must not run it; it reports whether it did. It is the
// dispatcher's one cluster hook (execute).
func (c *Client) clusterCheck(cmd *command, args [][]byte) bool {
	cs := c.srv.cluster
	if cs == nil || c.fromPrimary || c.aofLoading {
		return false
	}
	// ASKING holds for the next command only (the whole transaction
	// inside MULTI), as Redis's resetClient.
	asking := c.cl.asking
	if cmd.name != "asking" && c.sess.tx == nil {
		c.cl.asking = false
	}
	if len(cmd.specs) == 0 && cmd.name != "exec" {
		return c.clusterRefusesDB(cmd, args)
	}
	write := cmd.write
	keys := c.cl.keys[:0]
	if cmd.name == "exec" {
		if c.sess.tx == nil {
			return false
		}
		for _, q := range c.sess.tx.queue {
			keys = q.cmd.appendKeys(keys, q.args)
			write = write || q.cmd.write
		}
	} else {
		keys = cmd.appendKeys(keys, args)
	}
	slot := -1
	for _, k := range keys {
		ks := cluster.KeySlot(k)
		if slot < 0 {
			slot = ks
		} else if ks != slot {
			clear(keys)
			c.cl.keys = keys[:0]
			c.clusterRefuse(cmd, "CROSSSLOT Keys in request don't hash to the same slot")
			return true
		}
	}
	clear(keys)
	c.cl.keys = keys[:0]
	if slot < 0 {
		return c.clusterRefusesAfterRouting(cmd)
	}
	v := cs.view.Load()
	if e := v.route(slot, write, c.cl.readonly, asking || c.cl.importing); e != "" {
		c.clusterRefuse(cmd, e)
		return true
	}
	return c.clusterRefusesAfterRouting(cmd)
}

// scriptKeysLocal reports whether a command called from a script may run
// here: its keys share one slot that this node serves (Redis's
// scriptVerifyClusterState; keys of different slots are fine across calls
// as long as each is local).
func (c *Client) scriptKeysLocal(cmd *command, args [][]byte) bool {
	if c.fromPrimary || c.aofLoading {
		return true
	}
	slot := -1
	for _, k := range cmd.keys(args) {
		ks := cluster.KeySlot(k)
		if slot >= 0 && ks != slot {
			return false
		}
		slot = ks
	}
	if slot < 0 {
		return true
	}
	return c.srv.cluster.view.Load().route(slot, cmd.write, c.cl.readonly, c.cl.importing) == ""
}

// clusterRefuse answers e; inside MULTI the transaction fails (EXEC's own
// refusal discards it, as Redis does).
func (c *Client) clusterRefuse(cmd *command, e string) {
	if cmd.name == "exec" {
		c.setTx(nil)
		c.unwatchAll()
	} else {
		c.txFlag()
	}
	c.err(e)
}

// route decides whether this node serves slot: "" to run the command, or
// the error to answer.
func (v *clusterView) route(slot int, write, readonly, asking bool) string {
	if v.topo == nil {
		return "CLUSTERDOWN Hash slot not served"
	}
	owner := v.topo.Owner(slot)
	if v.me != nil && owner == v.me {
		if addr, ok := v.migrated[slot]; ok {
			return "MOVED " + strconv.Itoa(slot) + " " + addr
		}
		if write && slot >= v.forbidden.Start && slot <= v.forbidden.End {
			return "TRYAGAIN Can't write to slot being migrated which is in write forbidden phase"
		}
		return ""
	}
	if v.imported[slot] || (asking && slot >= v.importing.Start && slot <= v.importing.End) {
		return ""
	}
	if owner == nil {
		return "CLUSTERDOWN Hash slot not served"
	}
	if v.me != nil && readonly && !write && (!v.me.Primary && v.me.MasterID == owner.ID || owner == v.me) {
		return "" // a replica serving reads after READONLY
	}
	return "MOVED " + strconv.Itoa(slot) + " " + net.JoinHostPort(owner.Host, strconv.Itoa(owner.Port))
}

// clusterRefusesDB refuses what selects another database in cluster mode
// (SELECT n, MOVE, SWAPDB), with Redis's texts.
func (c *Client) clusterRefusesDB(cmd *command, args [][]byte) bool {
	switch cmd.name {
	case "select":
		if n, ok := parseInt(args[1]); ok && n != 0 {
			c.txFlag()
			c.err("ERR SELECT is not allowed in cluster mode")
			return true
		}
	case "swapdb":
		c.txFlag()
		c.err("ERR SWAPDB is not allowed in cluster mode")
		return true
	}
	return false
}

// clusterRefusesAfterRouting refuses what Redis refuses in cluster mode
// once the keys' slot is served here: MOVE.
func (c *Client) clusterRefusesAfterRouting(cmd *command) bool {
	if cmd.name == "move" {
		c.txFlag()
		c.err("ERR MOVE is not allowed in cluster mode")
		return true
	}
	return false
}

// redisMode is INFO's redis_mode.
func (s *Server) redisMode() string {
	if s.cluster != nil {
		return "cluster"
	}
	return "standalone"
}

// infoCluster is INFO's Cluster section.
func (s *Server) infoCluster(field func(string, any)) {
	if s.cluster == nil {
		field("cluster_enabled", 0)
		return
	}
	field("cluster_enabled", 1)
	field("sequence", s.repl.Offset()) // kvrocks-controller ranks replicas by it
	s.cluster.mig.info(field)
}
