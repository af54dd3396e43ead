package server

import (
	"bufio"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"io"
	"math/big"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// testPKI is a CA with a server and a client certificate, as PEM files in a
// temporary directory.
type testPKI struct {
	dir                string
	ca                 *x509.Certificate
	caKey              *ecdsa.PrivateKey
	caFile             string
	certFile, keyFile  string // server (also usable as a client: both key usages)
	clientCert, client string // client certificate and key files
	pool               *x509.CertPool
}

func newTestPKI(t testing.TB) *testPKI {
	t.Helper()
	p := &testPKI{dir: t.TempDir()}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "damselfly test CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	p.ca, _ = x509.ParseCertificate(der)
	p.caKey = key
	p.caFile = filepath.Join(p.dir, "ca.crt")
	writePEM(t, p.caFile, "CERTIFICATE", der)
	p.pool = x509.NewCertPool()
	p.pool.AddCert(p.ca)
	p.certFile, p.keyFile = p.issue(t, "server", 2, true)
	p.clientCert, p.client = p.issue(t, "client", 3, false)
	return p
}

// issue signs a certificate for CN name (serial as given) and writes it and
// its key; a server certificate is valid for 127.0.0.1 and localhost and for
// both server and client authentication (Redis uses it both ways).
func (p *testPKI) issue(t testing.TB, name string, serial int64, server bool) (certFile, keyFile string) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(serial), Subject: pkix.Name{CommonName: name},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}
	if server {
		tmpl.ExtKeyUsage = append(tmpl.ExtKeyUsage, x509.ExtKeyUsageServerAuth)
		tmpl.IPAddresses = []net.IP{net.ParseIP("127.0.0.1")}
		tmpl.DNSNames = []string{"localhost"}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, p.ca, &key.PublicKey, p.caKey)
	if err != nil {
		t.Fatal(err)
	}
	kder, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	certFile = filepath.Join(p.dir, name+".crt")
	keyFile = filepath.Join(p.dir, name+".key")
	writePEM(t, certFile, "CERTIFICATE", der)
	writePEM(t, keyFile, "PRIVATE KEY", kder)
	return certFile, keyFile
}

func writePEM(t testing.TB, path, typ string, der []byte) {
	t.Helper()
	if err := os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
}

// clientTLS is a client configuration trusting the CA, with the client
// certificate when withCert.
func (p *testPKI) clientTLS(t testing.TB, withCert bool) *tls.Config {
	t.Helper()
	cfg := &tls.Config{RootCAs: p.pool, ServerName: "127.0.0.1"}
	if withCert {
		cert, err := tls.LoadX509KeyPair(p.clientCert, p.client)
		if err != nil {
			t.Fatal(err)
		}
		cfg.Certificates = []tls.Certificate{cert}
	}
	return cfg
}

func (p *testPKI) serverTLS(auth string) TLSConfig {
	return TLSConfig{Port: -1, CertFile: p.certFile, KeyFile: p.keyFile, CACertFile: p.caFile, AuthClients: auth}
}

func startTLSServer(t testing.TB, p *testPKI, auth string, mutate ...func(*Config)) *Server {
	t.Helper()
	return startServer(t, append([]func(*Config){func(c *Config) { c.TLS = p.serverTLS(auth) }}, mutate...)...)
}

func tlsClient(t testing.TB, addr string, cfg *tls.Config) *redis.Client {
	t.Helper()
	rdb := redis.NewClient(&redis.Options{Addr: addr, TLSConfig: cfg, MaxRetries: -1, DialTimeout: 2 * time.Second})
	t.Cleanup(func() { rdb.Close() })
	return rdb
}

