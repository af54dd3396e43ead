package server

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// startUnixServer runs a server that also listens on a Unix socket in a
// temporary directory and returns the server and the socket's path.
func startUnixServer(t *testing.T, mutate ...func(*Config)) (*Server, string) {
	t.Helper()
	// Socket paths are limited to 108 bytes: t.TempDir() can be longer.
	dir, err := os.MkdirTemp("", "dfsock")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	path := filepath.Join(dir, "damselfly.sock")
	s := startServer(t, append([]func(*Config){func(c *Config) { c.UnixSocket = path }}, mutate...)...)
	return s, path
}

// TestScriptsOverUnixSocket runs every data-driven script (the ones proven
// against real Redis by TestScriptsAgainstRedis) over the Unix socket.
func TestScriptsOverUnixSocket(t *testing.T) {
	files, _ := filepath.Glob("testdata/*.txt")
	if len(files) == 0 {
		t.Fatal("no scripts in testdata")
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			// Redis's defaults, so replies compare with redis-server's.
			_, path := startUnixServer(t, func(c *Config) { c.EnableDebugCommand, c.EnableProtectedConfigs = "", "" })
			runScript(t, f, path)
		})
	}
}

// TestUnixSocketOnEventLoop: a Unix-socket client is owned by an event loop
// (unless loops are off), and a blocking command detaches it to a goroutine
// and still gets its reply over the socket.
func TestUnixSocketOnEventLoop(t *testing.T) {
	s, path := startUnixServer(t)
	ctx := context.Background()
	rdb := redis.NewClient(&redis.Options{Network: "unix", Addr: path, Protocol: 2})
	defer rdb.Close()
	if err := rdb.Set(ctx, "k", "v", 0).Err(); err != nil {
		t.Fatal(err)
	}
	if got := rdb.Get(ctx, "k").Val(); got != "v" {
		t.Fatalf("GET over the socket: %q", got)
	}
	var unix *Client
	for _, c := range s.clientList() {
		if c.isUnix {
			unix = c
		}
	}
	if unix == nil {
		t.Fatal("no Unix-socket client in the client list")
	}
	unix.connMu.Lock()
	onLoop := unix.loop != nil
	unix.connMu.Unlock()
	if s.loops != nil && !onLoop {
		t.Fatal("Unix-socket client is not served by an event loop")
	}
	if list := rdb.ClientList(ctx).Val(); !strings.Contains(list, "addr=/unixsocket:0") {
		t.Fatalf("CLIENT LIST: %q", list)
	}

	// BLPOP detaches the connection; LPUSH over TCP wakes it.
	res := make(chan []string, 1)
	go func() { res <- rdb.BLPop(ctx, 5*time.Second, "q").Val() }()
	tcp := newClient(t, s)
	for !strings.Contains(tcp.ClientList(ctx).Val(), "cmd=blpop") {
		time.Sleep(5 * time.Millisecond)
	}
	if err := tcp.LPush(ctx, "q", "x").Err(); err != nil {
		t.Fatal(err)
	}
	if got := <-res; len(got) != 2 || got[1] != "x" {
		t.Fatalf("BLPOP over the socket: %q", got)
	}
	if got := rdb.Get(ctx, "k").Val(); got != "v" {
		t.Fatalf("GET after detaching: %q", got)
	}
}

// TestUnixSocketProtectedMode: with protected mode on and no password the
// server refuses remote TCP peers, but a Unix socket is local (as in Redis).
func TestUnixSocketProtectedMode(t *testing.T) {
	_, path := startUnixServer(t, func(c *Config) { c.ProtectedMode = true; c.Bind = "0.0.0.0" })
	r := dialAddr(t, path)
	r.do("PING")
	if got := r.reply(); got[0] != "+PONG" {
		t.Fatalf("PING over the socket in protected mode: %q", got)
	}
}

