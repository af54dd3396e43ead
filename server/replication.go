package server

import (
	"context"
	"errors"
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/damselflydb/damselfly/replication"
)

// Replication wiring: the server owns a replication.Node (journal, backlog,
// attached replicas, link to a primary) and provides it with the snapshot
// engine, the loader and the master client that applies the primary's
// stream through the command table.

func (s *Server) initReplication(cfg Config) {
	s.master = &Client{srv: s, id: s.nextClientID.Add(1), p: newParser(), proto: 2, authed: true,
		fromPrimary: true, created: time.Now(), addr: "primary", laddr: "primary"}
	s.master.view.multi.Store(-1)
	s.master.view.fd.Store(-1)
	s.repl = replication.New(replication.Config{
		Store:       s.store,
		Log:         s.log,
		BacklogSize: int(cfg.ReplBacklogSize),
		Snapshot:    s.replSnapshot,
		// repl_sync.go: the parallel native format for Damselfly replicas.
		SnapshotSync: s.replSnapshotSync,
		Load:         s.replLoad,
		Exec: func(args [][]byte) {
			s.master.execute(args)
			s.master.out = s.master.out[:0]
		},
		ResetExec:  func() { s.master.db = 0 },
		ListenPort: s.replListenPort,
		Dial:       s.replDialCounted, // netstats.go
		MasterAuth: cfg.MasterAuth,
		MasterUser: cfg.MasterUser,
		OutputLimits: func() *replication.OutputLimits {
			l := s.outLimits.Load().replica.forReplication()
			return &l
		}(),
	})
	for _, sh := range s.store.Shards() {
		sh.OnExpire = s.onExpire
		sh.OnFieldExpire = s.onFieldExpire // cmd_hash_ttl.go
	}
}

// startReplicaOf handles --replicaof host:port.
func (s *Server) startReplicaOf(hp string) error {
	host, portStr, err := net.SplitHostPort(hp)
	if err != nil {
		return errors.New("--replicaof: want host:port: " + err.Error())
	}
	port, err := strconv.Atoi(portStr)
	if err != nil || port <= 0 || port > 65535 {
		return errors.New("--replicaof: invalid port " + portStr)
	}
	if s.isSelf(host, port) {
		return errors.New("--replicaof: this server cannot replicate itself")
	}
	s.store.SetReplica(true)
	s.repl.ReplicaOf(host, port)
	return nil
}

// isSelf reports whether host:port is this server.
func (s *Server) isSelf(host string, port int) bool {
	if port != s.port && int64(port) != s.tls.port.Load() {
		return false
	}
	ips, err := net.LookupIP(host)
	if err != nil {
		return false
	}
	addrs, _ := net.InterfaceAddrs()
	for _, ip := range ips {
		if ip.IsLoopback() || ip.IsUnspecified() {
			return true
		}
		for _, a := range addrs {
			if n, ok := a.(*net.IPNet); ok && n.IP.Equal(ip) {
				return true
			}
		}
	}
	return false
}

func registerReplication(reg registrar) {
	reg("replconf", -1, "admin|noscript|loading|stale|allow_busy", 0, 0, 0, "server", cmdReplconf)
	reg("psync", -3, "admin|noscript|no_async_loading|no_multi|x-detach", 0, 0, 0, "server", cmdPsync)
	reg("sync", 1, "admin|noscript|no_async_loading|no_multi|x-detach", 0, 0, 0, "server", cmdSync)
	reg("wait", 3, "noscript|x-detach", 0, 0, 0, "generic", cmdWait)
	reg("replicaof", 3, "admin|noscript|stale|no_async_loading|x-own-locks", 0, 0, 0, "server", cmdReplicaOf)
	reg("slaveof", 3, "admin|noscript|stale|no_async_loading|x-own-locks", 0, 0, 0, "server", cmdReplicaOf)
	reg("role", 1, "noscript|loading|stale|fast", 0, 0, 0, "server", cmdRole)
}

func cmdReplconf(c *Client, args [][]byte) {
	if len(args)%2 == 0 {
		c.errSyntax()
		return
	}
	for i := 1; i < len(args); i += 2 {
		opt, val := lower(args[i]), args[i+1]
		switch opt {
		case "listening-port":
			p, ok := parseInt(val)
			if !ok || p < 0 || p > 65535 {
				c.errNotInteger()
				return
			}
			c.replPort = int(p)
		case "ip-address":
			c.replIP = string(val)
		case "capa":
			switch {
			case eq(val, "eof"):
				c.replCapaEOF = true
			case eq(val, "psync2"):
				c.replPsync2 = true
			case eq(val, replication.CapaNative):
				c.replCapaNative = true
			case eq(val, replication.CapaParallel):
				c.replCapaParallel = true
			}
		case "ack", "getack":
			// ACK/GETACK on a connection that is not a replica link:
			// nothing to do, and Redis sends no reply.
			return
		case "rdb-only", "rdb-filter-only":
		default:
			c.err("ERR Unrecognized REPLCONF option: " + sanitize(args[i], 128))
			return
		}
	}
	c.ok()
}

