package cluster

import (
	"errors"
	"strconv"
	"strings"
)

// NodeIDLen is the length of a node ID (40 hex characters, as Redis's).
const NodeIDLen = 40

// Errors with the texts kvrocks answers for a bad topology, which its
// controller expects.
var (
	ErrInvalidNodeID  = errors.New("Invalid cluster node id")
	ErrSlotRange      = errors.New("Slot is out of range")
	ErrVersion        = errors.New("Invalid cluster version")
	ErrOverlap        = errors.New("Slot distribution is overlapped")
	ErrNotPrimary     = errors.New("The node isn't a master")
	ErrNodesInfo      = errors.New("Invalid cluster nodes info")
	ErrInvalidPort    = errors.New("Invalid cluster node port")
	ErrInvalidRole    = errors.New("Invalid cluster node role")
	ErrNoSuchNode     = errors.New("No this node in the cluster")
	ErrNotInitialized = errors.New("The cluster is not initialized")
)

// Node is one member of the cluster.
type Node struct {
	ID       string
	Host     string
	Port     int
	Primary  bool
	MasterID string   // the primary's ID for a replica, "" for a primary
	Replicas []string // IDs of its replicas, in the order listed
}

// Range is an inclusive range of slots.
type Range struct{ Start, End int }

// String is "start-end", or "slot" for a single slot.
func (r Range) String() string {
	if r.Start == r.End {
		return strconv.Itoa(r.Start)
	}
	return strconv.Itoa(r.Start) + "-" + strconv.Itoa(r.End)
}

// Topology is one version of the cluster's layout. It is never modified
// after it is built (see the package comment).
type Topology struct {
	Version int64
	Nodes   []*Node // in the order given
	byID    map[string]*Node
	owner   []int16 // per slot: index in Nodes, -1 unassigned
	size    int     // primaries owning at least one slot
}

// ParseRange parses "slot" or "start-end" (start < end, as kvrocks).
func ParseRange(s string) (Range, error) {
	a, b, isRange := strings.Cut(s, "-")
	start, err := parseSlot(a)
	if err != nil {
		return Range{}, err
	}
	if !isRange {
		return Range{start, start}, nil
	}
	end, err := parseSlot(b)
	if err != nil || start >= end {
		return Range{}, ErrSlotRange
	}
	return Range{start, end}, nil
}

func parseSlot(s string) (int, error) {
	n, err := strconv.Atoi(s)
	if err != nil || n < 0 || n >= Slots {
		return 0, ErrSlotRange
	}
	return n, nil
}

// Parse reads kvrocks-controller's topology text: one node per line,
// "id host port master|slave master-id|- [slot-range ...]", slots only on
// primaries.
func Parse(text string, version int64) (*Topology, error) {
	t := &Topology{Version: version, byID: map[string]*Node{}, owner: make([]int16, Slots)}
	for i := range t.owner {
		t.owner[i] = -1
	}
	lines := strings.Split(text, "\n")
	for _, line := range lines {
		line = strings.TrimSuffix(line, "\r")
		if strings.TrimSpace(line) == "" {
			continue
		}
		f := strings.Fields(line)
		if len(f) < 5 {
			return nil, ErrNodesInfo
		}
		if len(f[0]) != NodeIDLen {
			return nil, ErrInvalidNodeID
		}
		port, err := strconv.ParseUint(f[2], 10, 16)
		if err != nil {
			return nil, ErrInvalidPort
		}
		n := &Node{ID: f[0], Host: f[1], Port: int(port)}
		switch strings.ToLower(f[3]) {
		case "master":
			n.Primary = true
			if f[4] != "-" {
				return nil, ErrInvalidNodeID
			}
		case "slave", "replica":
			if len(f[4]) != NodeIDLen {
				return nil, ErrInvalidNodeID
			}
			if len(f) != 5 {
				return nil, ErrNodesInfo
			}
			n.MasterID = f[4]
		default:
			return nil, ErrInvalidRole
		}
		if _, dup := t.byID[n.ID]; dup {
			return nil, ErrNodesInfo
		}
		idx := int16(len(t.Nodes))
		for _, rs := range f[5:] {
			r, err := ParseRange(rs)
			if err != nil {
				return nil, err
			}
			for s := r.Start; s <= r.End; s++ {
				if t.owner[s] >= 0 {
					return nil, ErrOverlap
				}
				t.owner[s] = idx
			}
		}
		t.Nodes = append(t.Nodes, n)
		t.byID[n.ID] = n
	}
	if len(t.Nodes) == 0 {
		return nil, ErrNodesInfo
	}
	t.settle()
	return t, nil
}

