package server

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/damselflydb/damselfly/memcache"
	"github.com/damselflydb/damselfly/netpoll"
)

// TLS, as Redis 7 configures it (tls-port, tls-cert-file, tls-key-file,
// tls-ca-cert-file/-dir, tls-auth-clients, tls-protocols, tls-ciphers,
// tls-ciphersuites, tls-replication), built on crypto/tls.
//
// Where it sits: the TLS port has its own listener and accept loop. Each
// connection gets a goroutine that runs the handshake (bounded by
// tlsHandshakeTimeout), then applies the same admission as plain TCP
// (protected mode, maxclients, both answered over TLS so the client can read
// them) and hands the client to an event loop like a plain one: the loop
// reads ciphertext, crypto/tls decrypts it into the client's input, and the
// replies are encrypted into the loop's output (tlsloop.go). With
// --goroutine-per-conn the goroutine serves the client itself. The
// memcached port over TLS (Config.TLS.MemcachedPort) works the same way
// through memcache.Server.ServeAdmit (admitMemcachedTLS runs the handshake
// and hands back a netpoll.TLSStream).
//
// Invariants:
//   - Every handshake reads the current *tls.Config through an atomic pointer
//     (GetConfigForClient), so CONFIG SET of any tls-* parameter that
//     rebuilds it (a new certificate, say) applies to every new connection
//     without a restart, and connections already established keep theirs.
//   - CONFIG SET is all or nothing for TLS: the setters only record values;
//     tlsConfigApply, run once after them, builds the new configuration from
//     all of them and, if that fails (a key that does not match its
//     certificate, a file that cannot be read), puts every tls-* value back
//     and answers Redis's "Unable to update TLS configuration" error.
//   - TLS material is loaded only while TLS is in use (tls-port, the
//     memcached TLS port or tls-replication), as in Redis: without it the
//     settings are merely kept.
//   - With tls-replication yes this server's link to its primary is TLS
//     (replDial) and it announces its TLS port to the primary; the primary
//     side needs nothing special, since a replica's PSYNC arrives on a TLS
//     client like any other command.

// TLSConfig is the start-up TLS configuration (flags --tls-*).
type TLSConfig struct {
	// Port is tls-port: 0 off, -1 a free port (tests).
	Port int
	// CertFile and KeyFile are the server's certificate and key (PEM),
	// also used as the client certificate toward a primary unless
	// ClientCertFile and ClientKeyFile are given.
	CertFile, KeyFile             string
	ClientCertFile, ClientKeyFile string
	// KeyFilePass and ClientKeyFilePass decrypt encrypted keys
	// (tls-key-file-pass, tls-client-key-file-pass).
	KeyFilePass, ClientKeyFilePass string
	// CACertFile and CACertDir hold the CA certificates that client (and
	// primary) certificates are checked against.
	CACertFile, CACertDir string
	// AuthClients is tls-auth-clients: "yes" (also ""), "no" or "optional".
	AuthClients string
	// Protocols is tls-protocols ("TLSv1.2 TLSv1.3"; "" = those two).
	Protocols string
	// Ciphers is tls-ciphers (TLS 1.2 and lower, OpenSSL names separated by
	// colons); CipherSuites is tls-ciphersuites (TLS 1.3, checked only:
	// crypto/tls always offers its three TLS 1.3 suites).
	Ciphers, CipherSuites string
	// Replication is tls-replication: connect to the primary over TLS.
	Replication bool
	// MemcachedPort serves the memcached protocol over TLS on this port (0
	// off, -1 a free port).
	MemcachedPort int
}

// tlsHandshakeTimeout bounds a TLS handshake, so that a peer that connects
// and never finishes cannot hold a goroutine for ever.
const tlsHandshakeTimeout = 10 * time.Second

// tlsSettings are the tls-* CONFIG values as set.
type tlsSettings struct {
	port                          int
	certFile, keyFile             string
	clientCertFile, clientKeyFile string
	keyPass, clientKeyPass        string // tls-key-file-pass, tls-client-key-file-pass (tlskey.go)
	caFile, caDir                 string
	authClients, protocols        string
	ciphers, cipherSuites         string
	replication, sessionCaching   bool
}

