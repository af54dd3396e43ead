package replication

import (
	"fmt"
	"sort"
	"strings"
	"time"
)

// Field is one INFO line.
type Field struct {
	Key   string
	Value any
}

// ReplicaInfo describes an attached replica (INFO slaveN, ROLE).
type ReplicaInfo struct {
	IP     string
	Port   int
	State  string
	Offset int64
	Lag    int64
}

// Role is what ROLE reports.
type Role struct {
	Replica  bool
	Offset   int64
	Replicas []ReplicaInfo // primary
	Host     string        // replica: the primary
	Port     int
	State    string // connect, connecting, sync, connected
}

func (n *Node) replicaInfosLocked() []ReplicaInfo {
	now := time.Now().Unix()
	var out []ReplicaInfo
	for r := range n.replicas {
		out = append(out, ReplicaInfo{IP: r.ip, Port: r.port, State: r.state.Load().(string),
			Offset: r.ackOff.Load(), Lag: now - r.ackTime.Load()})
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].IP != out[j].IP {
			return out[i].IP < out[j].IP
		}
		return out[i].Port < out[j].Port
	})
	return out
}

// Role reports the node's role for ROLE.
func (n *Node) Role() Role {
	n.mu.Lock()
	defer n.mu.Unlock()
	r := Role{Replica: n.replica.Load(), Offset: n.offset}
	if l := n.link; r.Replica && l != nil {
		r.Host, r.Port, r.State = l.host, l.port, l.state.Load().(string)
		if n.backlog == nil {
			r.Offset = -1
		}
		return r
	}
	for _, ri := range n.replicaInfosLocked() {
		if ri.State == stateOnline {
			r.Replicas = append(r.Replicas, ri)
		}
	}
	return r
}

// Info returns the fields of INFO replication, named as Redis names them.
func (n *Node) Info() []Field {
	n.mu.Lock()
	defer n.mu.Unlock()
	var f []Field
	add := func(k string, v any) { f = append(f, Field{k, v}) }
	now := time.Now().Unix()
	if l := n.link; n.replica.Load() && l != nil {
		add("role", "slave")
		add("master_host", l.host)
		add("master_port", l.port)
		up := l.state.Load().(string) == linkConnected
		if up {
			add("master_link_status", "up")
		} else {
			add("master_link_status", "down")
		}
		last := int64(-1)
		if io := l.lastIO.Load(); io > 0 {
			last = now - io
		}
		add("master_last_io_seconds_ago", last)
		sync := 0
		if l.syncing.Load() {
			sync = 1
		}
		add("master_sync_in_progress", sync)
		add("slave_read_repl_offset", n.offset)
		add("slave_repl_offset", n.offset)
		if !up {
			if d := l.downSince.Load(); d > 0 {
				add("master_link_down_since_seconds", now-d)
			}
		}
		add("slave_priority", 100)
		add("slave_read_only", 1)
		add("replica_announced", 1)
	} else {
		add("role", "master")
	}
	infos := n.replicaInfosLocked()
	add("connected_slaves", len(infos))
	for i, r := range infos {
		add(fmt.Sprintf("slave%d", i), fmt.Sprintf("ip=%s,port=%d,state=%s,offset=%d,lag=%d", r.IP, r.Port, r.State, r.Offset, r.Lag))
	}
	if n.handingOver.Load() {
		add("master_failover_state", "waiting-for-sync")
	} else {
		add("master_failover_state", "no-failover")
	}
	add("master_replid", n.replid)
	add("master_replid2", n.replid2)
	add("master_repl_offset", n.offset)
	add("second_repl_offset", n.secondOffset)
	if n.backlog != nil {
		add("repl_backlog_active", 1)
		add("repl_backlog_size", n.backlogSize)
		add("repl_backlog_first_byte_offset", n.backlog.firstByte())
		add("repl_backlog_histlen", n.backlog.histlen)
	} else {
		add("repl_backlog_active", 0)
		add("repl_backlog_size", n.backlogSize)
		add("repl_backlog_first_byte_offset", 0)
		add("repl_backlog_histlen", 0)
	}
	return f
}

// InfoText renders Info as INFO lines.
func (n *Node) InfoText() string {
	var b strings.Builder
	for _, f := range n.Info() {
		fmt.Fprintf(&b, "%s:%v\r\n", f.Key, f.Value)
	}
	return b.String()
}

// LinkTarget returns the primary this node replicates, if any.
func (n *Node) LinkTarget() (host string, port int, ok bool) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.link == nil {
		return "", 0, false
	}
	return n.link.host, n.link.port, true
}
