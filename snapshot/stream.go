package snapshot

import (
	"fmt"

	"github.com/damselflydb/damselfly/shard/types"
	"github.com/damselflydb/damselfly/snapshot/rdb"
)

// Streams between the shard's type (types.Stream) and the RDB form
// (rdb.StreamValue). Node listpacks are Redis's bytes in both, so they pass
// through untouched: loading validates and adopts them, saving writes them.

func tid(id rdb.StreamID) types.StreamID { return types.StreamID{Ms: id.Ms, Seq: id.Seq} }
func rid(id types.StreamID) rdb.StreamID { return rdb.StreamID{Ms: id.Ms, Seq: id.Seq} }

// streamFromRDB builds a stream from a loaded value, checking everything
// Redis's loader checks (and the structure of every node).
func streamFromRDB(v *rdb.StreamValue) (*types.Stream, error) {
	s, w := types.NewStream()
	for i, n := range v.Nodes {
		if err := s.LoadNode(w, tid(n.Master), n.LP); err != nil {
			return nil, fmt.Errorf("stream node %d (master ID %d-%d): %v", i, n.Master.Ms, n.Master.Seq, err)
		}
	}
	err := s.SetMeta(w, types.StreamMeta{
		Length: v.Length, LastID: tid(v.LastID), FirstID: tid(v.FirstID),
		MaxDeletedID: tid(v.MaxDeletedID), EntriesAdded: v.EntriesAdded, HasV2: v.HasV2,
	})
	if err != nil {
		return nil, err
	}
	for _, g := range v.Groups {
		er := g.EntriesRead
		if !g.HasEntriesRead {
			er = s.EstimateDistance(tid(g.LastID))
		}
		sg := s.CreateGroup(w, g.Name, tid(g.LastID), er)
		if sg == nil {
			return nil, fmt.Errorf("duplicated consumer group name %q", g.Name)
		}
		for _, na := range g.PEL {
			if !sg.AddPending(w, tid(na.ID), na.DeliveryTime, na.DeliveryCount) {
				return nil, fmt.Errorf("group %q: duplicated PEL entry %d-%d", g.Name, na.ID.Ms, na.ID.Seq)
			}
		}
		for _, c := range g.Consumers {
			sc, ok := sg.CreateConsumer(w, c.Name, c.SeenTime, c.ActiveTime)
			if !ok {
				return nil, fmt.Errorf("group %q: duplicate consumer %q", g.Name, c.Name)
			}
			for _, id := range c.PEL {
				if !sg.AssignPending(w, sc, tid(id)) {
					return nil, fmt.Errorf("group %q consumer %q: PEL entry %d-%d not in the group's PEL (or owned twice)", g.Name, c.Name, id.Ms, id.Seq)
				}
			}
		}
	}
	if err := s.CheckGroups(); err != nil {
		return nil, err
	}
	return s, nil
}

// streamToRDB describes s for the RDB writer; the node bytes are shared
// with s, so write it before s changes (under the shard lock).
func streamToRDB(s *types.Stream) *rdb.StreamValue {
	v := &rdb.StreamValue{
		Length: uint64(s.Len()), LastID: rid(s.LastID()), FirstID: rid(s.FirstID()),
		MaxDeletedID: rid(s.MaxDeletedID()), EntriesAdded: s.EntriesAdded(), HasV2: true,
	}
	v.Nodes = make([]rdb.StreamNode, 0, s.NodeCount())
	s.Nodes(func(m types.StreamID, lp []byte) bool {
		v.Nodes = append(v.Nodes, rdb.StreamNode{Master: rid(m), LP: lp})
		return true
	})
	s.Groups(func(g *types.StreamGroup) bool {
		rg := rdb.StreamGroup{Name: []byte(g.Name()), LastID: rid(g.LastID()), EntriesRead: g.EntriesRead(), HasEntriesRead: true}
		if n := g.PendingLen(); n > 0 {
			rg.PEL = make([]rdb.StreamNACK, 0, n)
		}
		g.PendingAscend(types.StreamID{}, func(p *types.PendingEntry, _ *types.StreamConsumer) bool {
			rg.PEL = append(rg.PEL, rdb.StreamNACK{ID: rid(p.ID()), DeliveryTime: p.DeliveryTime(), DeliveryCount: p.DeliveryCount()})
			return true
		})
		g.Consumers(func(c *types.StreamConsumer) bool {
			rc := rdb.StreamConsumer{Name: []byte(c.Name()), SeenTime: c.SeenTime(), ActiveTime: c.ActiveTime()}
			c.Pending(types.StreamID{}, func(id types.StreamID) bool {
				rc.PEL = append(rc.PEL, rid(id))
				return true
			})
			rg.Consumers = append(rg.Consumers, rc)
			return true
		})
		v.Groups = append(v.Groups, rg)
		return true
	})
	return v
}
