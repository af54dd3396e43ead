package server

import "github.com/damselflydb/damselfly/cluster"

// memcacheRoute is the memcached front end's cluster check (see package
// memcache's cluster.go for what a client sees): nil outside cluster mode,
// else the RESP routing decision for the key's slot, with no READONLY or
// ASKING (memcached has neither).
func (s *Server) memcacheRoute() func(key []byte, write bool) string {
	cs := s.cluster
	if cs == nil {
		return nil
	}
	return func(key []byte, write bool) string {
		return cs.view.Load().route(cluster.KeySlot(key), write, false, false)
	}
}
