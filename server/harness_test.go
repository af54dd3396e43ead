package server

import (
	"context"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/damselflydb/damselfly/internal/redistest"
	"github.com/damselflydb/damselfly/resp"
	"github.com/redis/go-redis/v9"
)

// startServer runs a server on a free loopback port for the test's duration.
// DAMSELFLY_GOROUTINE_PER_CONN=1 runs the tests with a goroutine per
// connection instead of the event loops; DAMSELFLY_EVENT_LOOP=epoll or
// io_uring picks the loops' kind (Config.EventLoop).
func startServer(t testing.TB, mutate ...func(*Config)) *Server {
	t.Helper()
	return startServerPrepared(t, nil, mutate...)
}

// startServerPrepared is startServer with prepare run between New and Start.
func startServerPrepared(t testing.TB, prepare func(*Server), mutate ...func(*Config)) *Server {
	t.Helper()
	cfg := Config{Port: 0, Bind: "127.0.0.1", Shards: 4, DBNum: 16, Dir: t.TempDir(), DBFilename: "dump.rdb",
		// Tests use DEBUG and CONFIG SET dir; admission_test.go checks the defaults.
		EnableDebugCommand: ProtectedLocal, EnableProtectedConfigs: ProtectedLocal,
		Logger:           slog.New(slog.NewTextHandler(io.Discard, nil)),
		GoroutinePerConn: os.Getenv("DAMSELFLY_GOROUTINE_PER_CONN") == "1",
		EventLoop:        os.Getenv("DAMSELFLY_EVENT_LOOP")}
	if testing.Verbose() {
		cfg.Logger = slog.New(slog.NewTextHandler(os.Stderr, nil))
	}
	for _, m := range mutate {
		m(&cfg)
	}
	s := New(cfg)
	if prepare != nil {
		prepare(s)
	}
	if err := s.Start(cfg); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func newClient(t testing.TB, s *Server) *redis.Client {
	t.Helper()
	// go-redis's default 3 s read timeout is shorter than a DEBUG POPULATE
	// of 400k keys under -race on a loaded CI machine (a CI run timed out);
	// a real stall still fails the test, later.
	rdb := redis.NewClient(&redis.Options{Addr: s.Addr(), Protocol: 2, ReadTimeout: 30 * time.Second})
	t.Cleanup(func() { rdb.Close() })
	return rdb
}

// rawConn is a plain TCP connection speaking RESP by hand.
type rawConn struct {
	t  testing.TB
	nc net.Conn
	rd *resp.Reader
}

func dialRaw(t testing.TB, s *Server) *rawConn { return dialAddr(t, s.Addr()) }

// dialAddr dials host:port over TCP, or a Unix socket when addr is a path.
func dialAddr(t testing.TB, addr string) *rawConn {
	t.Helper()
	network := "tcp"
	if strings.HasPrefix(addr, "/") {
		network = "unix"
	}
	nc, err := net.Dial(network, addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { nc.Close() })
	return &rawConn{t: t, nc: nc, rd: resp.NewReader(nc)}
}

func (r *rawConn) send(s string) {
	r.t.Helper()
	r.nc.SetWriteDeadline(time.Now().Add(5 * time.Second))
	if _, err := r.nc.Write([]byte(s)); err != nil {
		r.t.Fatal(err)
	}
}

// do sends args as a RESP array.
func (r *rawConn) do(args ...string) {
	r.send(string(resp.AppendCommandStrings(nil, args...)))
}

// reply reads one whole RESP value and returns its lines (without CRLF).
func (r *rawConn) reply() []string {
	r.t.Helper()
	r.nc.SetReadDeadline(time.Now().Add(5 * time.Second))
	v, err := r.rd.ReadValue()
	if err != nil {
		r.t.Fatalf("reading reply: %v", err)
	}
	return replyLines(v, nil)
}

// replyLines renders v as the testdata scripts spell a reply: each RESP
// line as sent, a bulk's payload on a line of its own.
func replyLines(v resp.Value, lines []string) []string {
	switch v.Type {
	case '$', '=', '!':
		lines = append(lines, string(v.Type)+strconv.FormatInt(v.Int, 10))
		if v.Int >= 0 {
			lines = append(lines, renderPayload(v.Str))
		}
	case '*', '~', '>', '%', '|':
		lines = append(lines, string(v.Type)+strconv.FormatInt(v.Int, 10))
		for _, e := range v.Elems {
			lines = replyLines(e, lines)
		}
	default:
		lines = append(lines, string(v.Type)+string(v.Str))
	}
	return lines
}

// TestScripts runs the data-driven cases in testdata/*.txt. Each case is a
// request line starting with "> " (arguments split on spaces; "quoted" args
// may hold spaces) followed by the exact reply, one RESP line per line
// ("\r\n" removed; a bulk's payload on its own line). "! " sends raw bytes
// (with \r\n escapes) instead; "~ sleep 1100ms" waits; "# " lines are
// comments and a blank line separates cases (a fresh connection and an empty
// server per file).
func TestScripts(t *testing.T) {
	files, _ := filepath.Glob("testdata/*.txt")
	if len(files) == 0 {
		t.Fatal("no scripts in testdata")
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			// Redis's defaults, so replies compare with redis-server's.
			s := startServer(t, func(c *Config) { c.EnableDebugCommand, c.EnableProtectedConfigs = "", "" })
			runScript(t, f, s.Addr())
		})
	}
}

