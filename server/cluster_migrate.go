package server

import "sync"

// migration is the state of this node's outgoing slot migration, as
// kvrocks reports it in CLUSTER INFO (migrating_slot, destination_node,
// migrating_state: start, success or fail).
type migration struct {
	mu    sync.Mutex
	slot  int
	dst   string
	state string // "" before the first migration
}

func (m *migration) info(field func(string, any)) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.state == "" {
		return
	}
	field("migrating_slot", m.slot)
	field("destination_node", m.dst)
	field("migrating_state", m.state)
}

func (c *Client) clusterImport(args [][]byte) {
	c.err("ERR slot migration is not supported yet")
}

func (c *Client) clusterxMigrate(args [][]byte) {
	c.err("ERR slot migration is not supported yet")
}