type tlsState struct {
	mu      sync.Mutex
	cur     tlsSettings // as set (CONFIG GET shows these)
	good    tlsSettings // as last applied
	changed []string    // tls-* parameters set by the running CONFIG SET
	bind    string
	mcPort  int // memcached TLS port asked for (fixed at start)

	server, client atomic.Pointer[tls.Config] // nil while TLS is not in use
	listenCfg      *tls.Config                // calls GetConfigForClient
	replication    atomic.Bool

	ln      net.Listener // the TLS RESP listener (nil: off)
	port    atomic.Int64 // its port
	mcAddr  string
	pending map[net.Conn]struct{} // mid-handshake, closed by closeTLS
	rbufs   sync.Pool             // read buffers of TLS clients on loops (tlsloop.go)
	// handshakeTimeout is tlsHandshakeTimeout (shorter in tests).
	handshakeTimeout time.Duration
	closed           bool
}

func (s *Server) initTLS(cfg TLSConfig) {
	t := &s.tls
	t.cur = tlsSettings{port: cfg.Port, certFile: cfg.CertFile, keyFile: cfg.KeyFile,
		clientCertFile: cfg.ClientCertFile, clientKeyFile: cfg.ClientKeyFile,
		keyPass: cfg.KeyFilePass, clientKeyPass: cfg.ClientKeyFilePass,
		caFile: cfg.CACertFile, caDir: cfg.CACertDir, authClients: strings.ToLower(cfg.AuthClients),
		protocols: cfg.Protocols, ciphers: cfg.Ciphers, cipherSuites: cfg.CipherSuites,
		replication: cfg.Replication, sessionCaching: true}
	if t.cur.authClients == "" {
		t.cur.authClients = "yes"
	}
	t.good = t.cur
	t.mcPort = cfg.MemcachedPort
	t.replication.Store(cfg.Replication)
	t.pending = map[net.Conn]struct{}{}
	t.handshakeTimeout = tlsHandshakeTimeout
	t.listenCfg = &tls.Config{GetConfigForClient: func(*tls.ClientHelloInfo) (*tls.Config, error) {
		if c := t.server.Load(); c != nil {
			return c, nil
		}
		return nil, errors.New("TLS is not configured")
	}}
}

// CheckTLSConfig validates the TLS flags' syntax (files are read at start).
func CheckTLSConfig(cfg TLSConfig) error {
	if _, err := parseAuthClients(cfg.AuthClients); err != nil {
		return fmt.Errorf("--tls-auth-clients: %v", err)
	}
	if _, _, err := parseTLSProtocols(cfg.Protocols); err != nil {
		return fmt.Errorf("--tls-protocols: %v", err)
	}
	if _, err := parseTLSCiphers(cfg.Ciphers); err != nil {
		return fmt.Errorf("--tls-ciphers: %v", err)
	}
	if err := checkTLSCipherSuites(cfg.CipherSuites); err != nil {
		return fmt.Errorf("--tls-ciphersuites: %v", err)
	}
	return nil
}

func (st *tlsSettings) inUse(mcPort int) bool {
	return st.port != 0 || st.replication || mcPort != 0
}

// startTLS builds the TLS configuration when TLS is in use and opens the TLS
// listeners (called by Start after the memcached front end exists).
func (s *Server) startTLS(cfg Config) error {
	t := &s.tls
	t.bind = cfg.Bind
	if !t.cur.inUse(t.mcPort) {
		return nil
	}
	srv, cli, err := buildTLS(t.cur)
	if err != nil {
		return fmt.Errorf("TLS: %w", err)
	}
	t.server.Store(srv)
	t.client.Store(cli)
	if t.cur.port != 0 {
		if err := s.listenTLS(max(t.cur.port, 0)); err != nil {
			return err
		}
	}
	if t.mcPort != 0 {
		if s.mc == nil {
			s.mc = s.newMemcache(cfg)
		}
		ln, err := net.Listen("tcp", net.JoinHostPort(cfg.Bind, strconv.Itoa(max(t.mcPort, 0))))
		if err != nil {
			s.closeTLS()
			return fmt.Errorf("memcached TLS port: %w", err)
		}
		t.mcAddr = ln.Addr().String()
		s.mc.ServeAdmit(ln, s.admitMemcachedTLS)
	}
	return nil
}

