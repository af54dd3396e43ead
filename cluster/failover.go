package cluster

import "strconv"

// WithFailover returns the topology, at the same version, in which the
// replica id has taken its primary's place: it owns the primary's slots,
// and the old primary and its other replicas replicate it (CLUSTER
// FAILOVER). ErrNoSuchNode when id is not listed, ErrInvalidRole when it
// is not a replica of a listed primary.
func (t *Topology) WithFailover(id string) (*Topology, error) {
	r := t.byID[id]
	if r == nil {
		return nil, ErrNoSuchNode
	}
	if r.Primary || t.byID[r.MasterID] == nil {
		return nil, ErrInvalidRole
	}
	old := r.MasterID
	var b []byte
	for _, n := range t.Nodes {
		b = append(b, n.ID+" "+n.Host+" "+strconv.Itoa(n.Port)...)
		switch {
		case n.ID == id:
			b = append(b, " master -"...)
			for _, rg := range t.Ranges(old) {
				b = append(b, " "+rg.String()...)
			}
		case n.ID == old || !n.Primary && n.MasterID == old:
			b = append(b, " slave "+id...)
		case n.Primary:
			b = append(b, " master -"...)
			for _, rg := range t.Ranges(n.ID) {
				b = append(b, " "+rg.String()...)
			}
		default:
			b = append(b, " slave "+n.MasterID...)
		}
		b = append(b, '\n')
	}
	return Parse(string(b), t.Version)
}