// Single is a one-node cluster: the node owns every slot (emulated mode).
func Single(id, host string, port int) *Topology {
	t := &Topology{Version: 0, byID: map[string]*Node{}, owner: make([]int16, Slots)}
	n := &Node{ID: id, Host: host, Port: port, Primary: true}
	t.Nodes = []*Node{n}
	t.byID[id] = n
	t.settle()
	return t
}

// settle links replicas to their primaries and counts the primaries that
// own slots.
func (t *Topology) settle() {
	owns := make([]bool, len(t.Nodes))
	for _, o := range t.owner {
		if o >= 0 {
			owns[o] = true
		}
	}
	t.size = 0
	for i, n := range t.Nodes {
		if owns[i] {
			t.size++
		}
		if !n.Primary {
			if p := t.byID[n.MasterID]; p != nil {
				p.Replicas = append(p.Replicas, n.ID)
			}
		}
	}
}

// Owner is the primary serving slot, nil when it is unassigned.
func (t *Topology) Owner(slot int) *Node {
	if o := t.owner[slot]; o >= 0 {
		return t.Nodes[o]
	}
	return nil
}

// Node returns the node with the given ID (nil if unknown).
func (t *Topology) Node(id string) *Node { return t.byID[id] }

// Size is the number of primaries serving at least one slot.
func (t *Topology) Size() int { return t.size }

// Assigned counts the slots that have an owner.
func (t *Topology) Assigned() int {
	n := 0
	for _, o := range t.owner {
		if o >= 0 {
			n++
		}
	}
	return n
}

// Ranges returns the slot ranges the node with ID id serves, ascending.
func (t *Topology) Ranges(id string) []Range {
	var out []Range
	for s := 0; s < Slots; s++ {
		o := t.owner[s]
		if o < 0 || t.Nodes[o].ID != id {
			continue
		}
		if len(out) > 0 && out[len(out)-1].End == s-1 {
			out[len(out)-1].End = s
		} else {
			out = append(out, Range{s, s})
		}
	}
	return out
}

// SlotRun is a maximal run of consecutive slots with the same owner.
type SlotRun struct {
	Range
	Owner *Node
}

// Runs lists the assigned slots as runs of one owner, ascending (CLUSTER
// SLOTS).
func (t *Topology) Runs() []SlotRun {
	var out []SlotRun
	for s := 0; s < Slots; s++ {
		o := t.owner[s]
		if o < 0 {
			continue
		}
		if len(out) > 0 && out[len(out)-1].End == s-1 && out[len(out)-1].Owner == t.Nodes[o] {
			out[len(out)-1].End = s
		} else {
			out = append(out, SlotRun{Range{s, s}, t.Nodes[o]})
		}
	}
	return out
}

// WithSlots returns a copy of t in which the given ranges belong to the
// primary id, at version (kvrocks's CLUSTERX SETSLOT: version must be the
// current one plus one).
func (t *Topology) WithSlots(ranges []Range, id string, version int64) (*Topology, error) {
	if version <= 0 || version != t.Version+1 {
		return nil, ErrVersion
	}
	if len(id) != NodeIDLen {
		return nil, ErrInvalidNodeID
	}
	n := t.byID[id]
	if n == nil {
		return nil, ErrNoSuchNode
	}
	if !n.Primary {
		return nil, ErrNotPrimary
	}
	c := &Topology{Version: version, byID: map[string]*Node{}, owner: append([]int16(nil), t.owner...)}
	idx := int16(-1)
	for i, m := range t.Nodes {
		cp := *m
		cp.Replicas = nil
		c.Nodes = append(c.Nodes, &cp)
		c.byID[cp.ID] = &cp
		if m.ID == id {
			idx = int16(i)
		}
	}
	for _, r := range ranges {
		for s := r.Start; s <= r.End; s++ {
			c.owner[s] = idx
		}
	}
	c.settle()
	return c, nil
}

// Text renders the topology in the format Parse reads.
func (t *Topology) Text() string {
	var b strings.Builder
	for _, n := range t.Nodes {
		b.WriteString(n.ID + " " + n.Host + " " + strconv.Itoa(n.Port))
		if n.Primary {
			b.WriteString(" master -")
			for _, r := range t.Ranges(n.ID) {
				b.WriteString(" " + r.String())
			}
		} else {
			b.WriteString(" slave " + n.MasterID)
		}
		b.WriteString("\n")
	}
	return b.String()
}