// listenTLS opens the TLS RESP listener on port (0: a free one) and serves it.
func (s *Server) listenTLS(port int) error {
	ln, err := net.Listen("tcp", net.JoinHostPort(s.tls.bind, strconv.Itoa(port)))
	if err != nil {
		return fmt.Errorf("tls-port: %w", err)
	}
	s.tls.mu.Lock()
	if s.tls.closed { // CONFIG SET racing Close
		s.tls.mu.Unlock()
		ln.Close()
		return errors.New("tls-port: the server is closing")
	}
	s.tls.ln = ln
	s.tls.mu.Unlock()
	s.tls.port.Store(int64(ln.Addr().(*net.TCPAddr).Port))
	s.wg.Add(1)
	go s.tlsAcceptLoop(ln)
	return nil
}

// TLSAddr is the TLS RESP listener's address ("" when off).
func (s *Server) TLSAddr() string {
	s.tls.mu.Lock()
	defer s.tls.mu.Unlock()
	if s.tls.ln == nil {
		return ""
	}
	return s.tls.ln.Addr().String()
}

// MemcachedTLSAddr is the memcached TLS listener's address ("" when off).
func (s *Server) MemcachedTLSAddr() string { return s.tls.mcAddr }

// closeTLS closes the TLS RESP listener and the connections still in their
// handshake (Close; the memcached listener closes with the memcached server).
func (s *Server) closeTLS() {
	t := &s.tls
	t.mu.Lock()
	t.closed = true
	if t.ln != nil {
		t.ln.Close()
	}
	for nc := range t.pending {
		nc.Close()
	}
	t.mu.Unlock()
}

func (s *Server) tlsAcceptLoop(ln net.Listener) {
	defer s.wg.Done()
	for {
		nc, err := ln.Accept()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			s.log.Warn("tls accept", "err", err)
			time.Sleep(10 * time.Millisecond)
			continue
		}
		if s.persist.shutting.Load() {
			nc.Close()
			continue
		}
		go s.serveTLSConn(nc.(*net.TCPConn))
	}
}

// handshake runs the TLS handshake of tc over raw within the timeout; raw
// is tracked meanwhile so that Close can cut it short.
func (s *Server) handshake(tc *tls.Conn, raw net.Conn) bool {
	t := &s.tls
	t.mu.Lock()
	if t.closed {
		t.mu.Unlock()
		raw.Close()
		return false
	}
	t.pending[raw] = struct{}{}
	t.mu.Unlock()
	_ = raw.SetDeadline(time.Now().Add(t.handshakeTimeout))
	err := tc.Handshake()
	_ = raw.SetDeadline(time.Time{})
	t.mu.Lock()
	delete(t.pending, raw)
	t.mu.Unlock()
	if err != nil {
		s.log.Debug("TLS handshake failed", "addr", raw.RemoteAddr().String(), "err", err)
		raw.Close()
		return false
	}
	return true
}

