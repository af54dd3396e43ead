package server

import (
	"errors"
	"net"
	"strconv"
	"sync/atomic"
)

// Connection admission: maxclients and the memcached port's access rule.
//
// maxclients (default 10000, as in Redis) bounds the connections open at
// once over every port: RESP over TCP and the Unix socket, and the memcached
// port. A connection past it gets Redis's "-ERR max number of clients
// reached" (memcached's "ERROR Too many open connections" on the memcached
// port) and is closed at once, so a flood of connections cannot exhaust file
// descriptors and starve saves or the clients already served. Admission is
// checked per accept without a global lock, so concurrent accepts on
// different ports may pass the limit by at most one each.

const defaultMaxClients = 10000

const maxClientsReply = "-ERR max number of clients reached\r\n"

type connLimits struct {
	max atomic.Int64
}

func (l *connLimits) init(n int) {
	if n <= 0 {
		n = defaultMaxClients
	}
	l.max.Store(int64(n))
}

// openConns counts the connections of every front end.
func (s *Server) openConns() int64 {
	s.clientsMu.Lock()
	n := int64(len(s.clients))
	s.clientsMu.Unlock()
	if s.mc != nil {
		n += s.mc.Conns()
	}
	return n
}

// admitConn reports whether one more connection fits under maxclients,
// counting a refusal in rejected_connections.
func (s *Server) admitConn() bool {
	if s.openConns() >= s.limitsConn.max.Load() {
		s.stats.rejected.Add(1)
		return false
	}
	return true
}

// admitMemcached decides a new memcached connection: "" admits it, anything
// else is the line written before closing it. The memcached text protocol
// has no login, so the port cannot honour requirepass: when a password is
// set, or protected mode applies (on, with no password), only loopback
// clients may use it.
func (s *Server) admitMemcached(remote net.Addr) string {
	if s.memcachedLocalOnly() {
		if a, ok := remote.(*net.TCPAddr); ok && !a.IP.IsLoopback() {
			s.stats.rejected.Add(1)
			return "SERVER_ERROR the memcached protocol has no authentication: with requirepass set or in protected mode, " +
				"Damselfly accepts memcached connections only from the loopback interface\r\n"
		}
	}
	if !s.admitConn() {
		return "ERROR Too many open connections\r\n"
	}
	return ""
}

func (s *Server) memcachedLocalOnly() bool {
	return s.cfg.requirePass() != "" || s.cfg.protectedMode.Load()
}

func maxClientsParam(m map[string]configParam) {
	m["maxclients"] = configParam{
		get: func(s *Server) string { return strconv.FormatInt(s.limitsConn.max.Load(), 10) },
		set: func(s *Server, v string) error {
			n, ok := parseInt([]byte(v))
			if !ok {
				return errors.New("argument couldn't be parsed into an integer")
			}
			if n < 1 || n > 1<<32-1 {
				return errors.New("argument must be between 1 and 4294967295 inclusive")
			}
			s.limitsConn.max.Store(n)
			return nil
		},
	}
}

// reservedFDs are the descriptors kept for listeners, dumps, the AOF and
// replication links besides the clients (Redis keeps 32).
const reservedFDs = 32

// fitMaxClientsToFDs makes maxclients fit the open-files limit as Redis
// does at start: raise the soft limit to maxclients+32 if the hard limit
// allows, else lower maxclients to what fits and say so, so that the
// refusal a client sees is maxclients' clear error, not a silent hang on
// "too many open files".
func (s *Server) fitMaxClientsToFDs() {
	want := uint64(s.limitsConn.max.Load()) + reservedFDs
	cur, ok := raiseOpenFiles(want)
	if !ok || cur >= want {
		return
	}
	fit := int64(cur) - reservedFDs
	if fit < 1 {
		fit = 1
	}
	s.log.Warn("maxclients reduced to fit the open-files limit (raise it with ulimit -n)",
		"maxclients", s.limitsConn.max.Load(), "reduced_to", fit, "open_files_limit", cur)
	s.limitsConn.max.Store(fit)
}
