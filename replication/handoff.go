package replication

import (
	"context"
	"time"
)

// ReplicaAttached reports whether a replica that announced port (and
// connected from ip, when ip is not "") is online here.
func (n *Node) ReplicaAttached(ip string, port int) bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.findReplicaLocked(ip, port) != nil
}

func (n *Node) findReplicaLocked(ip string, port int) *replicaConn {
	var byPort *replicaConn
	for r := range n.replicas {
		if !r.online() || r.port != port {
			continue
		}
		if r.ip == ip {
			return r
		}
		byPort = r // the topology may name the host differently
	}
	return byPort
}

// WaitReplica blocks until the online replica at ip:port acknowledged
// offset off (a planned hand-off to it: the caller stopped writes first),
// the timeout passes or ctx ends; it reports whether the replica caught up.
func (n *Node) WaitReplica(ctx context.Context, ip string, port int, off int64, timeout time.Duration) bool {
	t := time.NewTimer(timeout)
	defer t.Stop()
	n.handingOver.Store(true)
	defer n.handingOver.Store(false)
	asked := false
	for {
		n.mu.Lock()
		r := n.findReplicaLocked(ip, port)
		ch := n.ackCh
		n.mu.Unlock()
		if r == nil {
			return false
		}
		if r.ackOff.Load() >= off {
			return true
		}
		if !asked {
			asked = true
			n.Append(-1, [][]byte{[]byte("REPLCONF"), []byte("GETACK"), []byte("*")})
		}
		select {
		case <-ch:
		case <-t.C:
			return false
		case <-ctx.Done():
			return false
		case <-n.closed:
			return false
		}
	}
}

// AuthArgs is the AUTH command the replication handshake sends to a
// primary (masteruser, masterauth), nil when there is none.
func (n *Node) AuthArgs() []string { return n.authArgs() }