// TestScriptsAgainstRedis runs the same cases against a real redis-server,
// which proves the expected replies are Redis's own.
func TestScriptsAgainstRedis(t *testing.T) {
	addr := startRedis(t)
	files, _ := filepath.Glob("testdata/*.txt")
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			r := dialAddr(t, addr)
			r.do("FLUSHALL")
			r.reply()
			runScript(t, f, addr)
		})
	}
}

// startRedis starts Debian's redis-server on a free port, or skips.
func startRedis(t testing.TB, extra ...string) string {
	t.Helper()
	args := append([]string{"--save", "", "--appendonly", "no", "--dir", t.TempDir()}, extra...)
	return redistest.Start(t, "", args...).Addr
}

func runScript(t *testing.T, path, addr string) {
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	r := dialAddr(t, addr)
	var r2 *rawConn // the second connection ("2> ", "2<"), dialed on first use
	lines := strings.Split(string(data), "\n")
	for i := 0; i < len(lines); i++ {
		line := lines[i]
		switch {
		case strings.HasPrefix(line, "2> ") || line == "2<":
			// A second connection (a subscriber): "2> CMD" sends on it,
			// "2<" reads its next reply or push; expected lines follow.
			if r2 == nil {
				r2 = dialAddr(t, addr)
			}
			if line != "2<" {
				args, ok := splitArgs([]byte(line[3:]), nil)
				if !ok {
					t.Fatalf("%s:%d: bad request line", path, i+1)
				}
				strs := make([]string, len(args))
				for k, a := range args {
					strs[k] = string(a)
				}
				r2.do(strs...)
			}
			var want []string
			for i+1 < len(lines) && lines[i+1] != "" && !strings.HasPrefix(lines[i+1], "> ") && !strings.HasPrefix(lines[i+1], "2> ") &&
				lines[i+1] != "2<" && !strings.HasPrefix(lines[i+1], "! ") && !strings.HasPrefix(lines[i+1], "# ") && !strings.HasPrefix(lines[i+1], "~ ") {
				i++
				want = append(want, lines[i])
			}
			if len(want) == 0 {
				continue
			}
			got := r2.reply()
			if strings.Join(got, "\n") != strings.Join(want, "\n") {
				t.Errorf("%s:%d: %s\n got: %q\nwant: %q", path, i+1, line, got, want)
			}
		case strings.HasPrefix(line, "> ") || strings.HasPrefix(line, "! "):
			if line[0] == '>' {
				args, ok := splitArgs([]byte(line[2:]), nil)
				if !ok {
					t.Fatalf("%s:%d: bad request line", path, i+1)
				}
				strs := make([]string, len(args))
				for k, a := range args {
					strs[k] = string(a)
				}
				r.do(strs...)
			} else {
				r.send(strings.ReplaceAll(strings.ReplaceAll(line[2:], `\r`, "\r"), `\n`, "\n"))
			}
			var want []string
			for i+1 < len(lines) && lines[i+1] != "" && !strings.HasPrefix(lines[i+1], "> ") && !strings.HasPrefix(lines[i+1], "2> ") && lines[i+1] != "2<" &&
				!strings.HasPrefix(lines[i+1], "! ") && !strings.HasPrefix(lines[i+1], "# ") && !strings.HasPrefix(lines[i+1], "~ ") {
				i++
				want = append(want, lines[i])
			}
			if len(want) == 0 {
				continue
			}
			got := r.reply()
			if strings.Join(got, "\n") != strings.Join(want, "\n") {
				t.Errorf("%s:%d: %s\n got: %q\nwant: %q", path, i+1, line, got, want)
			}
		case strings.HasPrefix(line, "~ sleep "):
			d, err := time.ParseDuration(strings.TrimPrefix(line, "~ sleep "))
			if err != nil {
				t.Fatal(err)
			}
			time.Sleep(d)
		case strings.HasPrefix(line, "~ eof"):
			r.nc.SetReadDeadline(time.Now().Add(5 * time.Second))
			if _, err := r.rd.ReadByte(); err != io.EOF {
				t.Errorf("%s:%d: want the connection closed, got %v", path, i+1, err)
			}
			r = dialAddr(t, addr)
		}
	}
}

var _ = context.Background

// renderPayload shows a bulk's bytes on one line: as they are when
// printable, Go-quoted when empty or holding control bytes.
func renderPayload(b []byte) string {
	if len(b) == 0 {
		return `""`
	}
	for _, ch := range b {
		if ch < ' ' || ch > '~' {
			return strconv.Quote(string(b))
		}
	}
	return string(b)
}

// freePort returns a port nobody listens on now.
func freePort(t *testing.T) int {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}
