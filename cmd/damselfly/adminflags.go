package main

import "github.com/damselflydb/damselfly/server"

// adminFlags are the HTTP admin port's flags (server/admin.go).
type adminFlags struct {
	AdminPort  int    `name:"admin-port" help:"HTTP port for /metrics (Prometheus), /healthz and, with --admin-pprof, /debug/pprof; 0 = off." default:"0" env:"DAMSELFLY_ADMIN_PORT"`
	AdminBind  string `name:"admin-bind" help:"Address of the admin port." default:"127.0.0.1" env:"DAMSELFLY_ADMIN_BIND"`
	AdminPprof bool   `name:"admin-pprof" help:"Serve Go's pprof profiles under /debug/pprof on the admin port." env:"DAMSELFLY_ADMIN_PPROF"`
}

func (a adminFlags) config() server.AdminConfig {
	return server.AdminConfig{Port: a.AdminPort, Bind: a.AdminBind, Pprof: a.AdminPprof}
}