// TestTLSClientAuth: go-redis over TLS under each tls-auth-clients mode.
func TestTLSClientAuth(t *testing.T) {
	p := newTestPKI(t)
	ctx := context.Background()
	other := newTestPKI(t) // a CA the server does not trust
	for _, tc := range []struct {
		auth                 string
		noCert, strangerCert bool // accepted?
	}{
		{"yes", false, false},
		{"optional", true, false},
		{"no", true, true},
	} {
		t.Run(tc.auth, func(t *testing.T) {
			s := startTLSServer(t, p, tc.auth)
			rdb := tlsClient(t, s.TLSAddr(), p.clientTLS(t, true))
			if err := rdb.Set(ctx, "k", "v", 0).Err(); err != nil {
				t.Fatalf("with a client certificate: %v", err)
			}
			if got := rdb.Get(ctx, "k").Val(); got != "v" {
				t.Fatalf("GET %q", got)
			}
			err := tlsClient(t, s.TLSAddr(), p.clientTLS(t, false)).Ping(ctx).Err()
			if (err == nil) != tc.noCert {
				t.Fatalf("without a certificate: err %v, want accepted=%v", err, tc.noCert)
			}
			stranger := p.clientTLS(t, false)
			cert, _ := tls.LoadX509KeyPair(other.clientCert, other.client)
			stranger.Certificates = []tls.Certificate{cert}
			err = tlsClient(t, s.TLSAddr(), stranger).Ping(ctx).Err()
			if (err == nil) != tc.strangerCert {
				t.Fatalf("with an untrusted certificate: err %v, want accepted=%v", err, tc.strangerCert)
			}
			// The plain port still speaks plain RESP; the TLS port does not.
			if err := newClient(t, s).Ping(ctx).Err(); err != nil {
				t.Fatal(err)
			}
			plain := redis.NewClient(&redis.Options{Addr: s.TLSAddr(), MaxRetries: -1, ReadTimeout: time.Second})
			defer plain.Close()
			if err := plain.Ping(ctx).Err(); err == nil {
				t.Fatal("plain RESP accepted on the TLS port")
			}
		})
	}
}