func (c *Client) peer() replication.Peer {
	ip := c.replIP
	if ip == "" {
		if h, _, err := net.SplitHostPort(c.addr); err == nil {
			ip = h
		}
	}
	return replication.Peer{IP: ip, ListenPort: c.replPort, CapaEOF: c.replCapaEOF, CapaPsync2: c.replPsync2, CapaNative: c.replCapaNative, CapaParallel: c.replCapaParallel}
}

func cmdPsync(c *Client, args [][]byte) { c.startSync(string(args[1]), args[2], false) }
func cmdSync(c *Client, args [][]byte)  { c.startSync("?", []byte("-1"), true) }

// startSync hands the connection to the replication package once the
// replies before PSYNC are written; it serves the replica until it leaves.
func (c *Client) startSync(replid string, offArg []byte, sync bool) {
	if c.srv.repl.IsReplica() {
		if r := c.srv.repl.Role(); r.State != "connected" {
			c.err("NOMASTERLINK Can't SYNC while not connected with my master")
			return
		}
	}
	off, ok := parseInt(offArg)
	if !ok {
		c.errNotInteger()
		return
	}
	p := c.peer()
	s := c.srv
	c.handoff = func(nc net.Conn, pending []byte) {
		p.Conn, p.Pending = s.replicaConn(nc), pending // netstats.go: repl output
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		go func() {
			select {
			case <-s.done:
				cancel()
			case <-ctx.Done():
			}
		}()
		s.repl.ServePsync(ctx, p, replid, off, sync)
	}
}

func cmdWait(c *Client, args [][]byte) {
	if c.srv.repl.IsReplica() {
		c.err("ERR WAIT cannot be used with replica instances. Please also note that since Redis 4.0 if a replica is configured to be writable (which is not the default) writes to replicas are just local and are not propagated.")
		return
	}
	n, ok := parseInt(args[1])
	if !ok {
		c.errNotInteger()
		return
	}
	ms, ok := parseInt(args[2])
	if !ok {
		c.err("ERR timeout is not an integer or out of range")
		return
	}
	if ms < 0 {
		c.err("ERR timeout is negative")
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		select {
		case <-c.srv.done:
		case <-ctx.Done():
		}
		cancel()
	}()
	c.int(int64(c.srv.repl.Wait(ctx, c.woff, int(n), time.Duration(ms)*time.Millisecond)))
}

func cmdReplicaOf(c *Client, args [][]byte) {
	if eq(args[1], "no") && eq(args[2], "one") {
		c.srv.repl.ReplicaOfNoOne()
		c.srv.store.SetReplica(false)
		c.ok()
		return
	}
	port, ok := parseInt(args[2])
	if !ok {
		c.errNotInteger()
		return
	}
	if port < 0 || port > 65535 {
		c.err("ERR Invalid master port")
		return
	}
	host := string(args[1])
	if h, p, ok := c.srv.repl.LinkTarget(); ok && strings.EqualFold(h, host) && p == int(port) {
		c.simple("OK Already connected to specified master")
		return
	}
	if c.srv.isSelf(host, int(port)) {
		c.err("ERR REPLICAOF cannot point a server at itself")
		return
	}
	c.srv.store.SetReplica(true)
	c.srv.repl.ReplicaOf(host, int(port))
	c.ok()
}

func cmdRole(c *Client, args [][]byte) {
	r := c.srv.repl.Role()
	if !r.Replica {
		c.array(3)
		c.bulkString("master")
		c.int(r.Offset)
		c.array(len(r.Replicas))
		for _, ri := range r.Replicas {
			c.array(3)
			c.bulkString(ri.IP)
			c.bulkString(strconv.Itoa(ri.Port))
			c.bulkString(strconv.FormatInt(ri.Offset, 10))
		}
		return
	}
	c.array(5)
	c.bulkString("slave")
	c.bulkString(r.Host)
	c.int(int64(r.Port))
	c.bulkString(r.State)
	c.int(r.Offset)
}
