package server

import (
	"bufio"
	"context"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// nonLoopbackIP is an address of this machine that is not loopback, so a
// test can connect as a "remote" client; "" when there is none.
func nonLoopbackIP() string {
	addrs, _ := net.InterfaceAddrs()
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok && n.IP.To4() != nil && !n.IP.IsLoopback() {
			return n.IP.String()
		}
	}
	return ""
}

func readLine(t *testing.T, nc net.Conn) string {
	t.Helper()
	_ = nc.SetReadDeadline(time.Now().Add(5 * time.Second))
	line, err := bufio.NewReader(nc).ReadString('\n')
	if err != nil {
		t.Fatalf("reading: %v (got %q)", err, line)
	}
	return strings.TrimRight(line, "\r\n")
}

// TestMaxClients: connections past maxclients, counted over the RESP and
// memcached ports, get Redis's (memcached's) error and are closed; those
// already open keep being served; CONFIG SET maxclients applies at once.
func TestMaxClients(t *testing.T) {
	s := startServer(t, func(c *Config) { c.MaxClients = 20; c.MemcachedPort = -1 })
	ctx := context.Background()
	var conns []*rawConn
	for i := 0; i < 19; i++ {
		r := dialRaw(t, s)
		r.do("PING")
		if got := r.reply(); got[0] != "+PONG" {
			t.Fatal(got)
		}
		conns = append(conns, r)
	}
	mc, err := net.Dial("tcp", s.MemcachedAddr())
	if err != nil {
		t.Fatal(err)
	}
	defer mc.Close()
	mc.Write([]byte("version\r\n"))
	if got := readLine(t, mc); !strings.HasPrefix(got, "VERSION") {
		t.Fatalf("memcached: %q", got)
	}
	// 20 open: the next RESP and memcached connections are refused.
	over := dialRaw(t, s)
	over.do("PING")
	if got := over.reply(); got[0] != "-ERR max number of clients reached" {
		t.Fatalf("21st connection: %q", got)
	}
	mc2, err := net.Dial("tcp", s.MemcachedAddr())
	if err != nil {
		t.Fatal(err)
	}
	defer mc2.Close()
	if got := readLine(t, mc2); got != "ERROR Too many open connections" {
		t.Fatalf("memcached past maxclients: %q", got)
	}
	// The open ones are still served.
	conns[0].do("SET", "k", "v")
	if got := conns[0].reply(); got[0] != "+OK" {
		t.Fatal(got)
	}
	conns[1].do("INFO", "stats")
	info := strings.Join(conns[1].reply(), "\n")
	if !strings.Contains(info, "rejected_connections:2") {
		t.Fatalf("want rejected_connections:2 in\n%s", info)
	}
	// Raising the limit lets new clients in at once.
	conns[2].do("CONFIG", "SET", "maxclients", "100")
	if got := conns[2].reply(); got[0] != "+OK" {
		t.Fatal(got)
	}
	rdb := newClient(t, s)
	if err := rdb.Ping(ctx).Err(); err != nil {
		t.Fatalf("after raising maxclients: %v", err)
	}
	if got := infoField(t, rdb, "clients", "maxclients"); got != 100 {
		t.Fatalf("INFO maxclients %d", got)
	}
}

// TestMemcachedPortAccess: the memcached protocol has no login, so with a
// password (or in protected mode) only loopback clients may use its port.
func TestMemcachedPortAccess(t *testing.T) {
	ip := nonLoopbackIP()
	if ip == "" {
		t.Skip("no non-loopback address to connect from")
	}
	for _, tc := range []struct {
		name      string
		pass      string
		protected bool
		refused   bool
	}{
		{"requirepass", "pw", false, true},
		{"protected-mode", "", true, true},
		{"requirepass+protected", "pw", true, true},
		{"open", "", false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := startServer(t, func(c *Config) {
				c.Bind, c.MemcachedPort, c.RequirePass, c.ProtectedMode = "0.0.0.0", -1, tc.pass, tc.protected
			})
			_, port, _ := net.SplitHostPort(s.MemcachedAddr())
			remote, err := net.Dial("tcp", net.JoinHostPort(ip, port))
			if err != nil {
				t.Fatal(err)
			}
			defer remote.Close()
			remote.Write([]byte("set k 0 0 1\r\nx\r\n"))
			got := readLine(t, remote)
			if tc.refused != strings.HasPrefix(got, "SERVER_ERROR the memcached protocol has no authentication") {
				t.Fatalf("remote client got %q", got)
			}
			if tc.refused {
				if _, err := bufio.NewReader(remote).ReadByte(); err == nil {
					t.Fatal("connection still open")
				}
				{
					rdb := redis.NewClient(&redis.Options{Addr: s.Addr(), Password: tc.pass})
					defer rdb.Close()
					if n := rdb.Exists(context.Background(), "k").Val(); n != 0 {
						t.Fatal("a refused client wrote k")
					}
				}
			}
			// Loopback clients are always served.
			local, err := net.Dial("tcp", net.JoinHostPort("127.0.0.1", port))
			if err != nil {
				t.Fatal(err)
			}
			defer local.Close()
			local.Write([]byte("version\r\n"))
			if got := readLine(t, local); !strings.HasPrefix(got, "VERSION") {
				t.Fatalf("loopback client got %q", got)
			}
		})
	}
}

// TestProtectedActions: DEBUG and CONFIG SET dir/dbfilename follow
// enable-debug-command / enable-protected-configs: refused by default,
// allowed with yes, and with local for loopback clients only.
func TestProtectedActions(t *testing.T) {
	ctx := context.Background()
	denied := "ERR DEBUG command not allowed."
	for _, tc := range []struct {
		setting string
		allowed bool
	}{{"", false}, {"no", false}, {"yes", true}, {"local", true}} {
		s := startServer(t, func(c *Config) { c.EnableDebugCommand, c.EnableProtectedConfigs = tc.setting, tc.setting })
		rdb := newClient(t, s)
		err := rdb.Do(ctx, "DEBUG", "SLEEP", "0").Err()
		if tc.allowed != (err == nil) || (err != nil && !strings.HasPrefix(err.Error(), denied)) {
			t.Errorf("%q: DEBUG SLEEP 0: %v", tc.setting, err)
		}
		err = rdb.ConfigSet(ctx, "dir", t.TempDir()).Err()
		if tc.allowed != (err == nil) || (err != nil && !strings.Contains(err.Error(), "can't set protected config")) {
			t.Errorf("%q: CONFIG SET dir: %v", tc.setting, err)
		}
	}
	// "local" refuses clients from another host.
	ip := nonLoopbackIP()
	if ip == "" {
		return
	}
	s := startServer(t, func(c *Config) {
		c.Bind, c.RequirePass, c.EnableDebugCommand, c.EnableProtectedConfigs = "0.0.0.0", "pw", "local", "local"
	})
	_, port, _ := net.SplitHostPort(s.Addr())
	remote := redis.NewClient(&redis.Options{Addr: net.JoinHostPort(ip, port), Password: "pw"})
	defer remote.Close()
	if err := remote.Do(ctx, "DEBUG", "SLEEP", "0").Err(); err == nil || !strings.HasPrefix(err.Error(), denied) {
		t.Errorf("remote DEBUG with local: %v", err)
	}
	if err := remote.ConfigSet(ctx, "dbfilename", "passwd").Err(); err == nil || !strings.Contains(err.Error(), "can't set protected config") {
		t.Errorf("remote CONFIG SET dbfilename with local: %v", err)
	}
}