// serveTLSConn serves one connection of the TLS port on this goroutine.
func (s *Server) serveTLSConn(raw *net.TCPConn) {
	w := netpoll.NewTLSWire(raw)
	tc := tls.Server(w, s.tls.listenCfg)
	if !s.handshake(tc, raw) {
		return
	}
	refuse := ""
	if s.deniedByProtectedMode(raw) {
		s.stats.rejected.Add(1)
		refuse = deniedReply
	} else if !s.admitConn() {
		refuse = maxClientsReply
	}
	if refuse != "" {
		_ = raw.SetWriteDeadline(time.Now().Add(time.Second))
		_, _ = tc.Write([]byte(refuse))
		tc.Close()
		return
	}
	s.stats.connections.Add(1)
	c := s.newClient(tc)
	s.clientsMu.Lock()
	select {
	case <-s.done: // Close has (or is about to have) closed every client
		s.clientsMu.Unlock()
		tc.Close()
		return
	default:
	}
	s.clients[c.id] = c
	s.clientsMu.Unlock()
	if s.adoptTLS(c, tc, w, raw) {
		return
	}
	c.serveFrom(c.w > 0) // input the handshake read comes first
}

// admitMemcachedTLS judges a connection of the memcached TLS port after its
// handshake. The memcached protocol has no login, so where the plain port
// takes only loopback clients (a password is set, or protected mode), this
// one also takes clients that presented a certificate the CA vouches for
// (tls-auth-clients yes, or optional and one was given).
// It runs on the connection's goroutine; an admitted client is served by an
// event loop through a netpoll.TLSStream, like a RESP one.
func (s *Server) admitMemcachedTLS(nc net.Conn) memcache.Admitted {
	raw := nc.(*net.TCPConn)
	w := netpoll.NewTLSWire(raw)
	tc := tls.Server(w, s.tls.listenCfg)
	if !s.handshake(tc, raw) {
		return memcache.Admitted{}
	}
	refuse := ""
	if s.memcachedLocalOnly() && len(tc.ConnectionState().VerifiedChains) == 0 {
		if a, ok := nc.RemoteAddr().(*net.TCPAddr); ok && !a.IP.IsLoopback() {
			s.stats.rejected.Add(1)
			refuse = "SERVER_ERROR the memcached protocol has no authentication: with requirepass set or in protected mode, " +
				"Damselfly accepts memcached connections over TLS from other hosts only with a client certificate\r\n"
		}
	}
	if refuse == "" && !s.admitConn() {
		refuse = "ERROR Too many open connections\r\n"
	}
	if refuse != "" {
		_ = raw.SetWriteDeadline(time.Now().Add(time.Second))
		_, _ = tc.Write([]byte(refuse))
		tc.Close()
		return memcache.Admitted{}
	}
	return memcache.Admitted{Conn: tc, Raw: raw, Stream: netpoll.NewTLSStream(tc, w, &s.tls.rbufs)}
}

// replDial opens the link to a primary: TLS with tls-replication yes.
func (s *Server) replDial(ctx context.Context, addr string) (net.Conn, error) {
	d := net.Dialer{Timeout: 5 * time.Second}
	nc, err := d.DialContext(ctx, "tcp", addr)
	if err != nil || !s.tls.replication.Load() {
		return nc, err
	}
	cfg := s.tls.client.Load()
	if cfg == nil {
		nc.Close()
		return nil, errors.New("tls-replication is on but TLS is not configured")
	}
	tc := tls.Client(nc, cfg)
	hctx, cancel := context.WithTimeout(ctx, tlsHandshakeTimeout)
	defer cancel()
	if err := tc.HandshakeContext(hctx); err != nil {
		nc.Close()
		return nil, fmt.Errorf("TLS handshake with the primary: %w", err)
	}
	return tc, nil
}

// replListenPort is the port announced to a primary (REPLCONF
// listening-port): the TLS port with tls-replication, as Redis does.
func (s *Server) replListenPort() int {
	if p := s.tls.port.Load(); p != 0 && s.tls.replication.Load() {
		return int(p)
	}
	return s.port
}