// TestTLSLimits: a TLS client is a client like any other: CLIENT LIST shows
// it, requirepass applies, and maxclients refuses it with Redis's error,
// sent over TLS.
func TestTLSLimits(t *testing.T) {
	p := newTestPKI(t)
	ctx := context.Background()
	s := startTLSServer(t, p, "yes", func(c *Config) { c.RequirePass = "pw"; c.MaxClients = 2 })
	a := tlsClient(t, s.TLSAddr(), p.clientTLS(t, true))
	if err := a.Ping(ctx).Err(); err == nil || !strings.HasPrefix(err.Error(), "NOAUTH") {
		t.Fatalf("before AUTH: %v", err)
	}
	if err := a.Do(ctx, "AUTH", "pw").Err(); err != nil {
		t.Fatal(err)
	}
	b := redis.NewClient(&redis.Options{Addr: s.Addr(), Password: "pw"})
	defer b.Close()
	if err := b.Ping(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	list := b.ClientList(ctx).Val()
	if n := strings.Count(list, "\n"); n != 2 || strings.Contains(list, "fd=-1") {
		t.Fatalf("CLIENT LIST:\n%s", list)
	}
	nc, err := tls.Dial("tcp", s.TLSAddr(), p.clientTLS(t, true))
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	_ = nc.SetReadDeadline(time.Now().Add(5 * time.Second))
	line, _ := bufio.NewReader(nc).ReadString('\n')
	if line != maxClientsReply {
		t.Fatalf("third client got %q", line)
	}
}

// TestTLSRedisCLI: redis-cli --tls --cacert --cert --key.
func TestTLSRedisCLI(t *testing.T) {
	cli, err := exec.LookPath("redis-cli")
	if err != nil {
		t.Skip("redis-cli not installed (apt-get install -y redis-tools)")
	}
	p := newTestPKI(t)
	s := startTLSServer(t, p, "yes")
	_, port, _ := net.SplitHostPort(s.TLSAddr())
	base := []string{"--tls", "--cacert", p.caFile, "--cert", p.clientCert, "--key", p.client, "-h", "127.0.0.1", "-p", port}
	out, err := exec.Command(cli, append(base, "SET", "greeting", "hello")...).CombinedOutput()
	if err != nil || strings.TrimSpace(string(out)) != "OK" {
		t.Fatalf("SET: %s %v", out, err)
	}
	out, err = exec.Command(cli, append(base, "GET", "greeting")...).CombinedOutput()
	if err != nil || strings.TrimSpace(string(out)) != "hello" {
		t.Fatalf("GET: %s %v", out, err)
	}
	// Without its certificate redis-cli cannot get in.
	out, _ = exec.Command(cli, "--tls", "--cacert", p.caFile, "-h", "127.0.0.1", "-p", port, "PING").CombinedOutput()
	if strings.Contains(string(out), "PONG") {
		t.Fatalf("PING without a client certificate: %s", out)
	}
}

func peerSerial(t testing.TB, addr string, cfg *tls.Config) int64 {
	t.Helper()
	nc, err := tls.Dial("tcp", addr, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	return nc.ConnectionState().PeerCertificates[0].SerialNumber.Int64()
}

// TestTLSReload: CONFIG SET tls-cert-file/tls-key-file swaps the certificate
// for new connections without a restart; connections already open keep
// working; a pair that does not match is refused with Redis's error and
// changes nothing.
func TestTLSReload(t *testing.T) {
	p := newTestPKI(t)
	ctx := context.Background()
	s := startTLSServer(t, p, "yes")
	cfg := p.clientTLS(t, true)
	if got := peerSerial(t, s.TLSAddr(), cfg); got != 2 {
		t.Fatalf("serial %d", got)
	}
	old := tlsClient(t, s.TLSAddr(), cfg)
	if err := old.Set(ctx, "k", "1", 0).Err(); err != nil {
		t.Fatal(err)
	}
	newCert, newKey := p.issue(t, "server2", 42, true)
	ctl := newClient(t, s)
	if err := ctl.ConfigSet(ctx, "tls-cert-file", newCert).Err(); err == nil {
		t.Fatal("a certificate without its key was accepted") // its key is still server.key
	} else if want := "ERR CONFIG SET failed (possibly related to argument 'tls-cert-file') - Unable to update TLS configuration. Check server logs."; err.Error() != want {
		t.Fatalf("got %q\nwant %q", err, want)
	}
	if got := ctl.ConfigGet(ctx, "tls-cert-file").Val()["tls-cert-file"]; got != p.certFile {
		t.Fatalf("tls-cert-file after a failed SET: %q", got)
	}
	if err := ctl.Do(ctx, "CONFIG", "SET", "tls-cert-file", newCert, "tls-key-file", newKey).Err(); err != nil {
		t.Fatal(err)
	}
	if got := peerSerial(t, s.TLSAddr(), cfg); got != 42 {
		t.Fatalf("serial after reload %d", got)
	}
	if got := old.Get(ctx, "k").Val(); got != "1" {
		t.Fatalf("old connection GET %q", got)
	}
	// tls-auth-clients changes apply to new connections too.
	if err := ctl.ConfigSet(ctx, "tls-auth-clients", "no").Err(); err != nil {
		t.Fatal(err)
	}
	if err := tlsClient(t, s.TLSAddr(), p.clientTLS(t, false)).Ping(ctx).Err(); err != nil {
		t.Fatalf("without a certificate after tls-auth-clients no: %v", err)
	}
	if err := ctl.ConfigSet(ctx, "tls-auth-clients", "maybe").Err(); err == nil ||
		err.Error() != "ERR CONFIG SET failed (possibly related to argument 'tls-auth-clients') - argument(s) must be one of the following: no, yes, optional" {
		t.Fatalf("bad tls-auth-clients: %v", err)
	}
	// tls-port moves the listener.
	if err := ctl.ConfigSet(ctx, "tls-port", "0").Err(); err != nil {
		t.Fatal(err)
	}
	if s.TLSAddr() != "" {
		t.Fatal("TLS listener still open")
	}
	port := freePort(t)
	if err := ctl.ConfigSet(ctx, "tls-port", strconv.Itoa(port)).Err(); err != nil {
		t.Fatal(err)
	}
	if err := tlsClient(t, net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), cfg).Ping(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	if got := ctl.ConfigGet(ctx, "tls-port").Val()["tls-port"]; got != strconv.Itoa(port) {
		t.Fatalf("tls-port %q", got)
	}
	if err := ctl.Do(ctx, "REPLICAOF", "127.0.0.1", port).Err(); err == nil || err.Error() != "ERR REPLICAOF cannot point a server at itself" {
		t.Fatalf("REPLICAOF its own TLS port: %v", err)
	}
	// A port that is taken: Redis's error, and the listener stays where it was.
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	busyPort := busy.Addr().(*net.TCPAddr).Port
	if err := ctl.ConfigSet(ctx, "tls-port", strconv.Itoa(busyPort)).Err(); err == nil ||
		err.Error() != "ERR CONFIG SET failed (possibly related to argument 'tls-port') - Unable to listen on this port. Check server logs." {
		t.Fatalf("tls-port on a taken port: %v", err)
	}
	if err := tlsClient(t, net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), cfg).Ping(ctx).Err(); err != nil {
		t.Fatalf("after the failed move: %v", err)
	}
	if got := ctl.ConfigGet(ctx, "tls-port").Val()["tls-port"]; got != strconv.Itoa(port) {
		t.Fatalf("tls-port %q after the failed move", got)
	}
}

// TestTLSConfigErrorsAsRedis: the CONFIG SET errors of the TLS parameters
// are redis-server 7.0.15's, byte for byte.
func TestTLSConfigErrorsAsRedis(t *testing.T) {
	p := newTestPKI(t)
	ctx := context.Background()
	tlsPort := freePort(t)
	raddr := startRedis(t, "--tls-port", strconv.Itoa(tlsPort), "--tls-cert-file", p.certFile,
		"--tls-key-file", p.keyFile, "--tls-ca-cert-file", p.caFile)
	r := redis.NewClient(&redis.Options{Addr: raddr, Protocol: 2})
	defer r.Close()
	s := startTLSServer(t, p, "yes")
	d := newClient(t, s)
	newCert, _ := p.issue(t, "server3", 43, true)
	for _, args := range [][]any{
		{"CONFIG", "SET", "tls-cert-file", newCert},
		{"CONFIG", "SET", "tls-key-file", filepath.Join(p.dir, "missing.key")},
		{"CONFIG", "SET", "tls-auth-clients", "maybe"},
		{"CONFIG", "SET", "tls-replication", "perhaps"},
		{"CONFIG", "SET", "tls-port", "70000"},
		{"CONFIG", "SET", "tls-ca-cert-file", filepath.Join(p.dir, "missing.crt")},
		{"CONFIG", "GET", "tls-auth-clients"},
		{"CONFIG", "GET", "tls-replication"},
		{"CONFIG", "GET", "tls-protocols"},
	} {
		want, werr := r.Do(ctx, args...).Result()
		got, gerr := d.Do(ctx, args...).Result()
		if strings.Join(strings.Fields(stringOf(want, werr)), " ") != strings.Join(strings.Fields(stringOf(got, gerr)), " ") {
			t.Errorf("%v:\n redis     %v %v\n damselfly %v %v", args, want, werr, got, gerr)
		}
	}
}

func stringOf(v any, err error) string {
	if err != nil {
		return "error " + err.Error()
	}
	return fmt.Sprint(v)
}

func waitUntil(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestTLSRedisReplicaOfUs: redis-server 7.0 replicates Damselfly through
// Damselfly's TLS port (tls-replication yes on its side, client certificate
// required on ours): full sync, then the command stream.
func TestTLSRedisReplicaOfUs(t *testing.T) {
	p := newTestPKI(t)
	ctx := context.Background()
	s := startTLSServer(t, p, "yes")
	primary := newClient(t, s)
	for i := 0; i < 100; i++ {
		primary.Set(ctx, "before:"+strconv.Itoa(i), i, 0)
	}
	host, port, _ := net.SplitHostPort(s.TLSAddr())
	raddr := startRedis(t, "--tls-replication", "yes", "--tls-cert-file", p.certFile, "--tls-key-file", p.keyFile,
		"--tls-ca-cert-file", p.caFile, "--replicaof", host, port)
	replica := redis.NewClient(&redis.Options{Addr: raddr, Protocol: 2})
	defer replica.Close()
	waitUntil(t, "the full sync", func() bool { return replica.DBSize(ctx).Val() == 100 })
	primary.Set(ctx, "after", "streamed", 0)
	primary.RPush(ctx, "list", "a", "b")
	waitUntil(t, "the stream", func() bool { return replica.LLen(ctx, "list").Val() == 2 })
	if got := replica.Get(ctx, "after").Val(); got != "streamed" {
		t.Fatalf("replica GET after = %q", got)
	}
	if info := replica.Info(ctx, "replication").Val(); !strings.Contains(info, "master_link_status:up") {
		t.Fatalf("replica INFO:\n%s", info)
	}
}

// TestTLSReplicaOfRedis: with tls-replication yes Damselfly replicates a
// redis-server 7.0 that serves only TLS clients with certificates.
func TestTLSReplicaOfRedis(t *testing.T) {
	p := newTestPKI(t)
	ctx := context.Background()
	tlsPort := freePort(t)
	raddr := startRedis(t, "--tls-port", strconv.Itoa(tlsPort), "--tls-cert-file", p.certFile,
		"--tls-key-file", p.keyFile, "--tls-ca-cert-file", p.caFile, "--tls-auth-clients", "yes", "--repl-diskless-sync-delay", "0")
	primary := redis.NewClient(&redis.Options{Addr: raddr, Protocol: 2})
	defer primary.Close()
	for i := 0; i < 100; i++ {
		primary.Set(ctx, "before:"+strconv.Itoa(i), i, 0)
	}
	s := startServer(t, func(c *Config) {
		c.TLS = p.serverTLS("yes")
		c.TLS.Port, c.TLS.Replication = 0, true
	})
	replica := newClient(t, s)
	if err := replica.Do(ctx, "REPLICAOF", "127.0.0.1", tlsPort).Err(); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, "the full sync", func() bool { return replica.DBSize(ctx).Val() == 100 })
	primary.Set(ctx, "after", "streamed", 0)
	waitUntil(t, "the stream", func() bool { return replica.Get(ctx, "after").Val() == "streamed" })
	if info := primary.Info(ctx, "replication").Val(); !strings.Contains(info, "connected_slaves:1") {
		t.Fatalf("primary INFO:\n%s", info)
	}
}

// TestMemcachedTLS: the memcached protocol over TLS, and its access rule
// under a password: from another host only with a client certificate.
func TestMemcachedTLS(t *testing.T) {
	p := newTestPKI(t)
	ip := nonLoopbackIP()
	for _, tc := range []struct {
		auth           string
		remoteNoCert   bool // a remote client without a certificate is served
		remoteWithCert bool
	}{
		{"yes", false, true},
		{"optional", false, true},
		{"no", false, false},
	} {
		t.Run(tc.auth, func(t *testing.T) {
			s := startServer(t, func(c *Config) {
				c.Bind, c.RequirePass = "0.0.0.0", "pw"
				c.TLS = p.serverTLS(tc.auth)
				c.TLS.Port, c.TLS.MemcachedPort = 0, -1
			})
			_, port, _ := net.SplitHostPort(s.MemcachedTLSAddr())
			try := func(host string, withCert bool) (string, bool) {
				nc, err := tls.Dial("tcp", net.JoinHostPort(host, port), p.clientTLS(t, withCert))
				if err != nil {
					return err.Error(), false
				}
				defer nc.Close()
				_ = nc.SetDeadline(time.Now().Add(5 * time.Second))
				nc.Write([]byte("set k 0 0 5\r\nhello\r\nget k\r\n"))
				rd := bufio.NewReader(nc)
				first, err := rd.ReadString('\n')
				if err != nil || first != "STORED\r\n" {
					return first, false
				}
				var rest string
				for i := 0; i < 3; i++ {
					l, _ := rd.ReadString('\n')
					rest += l
				}
				return rest, rest == "VALUE k 0 5\r\nhello\r\nEND\r\n"
			}
			// Loopback clients are served with or without a certificate
			// when the handshake allows it.
			if got, ok := try("127.0.0.1", true); !ok {
				t.Fatalf("local client with a certificate: %q", got)
			}
			if got, ok := try("127.0.0.1", false); ok != (tc.auth != "yes") {
				t.Fatalf("local client without a certificate: %q", got)
			}
			if ip == "" {
				t.Skip("no non-loopback address to connect from")
			}
			if got, ok := try(ip, false); ok != tc.remoteNoCert {
				t.Fatalf("remote client without a certificate: %q (served %v)", got, ok)
			} else if !ok && tc.auth != "yes" && !strings.HasPrefix(got, "SERVER_ERROR the memcached protocol has no authentication") {
				t.Fatalf("remote client without a certificate got %q", got)
			}
			if got, ok := try(ip, true); ok != tc.remoteWithCert {
				t.Fatalf("remote client with a certificate: %q (served %v)", got, ok)
			}
		})
	}
}

// TestTLSProtectedMode: protected mode refuses TLS clients from other hosts
// as it does plain ones, with Redis's -DENIED sent over TLS.
func TestTLSProtectedMode(t *testing.T) {
	ip := nonLoopbackIP()
	if ip == "" {
		t.Skip("no non-loopback address to connect from")
	}
	p := newTestPKI(t)
	s := startTLSServer(t, p, "yes", func(c *Config) { c.Bind, c.ProtectedMode = "0.0.0.0", true })
	_, port, _ := net.SplitHostPort(s.TLSAddr())
	nc, err := tls.Dial("tcp", net.JoinHostPort(ip, port), p.clientTLS(t, true))
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	_ = nc.SetReadDeadline(time.Now().Add(5 * time.Second))
	if line, _ := bufio.NewReader(nc).ReadString('\n'); line != deniedReply {
		t.Fatalf("remote TLS client got %q", line)
	}
	if err := tlsClient(t, net.JoinHostPort("127.0.0.1", port), p.clientTLS(t, true)).Ping(context.Background()).Err(); err != nil {
		t.Fatalf("loopback TLS client: %v", err)
	}
}

// TestTLSProtocolsAndCiphers: tls-protocols and tls-ciphers (OpenSSL names)
// decide what a handshake may use.
func TestTLSProtocolsAndCiphers(t *testing.T) {
	p := newTestPKI(t)
	ctx := context.Background()
	s := startTLSServer(t, p, "yes")
	ctl := newClient(t, s)
	dial := func(minV, maxV uint16, suites ...uint16) error {
		cfg := p.clientTLS(t, true)
		cfg.MinVersion, cfg.MaxVersion, cfg.CipherSuites = minV, maxV, suites
		nc, err := tls.Dial("tcp", s.TLSAddr(), cfg)
		if err == nil {
			// With TLS 1.3 a refused client certificate shows on the first read.
			nc.Write([]byte("PING\r\n"))
			_ = nc.SetReadDeadline(time.Now().Add(5 * time.Second))
			_, err = bufio.NewReader(nc).ReadString('\n')
			nc.Close()
		}
		return err
	}
	if err := dial(tls.VersionTLS12, tls.VersionTLS12); err != nil {
		t.Fatalf("TLS 1.2 by default: %v", err)
	}
	if err := dial(tls.VersionTLS11, tls.VersionTLS11); err == nil {
		t.Fatal("TLS 1.1 accepted by default")
	}
	if err := ctl.ConfigSet(ctx, "tls-protocols", "TLSv1.3").Err(); err != nil {
		t.Fatal(err)
	}
	if err := dial(tls.VersionTLS12, tls.VersionTLS12); err == nil {
		t.Fatal("TLS 1.2 accepted with tls-protocols TLSv1.3")
	}
	if err := dial(tls.VersionTLS13, tls.VersionTLS13); err != nil {
		t.Fatalf("TLS 1.3: %v", err)
	}
	if err := ctl.Do(ctx, "CONFIG", "SET", "tls-protocols", "TLSv1.2", "tls-ciphers", "ECDHE-ECDSA-AES256-GCM-SHA384").Err(); err != nil {
		t.Fatal(err)
	}
	if err := dial(tls.VersionTLS12, tls.VersionTLS12, tls.TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384); err != nil {
		t.Fatalf("the configured cipher: %v", err)
	}
	if err := dial(tls.VersionTLS12, tls.VersionTLS12, tls.TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256); err == nil {
		t.Fatal("a cipher outside tls-ciphers accepted")
	}
	if err := ctl.ConfigSet(ctx, "tls-ciphers", "NO-SUCH-CIPHER").Err(); err == nil ||
		!strings.HasSuffix(err.Error(), "Unable to update TLS configuration. Check server logs.") {
		t.Fatalf("unknown cipher: %v", err)
	}
}

// TestTLSOnLoops: TLS clients served by the event loops keep every property
// of the RESP path: large values in many records both ways, pipelining,
// blocking commands and Pub/Sub (which move the client to a goroutine
// mid-session), and CLIENT KILL.
func TestTLSOnLoops(t *testing.T) {
	p := newTestPKI(t)
	ctx := context.Background()
	forEachConnMode(t, func(t *testing.T, mutate func(*Config)) {
		s := startTLSServer(t, p, "yes", mutate)
		cfg := p.clientTLS(t, true)
		a := tlsClient(t, s.TLSAddr(), cfg)
		big := strings.Repeat("0123456789abcdef", 1<<16) // 1 MiB: ~64 records
		if err := a.Set(ctx, "big", big, 0).Err(); err != nil {
			t.Fatal(err)
		}
		if got := a.Get(ctx, "big").Val(); got != big {
			t.Fatalf("GET big: %d bytes", len(got))
		}
		pipe := a.Pipeline()
		for i := 0; i < 500; i++ {
			pipe.Incr(ctx, "n")
		}
		if _, err := pipe.Exec(ctx); err != nil {
			t.Fatal(err)
		}
		if got := a.Get(ctx, "n").Val(); got != "500" {
			t.Fatalf("n = %s", got)
		}
		// A blocking pop detaches the client; it keeps its TLS session.
		done := make(chan []string, 1)
		go func() { done <- a.BLPop(ctx, 5*time.Second, "q").Val() }()
		b := tlsClient(t, s.TLSAddr(), cfg)
		waitUntil(t, "BLPOP to block", func() bool {
			return strings.Contains(b.ClientList(ctx).Val(), "cmd=blpop")
		})
		b.RPush(ctx, "q", "x")
		if got := <-done; len(got) != 2 || got[1] != "x" {
			t.Fatalf("BLPOP %v", got)
		}
		if got := a.Get(ctx, "big").Val(); got != big {
			t.Fatal("after detaching: GET big differs")
		}
		sub := b.Subscribe(ctx, "ch")
		defer sub.Close()
		if _, err := sub.Receive(ctx); err != nil {
			t.Fatal(err)
		}
		a.Publish(ctx, "ch", "hello")
		if m, err := sub.ReceiveMessage(ctx); err != nil || m.Payload != "hello" {
			t.Fatalf("message %v %v", m, err)
		}
		// CLIENT KILL reaches a TLS client on a loop.
		c := tlsClient(t, s.TLSAddr(), cfg)
		id := c.ClientID(ctx).Val()
		if err := a.ClientKillByFilter(ctx, "ID", strconv.FormatInt(id, 10)).Err(); err != nil {
			t.Fatal(err)
		}
		waitUntil(t, "the killed client to go", func() bool {
			return !strings.Contains(a.ClientList(ctx).Val(), "id="+strconv.FormatInt(id, 10)+" ")
		})
	})
}

// coalescingConn holds a TLS client's second write (its last handshake
// flight) and sends it with the third (the first command), so the server's
// handshake reads the command too.
type coalescingConn struct {
	net.Conn
	writes int
	held   []byte
}

func (c *coalescingConn) Write(b []byte) (int, error) {
	c.writes++
	switch c.writes {
	case 2:
		c.held = append([]byte(nil), b...)
		return len(b), nil
	case 3:
		_, err := c.Conn.Write(append(c.held, b...))
		return len(b), err
	}
	return c.Conn.Write(b)
}

// TestTLSInputWithHandshake: a command that arrives with the end of the
// handshake is answered (it is already decrypted, so epoll would never
// report it).
func TestTLSInputWithHandshake(t *testing.T) {
	p := newTestPKI(t)
	forEachConnMode(t, func(t *testing.T, mutate func(*Config)) {
		s := startTLSServer(t, p, "yes", mutate)
		raw, err := net.Dial("tcp", s.TLSAddr())
		if err != nil {
			t.Fatal(err)
		}
		defer raw.Close()
		cfg := p.clientTLS(t, true)
		cfg.MinVersion = tls.VersionTLS13
		tc := tls.Client(&coalescingConn{Conn: raw}, cfg)
		if _, err := tc.Write([]byte("PING\r\n")); err != nil {
			t.Fatal(err)
		}
		_ = tc.SetReadDeadline(time.Now().Add(5 * time.Second))
		if line, err := bufio.NewReader(tc).ReadString('\n'); line != "+PONG\r\n" {
			t.Fatalf("got %q %v", line, err)
		}
	})
}

// TestTLSHandshakeTimeout: a peer that connects to the TLS port and never
// completes a handshake is disconnected, and Close does not wait for it.
func TestTLSHandshakeTimeout(t *testing.T) {
	p := newTestPKI(t)
	s := startServerPrepared(t, func(s *Server) { s.tls.handshakeTimeout = 200 * time.Millisecond },
		func(c *Config) { c.TLS = p.serverTLS("yes") })
	nc, err := net.Dial("tcp", s.TLSAddr())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	start := time.Now()
	_ = nc.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := nc.Read(make([]byte, 1)); err == nil || time.Since(start) > 3*time.Second {
		t.Fatalf("still connected after %v (err %v)", time.Since(start), err)
	}
	// One mid-handshake at Close.
	idle, err := net.Dial("tcp", s.TLSAddr())
	if err != nil {
		t.Fatal(err)
	}
	defer idle.Close()
	time.Sleep(50 * time.Millisecond)
	start = time.Now()
	s.Close()
	if d := time.Since(start); d > 2*time.Second {
		t.Fatalf("Close took %v", d)
	}
}

// TestTLSReloadUnderLoad: certificates swapped by CONFIG SET while clients
// keep connecting; every handshake gets one of the two, whole.
func TestTLSReloadUnderLoad(t *testing.T) {
	p := newTestPKI(t)
	ctx := context.Background()
	s := startTLSServer(t, p, "yes")
	c2, k2 := p.issue(t, "server2", 77, true)
	ctl := newClient(t, s)
	stop := make(chan struct{})
	errs := make(chan error, 4)
	for w := 0; w < 4; w++ {
		go func() {
			for {
				select {
				case <-stop:
					errs <- nil
					return
				default:
				}
				nc, err := tls.Dial("tcp", s.TLSAddr(), p.clientTLS(t, true))
				if err != nil {
					errs <- err
					return
				}
				if sn := nc.ConnectionState().PeerCertificates[0].SerialNumber.Int64(); sn != 2 && sn != 77 {
					errs <- fmt.Errorf("serial %d", sn)
				}
				nc.Close()
			}
		}()
	}
	for i := 0; i < 20; i++ {
		cert, key := p.certFile, p.keyFile
		if i%2 == 0 {
			cert, key = c2, k2
		}
		if err := ctl.Do(ctx, "CONFIG", "SET", "tls-cert-file", cert, "tls-key-file", key).Err(); err != nil {
			t.Fatal(err)
		}
		time.Sleep(5 * time.Millisecond)
	}
	close(stop)
	for w := 0; w < 4; w++ {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
}

// TestMemcachedTLSOnLoops: memcached over TLS on the event loops (and on
// goroutines): a value of many records both ways, pipelined requests, and
// a first request that arrives with the end of the handshake.
func TestMemcachedTLSOnLoops(t *testing.T) {
	p := newTestPKI(t)
	forEachConnMode(t, func(t *testing.T, mutate func(*Config)) {
		s := startServer(t, mutate, func(c *Config) {
			c.TLS = p.serverTLS("yes")
			c.TLS.Port, c.TLS.MemcachedPort = 0, -1
		})
		nc, err := tls.Dial("tcp", s.MemcachedTLSAddr(), p.clientTLS(t, true))
		if err != nil {
			t.Fatal(err)
		}
		defer nc.Close()
		_ = nc.SetDeadline(time.Now().Add(10 * time.Second))
		val := strings.Repeat("v", 500<<10)
		req := fmt.Sprintf("set big 7 0 %d\r\n%s\r\n", len(val), val)
		for i := 0; i < 50; i++ {
			req += fmt.Sprintf("set k%d 0 0 1\r\n%d\r\n", i, i%10)
		}
		req += "get big\r\n"
		go nc.Write([]byte(req))
		rd := bufio.NewReader(nc)
		for i := 0; i < 51; i++ {
			if l, err := rd.ReadString('\n'); l != "STORED\r\n" {
				t.Fatalf("reply %d: %q %v", i, l, err)
			}
		}
		if l, _ := rd.ReadString('\n'); l != fmt.Sprintf("VALUE big 7 %d\r\n", len(val)) {
			t.Fatalf("get: %q", l)
		}
		got := make([]byte, len(val)+2)
		if _, err := io.ReadFull(rd, got); err != nil || string(got[:len(val)]) != val {
			t.Fatalf("value: %v", err)
		}
		if l, _ := rd.ReadString('\n'); l != "END\r\n" {
			t.Fatalf("end: %q", l)
		}
		raw, err := net.Dial("tcp", s.MemcachedTLSAddr())
		if err != nil {
			t.Fatal(err)
		}
		defer raw.Close()
		cfg := p.clientTLS(t, true)
		cfg.MinVersion = tls.VersionTLS13
		tc := tls.Client(&coalescingConn{Conn: raw}, cfg)
		if _, err := tc.Write([]byte("get k3\r\n")); err != nil {
			t.Fatal(err)
		}
		_ = tc.SetReadDeadline(time.Now().Add(5 * time.Second))
		if l, err := bufio.NewReader(tc).ReadString('\n'); l != "VALUE k3 0 1\r\n" {
			t.Fatalf("first request with the handshake: %q %v", l, err)
		}
	})
}

// TestBusyScriptMemcachedTLSLeavesLoop: a memcached TLS client on a loop
// that meets a busy script leaves the loop with its TLS session and gets
// its reply once the script is killed.
func TestBusyScriptMemcachedTLSLeavesLoop(t *testing.T) {
	p := newTestPKI(t)
	s := startServer(t, func(c *Config) {
		c.Shards = 2
		c.TLS = p.serverTLS("yes")
		c.TLS.Port, c.TLS.MemcachedPort = 0, -1
	})
	nc, err := tls.Dial("tcp", s.MemcachedTLSAddr(), p.clientTLS(t, true))
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	rd := bufio.NewReader(nc)
	_ = nc.SetReadDeadline(time.Now().Add(5 * time.Second))
	fmt.Fprintf(nc, "set k 0 0 1\r\n7\r\n")
	if l, _ := rd.ReadString('\n'); l != "STORED\r\n" {
		t.Fatalf("set: %q", l)
	}
	ctl := dialRaw(t, s)
	ctl.do("CONFIG", "SET", "busy-reply-threshold", "300")
	ctl.reply()
	looper := dialRaw(t, s)
	looper.do("EVAL", "local i = 0 while true do i = i + 1 end", "0")
	waitBusy(t, s)
	fmt.Fprintf(nc, "get k\r\n")
	time.Sleep(100 * time.Millisecond)
	kill := dialRaw(t, s)
	kill.do("SCRIPT", "KILL")
	if got := kill.reply(); got[0] != "+OK" {
		t.Fatalf("SCRIPT KILL: %q", got)
	}
	_ = nc.SetReadDeadline(time.Now().Add(5 * time.Second))
	var got strings.Builder
	for !strings.HasSuffix(got.String(), "END\r\n") {
		l, err := rd.ReadString('\n')
		if err != nil {
			t.Fatalf("get after the script: %v (so far %q)", err, got.String())
		}
		got.WriteString(l)
	}
	if got.String() != "VALUE k 0 1\r\n7\r\nEND\r\n" {
		t.Fatalf("get: %q", got.String())
	}
	fmt.Fprintf(nc, "incr k 1\r\n")
	if l, _ := rd.ReadString('\n'); l != "8\r\n" {
		t.Fatalf("incr after leaving the loop: %q", l)
	}
}