// TestUnixSocketRequirePass: the password applies to Unix-socket clients
// as to TCP ones.
func TestUnixSocketRequirePass(t *testing.T) {
	_, path := startUnixServer(t, func(c *Config) { c.RequirePass = "secret" })
	r := dialAddr(t, path)
	r.do("GET", "k")
	if got := r.reply(); got[0] != "-NOAUTH Authentication required." {
		t.Fatalf("before AUTH: %q", got)
	}
	r.do("AUTH", "secret")
	if got := r.reply(); got[0] != "+OK" {
		t.Fatalf("AUTH: %q", got)
	}
}

// TestUnixSocketSlowSubscriber: the pubsub output buffer limit disconnects
// a subscriber that does not read, over the socket too.
func TestUnixSocketSlowSubscriber(t *testing.T) {
	s, path := startUnixServer(t)
	ctx := context.Background()
	pub := newClient(t, s)
	if err := pub.ConfigSet(ctx, "client-output-buffer-limit", "pubsub 4mb 1mb 60").Err(); err != nil {
		t.Fatal(err)
	}
	nc, err := net.Dial("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	nc.(*net.UnixConn).SetReadBuffer(4096)
	nc.Write([]byte("*2\r\n$9\r\nSUBSCRIBE\r\n$4\r\nslow\r\n"))
	for pub.PubSubNumSub(ctx, "slow").Val()["slow"] != 1 {
		time.Sleep(time.Millisecond)
	}
	payload := strings.Repeat("x", 16<<10)
	sent := 0
	for start := time.Now(); pub.PubSubNumSub(ctx, "slow").Val()["slow"] == 1; {
		for range 32 {
			if err := pub.Publish(ctx, "slow", payload).Err(); err != nil {
				t.Fatal(err)
			}
			sent += len(payload)
		}
		if sent > 256<<20 || time.Since(start) > 20*time.Second {
			t.Fatalf("slow subscriber not disconnected after %d MB", sent>>20)
		}
	}
	if sent > 64<<20 {
		t.Errorf("disconnected only after %d MB", sent>>20)
	}
}

// TestUnixSocketPerm: --unixsocketperm sets the socket file's mode (octal,
// as Redis), CONFIG GET reports it, and 0 leaves the umask's mode.
func TestUnixSocketPerm(t *testing.T) {
	for _, perm := range []os.FileMode{0o700, 0o770, 0} {
		s, path := startUnixServer(t, func(c *Config) { c.UnixSocketPerm = perm })
		fi, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode()&os.ModeSocket == 0 {
			t.Fatalf("%s is %v, not a socket", path, fi.Mode())
		}
		if perm != 0 && fi.Mode().Perm() != perm {
			t.Fatalf("unixsocketperm %o: mode %o", perm, fi.Mode().Perm())
		}
		r := dialAddr(t, s.Addr())
		r.do("CONFIG", "GET", "unixsocketperm")
		want := map[os.FileMode]string{0o700: "700", 0o770: "770", 0: "0"}[perm]
		if got := r.reply(); strings.Join(got, " ") != "*2 $14 unixsocketperm $"+itoa(int64(len(want)))+" "+want {
			t.Fatalf("CONFIG GET unixsocketperm with %o: %q", perm, got)
		}
		r.do("CONFIG", "GET", "unixsocket")
		if got := r.reply(); len(got) != 5 || got[4] != path {
			t.Fatalf("CONFIG GET unixsocket: %q", got)
		}
		r.do("CONFIG", "SET", "unixsocketperm", "777")
		if got := r.reply(); !strings.HasPrefix(got[0], "-ERR") {
			t.Fatalf("CONFIG SET unixsocketperm (immutable): %q", got)
		}
	}
}

func TestParseUnixSocketPerm(t *testing.T) {
	for in, want := range map[string]os.FileMode{"0": 0, "700": 0o700, "0770": 0o770, "777": 0o777, "1": 1} {
		if got, err := ParseUnixSocketPerm(in); err != nil || got != want {
			t.Errorf("%q: %o, %v; want %o", in, got, err, want)
		}
	}
	for _, in := range []string{"", "800", "1000", "-1", "0o777", "7_00", "abc", "0x1ff"} {
		if _, err := ParseUnixSocketPerm(in); err == nil {
			t.Errorf("%q: accepted", in)
		}
	}
}