// buildTLS makes the server- and client-side configurations from st.
func buildTLS(st tlsSettings) (srv, cli *tls.Config, err error) {
	if st.certFile == "" || st.keyFile == "" {
		return nil, nil, errors.New("tls-cert-file and tls-key-file must be set")
	}
	cert, err := loadKeyPair(st.certFile, st.keyFile, st.keyPass)
	if err != nil {
		return nil, nil, fmt.Errorf("tls-cert-file/tls-key-file: %w", err)
	}
	clientCert := cert
	if st.clientCertFile != "" || st.clientKeyFile != "" {
		if clientCert, err = loadKeyPair(st.clientCertFile, st.clientKeyFile, st.clientKeyPass); err != nil {
			return nil, nil, fmt.Errorf("tls-client-cert-file/tls-client-key-file: %w", err)
		}
	}
	auth, err := parseAuthClients(st.authClients)
	if err != nil {
		return nil, nil, err
	}
	pool, err := loadCAs(st.caFile, st.caDir)
	if err != nil {
		return nil, nil, err
	}
	if pool == nil && (auth != tls.NoClientCert || st.replication) {
		return nil, nil, errors.New("either tls-ca-cert-file or tls-ca-cert-dir must be specified when tls-replication or tls-auth-clients are enabled")
	}
	minV, maxV, err := parseTLSProtocols(st.protocols)
	if err != nil {
		return nil, nil, err
	}
	suites, err := parseTLSCiphers(st.ciphers)
	if err != nil {
		return nil, nil, err
	}
	if err := checkTLSCipherSuites(st.cipherSuites); err != nil {
		return nil, nil, err
	}
	srv = &tls.Config{Certificates: []tls.Certificate{cert}, ClientAuth: auth, ClientCAs: pool,
		DynamicRecordSizingDisabled: true, // full records: fewer writes for large replies
		MinVersion:                  minV, MaxVersion: maxV, CipherSuites: suites, SessionTicketsDisabled: !st.sessionCaching}
	// Like Redis, a replica checks its primary's certificate against the
	// CA but not against a host name (primaries are often addressed by IP).
	cli = &tls.Config{Certificates: []tls.Certificate{clientCert}, MinVersion: minV, MaxVersion: maxV,
		CipherSuites: suites, InsecureSkipVerify: true,
		VerifyConnection: func(cs tls.ConnectionState) error {
			if pool == nil {
				return errors.New("no CA certificates to check the primary's certificate against")
			}
			if len(cs.PeerCertificates) == 0 {
				return errors.New("the primary sent no certificate")
			}
			inter := x509.NewCertPool()
			for _, c := range cs.PeerCertificates[1:] {
				inter.AddCert(c)
			}
			_, err := cs.PeerCertificates[0].Verify(x509.VerifyOptions{Roots: pool, Intermediates: inter,
				KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}})
			return err
		}}
	return srv, cli, nil
}

// loadCAs reads the CA certificates of file and of every file in dir (nil
// when neither is set).
func loadCAs(file, dir string) (*x509.CertPool, error) {
	if file == "" && dir == "" {
		return nil, nil
	}
	pool := x509.NewCertPool()
	if file != "" {
		b, err := os.ReadFile(file)
		if err != nil {
			return nil, fmt.Errorf("tls-ca-cert-file: %w", err)
		}
		if !pool.AppendCertsFromPEM(b) {
			return nil, fmt.Errorf("tls-ca-cert-file %s: no PEM certificate in it", file)
		}
	}
	if dir != "" {
		ents, err := os.ReadDir(dir)
		if err != nil {
			return nil, fmt.Errorf("tls-ca-cert-dir: %w", err)
		}
		for _, e := range ents {
			if e.IsDir() {
				continue
			}
			if b, err := os.ReadFile(filepath.Join(dir, e.Name())); err == nil {
				pool.AppendCertsFromPEM(b) // files that hold no certificate are skipped, as OpenSSL does
			}
		}
	}
	return pool, nil
}

func parseAuthClients(v string) (tls.ClientAuthType, error) {
	switch strings.ToLower(v) {
	case "", "yes":
		return tls.RequireAndVerifyClientCert, nil
	case "optional":
		return tls.VerifyClientCertIfGiven, nil
	case "no":
		return tls.NoClientCert, nil
	}
	return 0, errors.New("argument(s) must be one of the following: no, yes, optional")
}

