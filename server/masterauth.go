package server

// masterauth and masteruser as CONFIG parameters: the replication
// handshake reads them at its next connect (replication.Node.SetMasterAuth),
// as Redis does; a link already established keeps running.
func masterAuthParams(m map[string]configParam) {
	param := func(name string) configParam {
		return configParam{
			get: func(s *Server) string {
				s.cfg.mu.RLock()
				defer s.cfg.mu.RUnlock()
				return s.cfg.params[name]
			},
			set: func(s *Server, v string) error {
				s.cfg.mu.Lock()
				s.cfg.params[name] = v
				s.repl.SetMasterAuth(s.cfg.params["masteruser"], s.cfg.params["masterauth"])
				s.cfg.mu.Unlock()
				return nil
			},
		}
	}
	m["masterauth"] = param("masterauth")
	m["masteruser"] = param("masteruser")
}