// parseTLSProtocols parses tls-protocols ("TLSv1.2 TLSv1.3"): the lowest
// and highest version named ("": TLS 1.2 and 1.3, Redis's default).
func parseTLSProtocols(v string) (minV, maxV uint16, err error) {
	for _, p := range strings.Fields(v) {
		var ver uint16
		switch strings.ToLower(p) {
		case "tlsv1":
			ver = tls.VersionTLS10
		case "tlsv1.1":
			ver = tls.VersionTLS11
		case "tlsv1.2":
			ver = tls.VersionTLS12
		case "tlsv1.3":
			ver = tls.VersionTLS13
		default:
			return 0, 0, fmt.Errorf("invalid tls-protocols %q (want TLSv1, TLSv1.1, TLSv1.2, TLSv1.3)", p)
		}
		if minV == 0 || ver < minV {
			minV = ver
		}
		maxV = max(maxV, ver)
	}
	if minV == 0 {
		return tls.VersionTLS12, tls.VersionTLS13, nil
	}
	return minV, maxV, nil
}

// openSSLCiphers maps OpenSSL's names of the TLS 1.2 suites crypto/tls
// implements to their IANA names.
var openSSLCiphers = map[string]string{
	"ECDHE-ECDSA-AES128-GCM-SHA256": "TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256",
	"ECDHE-RSA-AES128-GCM-SHA256":   "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256",
	"ECDHE-ECDSA-AES256-GCM-SHA384": "TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384",
	"ECDHE-RSA-AES256-GCM-SHA384":   "TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384",
	"ECDHE-ECDSA-CHACHA20-POLY1305": "TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256",
	"ECDHE-RSA-CHACHA20-POLY1305":   "TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256",
	"ECDHE-ECDSA-AES128-SHA":        "TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA",
	"ECDHE-RSA-AES128-SHA":          "TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA",
	"ECDHE-ECDSA-AES256-SHA":        "TLS_ECDHE_ECDSA_WITH_AES_256_CBC_SHA",
	"ECDHE-RSA-AES256-SHA":          "TLS_ECDHE_RSA_WITH_AES_256_CBC_SHA",
	"ECDHE-ECDSA-AES128-SHA256":     "TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA256",
	"ECDHE-RSA-AES128-SHA256":       "TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA256",
	"AES128-GCM-SHA256":             "TLS_RSA_WITH_AES_128_GCM_SHA256",
	"AES256-GCM-SHA384":             "TLS_RSA_WITH_AES_256_GCM_SHA384",
	"AES128-SHA":                    "TLS_RSA_WITH_AES_128_CBC_SHA",
	"AES256-SHA":                    "TLS_RSA_WITH_AES_256_CBC_SHA",
	"AES128-SHA256":                 "TLS_RSA_WITH_AES_128_CBC_SHA256",
	"ECDHE-RSA-DES-CBC3-SHA":        "TLS_ECDHE_RSA_WITH_3DES_EDE_CBC_SHA",
	"DES-CBC3-SHA":                  "TLS_RSA_WITH_3DES_EDE_CBC_SHA",
}

// parseTLSCiphers parses tls-ciphers, an OpenSSL-style list separated by
// colons (or commas or spaces): suite names (OpenSSL's or IANA's), the
// keywords DEFAULT, HIGH, ALL and the like for crypto/tls's default set, and
// exclusions (!NAME, -NAME). nil means crypto/tls's defaults.
func parseTLSCiphers(v string) ([]uint16, error) {
	if strings.TrimSpace(v) == "" {
		return nil, nil
	}
	ids := map[string]uint16{}
	for _, cs := range append(tls.CipherSuites(), tls.InsecureCipherSuites()...) {
		ids[cs.Name] = cs.ID
	}
	for o, iana := range openSSLCiphers {
		if id, ok := ids[iana]; ok {
			ids[o] = id
		}
	}
	var out []uint16
	has := map[uint16]bool{}
	add := func(id uint16) {
		if !has[id] {
			has[id] = true
			out = append(out, id)
		}
	}
	for _, p := range strings.FieldsFunc(v, func(r rune) bool { return r == ':' || r == ',' || r == ' ' }) {
		switch {
		case p[0] == '!' || p[0] == '-':
			if id, ok := ids[strings.ToUpper(p[1:])]; ok {
				delete(has, id)
				for i, x := range out {
					if x == id {
						out = append(out[:i], out[i+1:]...)
						break
					}
				}
			}
			// Excluding a class (!aNULL, !MD5) removes nothing crypto/tls offers.
		case p[0] == '+' || p[0] == '@':
			// ordering and strength directives: crypto/tls orders suites itself
		default:
			up := strings.ToUpper(p)
			if id, ok := ids[up]; ok {
				add(id)
				continue
			}
			switch up {
			case "DEFAULT", "HIGH", "ALL", "MEDIUM", "ECDHE", "EECDH", "AESGCM", "TLSV1.2", "SECURE":
				for _, cs := range tls.CipherSuites() {
					add(cs.ID)
				}
				continue
			}
			return nil, fmt.Errorf("unknown or unsupported cipher %q", p)
		}
	}
	if len(out) == 0 {
		return nil, errors.New("the cipher list selects no cipher")
	}
	return out, nil
}

// checkTLSCipherSuites validates tls-ciphersuites (TLS 1.3 suite names).
// crypto/tls does not let TLS 1.3 suites be chosen; it offers
// TLS_AES_128_GCM_SHA256, TLS_AES_256_GCM_SHA384 and
// TLS_CHACHA20_POLY1305_SHA256 always, so the list must name some of those.
func checkTLSCipherSuites(v string) error {
	for _, p := range strings.FieldsFunc(v, func(r rune) bool { return r == ':' || r == ',' || r == ' ' }) {
		switch strings.ToUpper(p) {
		case "TLS_AES_128_GCM_SHA256", "TLS_AES_256_GCM_SHA384", "TLS_CHACHA20_POLY1305_SHA256":
		default:
			return fmt.Errorf("unknown or unsupported TLS 1.3 cipher suite %q", p)
		}
	}
	return nil
}

// tlsParams are the tls-* CONFIG parameters under Redis's names.
func tlsParams(m map[string]configParam) {
	str := func(name string, field func(*tlsSettings) *string, check func(string) error) {
		m[name] = configParam{
			get: func(s *Server) string { s.tls.mu.Lock(); defer s.tls.mu.Unlock(); return *field(&s.tls.cur) },
			set: func(s *Server, v string) error {
				if check != nil {
					if err := check(v); err != nil {
						return err
					}
				}
				s.tls.mu.Lock()
				*field(&s.tls.cur) = v
				s.tls.changed = append(s.tls.changed, name)
				s.tls.mu.Unlock()
				return nil
			},
		}
	}
	str("tls-cert-file", func(t *tlsSettings) *string { return &t.certFile }, nil)
	str("tls-key-file", func(t *tlsSettings) *string { return &t.keyFile }, nil)
	str("tls-client-cert-file", func(t *tlsSettings) *string { return &t.clientCertFile }, nil)
	str("tls-client-key-file", func(t *tlsSettings) *string { return &t.clientKeyFile }, nil)
	str("tls-key-file-pass", func(t *tlsSettings) *string { return &t.keyPass }, nil)
	str("tls-client-key-file-pass", func(t *tlsSettings) *string { return &t.clientKeyPass }, nil)
	str("tls-ca-cert-file", func(t *tlsSettings) *string { return &t.caFile }, nil)
	str("tls-ca-cert-dir", func(t *tlsSettings) *string { return &t.caDir }, nil)
	str("tls-protocols", func(t *tlsSettings) *string { return &t.protocols }, nil)
	str("tls-ciphers", func(t *tlsSettings) *string { return &t.ciphers }, nil)
	str("tls-ciphersuites", func(t *tlsSettings) *string { return &t.cipherSuites }, nil)
	str("tls-auth-clients", func(t *tlsSettings) *string { return &t.authClients }, func(v string) error {
		_, err := parseAuthClients(v)
		return err
	})
	boolean := func(name string, field func(*tlsSettings) *bool) {
		m[name] = configParam{
			get: func(s *Server) string { s.tls.mu.Lock(); defer s.tls.mu.Unlock(); return yesNo(*field(&s.tls.cur)) },
			set: func(s *Server, v string) error {
				b, err := parseYesNo(v)
				if err != nil {
					return err
				}
				s.tls.mu.Lock()
				*field(&s.tls.cur) = b
				s.tls.changed = append(s.tls.changed, name)
				s.tls.mu.Unlock()
				return nil
			},
		}
	}
	boolean("tls-replication", func(t *tlsSettings) *bool { return &t.replication })
	boolean("tls-session-caching", func(t *tlsSettings) *bool { return &t.sessionCaching })
	m["tls-port"] = configParam{
		get: func(s *Server) string {
			if p := s.tls.port.Load(); p != 0 {
				return strconv.FormatInt(p, 10)
			}
			s.tls.mu.Lock()
			defer s.tls.mu.Unlock()
			return strconv.Itoa(max(s.tls.cur.port, 0))
		},
		set: func(s *Server, v string) error {
			n, ok := parseInt([]byte(v))
			if !ok {
				return errors.New("argument couldn't be parsed into an integer")
			}
			if n < 0 || n > 65535 {
				return errors.New("argument must be between 0 and 65535 inclusive")
			}
			s.tls.mu.Lock()
			s.tls.cur.port = int(n)
			s.tls.changed = append(s.tls.changed, "tls-port")
			s.tls.mu.Unlock()
			return nil
		},
	}
}

// tlsConfigRevert drops the tls-* values set by a CONFIG SET that failed.
func (s *Server) tlsConfigRevert() {
	s.tls.mu.Lock()
	s.tls.cur, s.tls.changed = s.tls.good, nil
	s.tls.mu.Unlock()
}

// tlsConfigApply applies the tls-* values set by the CONFIG SET that just
// ran (nothing when it set none): it rebuilds the TLS configuration and
// moves the TLS port. On failure every tls-* value goes back and the name
// of the parameter to blame and Redis's error are returned.
func (s *Server) tlsConfigApply() (string, error) {
	t := &s.tls
	t.mu.Lock()
	if len(t.changed) == 0 {
		t.mu.Unlock()
		return "", nil
	}
	changed, next, prev := t.changed, t.cur, t.good
	t.changed = nil
	t.mu.Unlock()
	fail := func(name, msg string, err error) (string, error) {
		s.log.Warn("CONFIG SET: TLS not changed", "param", name, "err", err)
		t.mu.Lock()
		t.cur = prev
		t.mu.Unlock()
		return name, errors.New(msg)
	}
	const errCfg = "Unable to update TLS configuration. Check server logs."
	if next.inUse(t.mcPort) {
		srv, cli, err := buildTLS(next)
		if err != nil {
			return fail(changed[0], errCfg, err)
		}
		if next.port != prev.port {
			t.mu.Lock()
			old := t.ln
			t.ln = nil
			t.mu.Unlock()
			if old != nil {
				old.Close()
				t.port.Store(0)
			}
			if next.port != 0 {
				t.server.Store(srv)
				if err := s.listenTLS(next.port); err != nil {
					if prev.port != 0 {
						_ = s.listenTLS(max(prev.port, 0))
					}
					return fail("tls-port", "Unable to listen on this port. Check server logs.", err)
				}
			}
		}
		t.server.Store(srv)
		t.client.Store(cli)
	} else if prev.port != 0 {
		t.mu.Lock()
		old := t.ln
		t.ln = nil
		t.mu.Unlock()
		if old != nil {
			old.Close()
			t.port.Store(0)
		}
	}
	t.replication.Store(next.replication)
	t.mu.Lock()
	t.good = next
	t.mu.Unlock()
	return "", nil
}
