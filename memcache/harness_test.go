package memcache_test

import (
	"bufio"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/damselflydb/damselfly/memcache"
	"github.com/damselflydb/damselfly/netpoll"
	"github.com/damselflydb/damselfly/shard"
)

// startMemcache runs the memcached front end alone over a fresh store,
// served by two event loops as in the server (on Linux; elsewhere by a
// goroutine per connection). The loops run on io_uring where the kernel
// allows it, as the server's do, or on epoll with DAMSELFLY_EVENT_LOOP=epoll.
func startMemcache(t testing.TB, cfg memcache.Config) (string, *shard.Store) {
	return startMemcacheLoops(t, cfg, 2)
}

// startMemcacheLoops is startMemcache with n event loops (0: a goroutine
// per connection).
func startMemcacheLoops(t testing.TB, cfg memcache.Config, n int) (string, *shard.Store) {
	t.Helper()
	store := shard.NewStore(4, 16)
	cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	var wg sync.WaitGroup
	for range n {
		l, err := netpoll.NewIOUring(cfg.Logger, netpoll.IOUringOptions{})
		if err != nil || os.Getenv("DAMSELFLY_EVENT_LOOP") == "epoll" {
			if l != nil {
				l.Stop()
				l.Run()
			}
			l, err = netpoll.New(cfg.Logger)
		}
		if err != nil {
			t.Logf("no event loops: %v", err)
			break
		}
		cfg.Loops = append(cfg.Loops, l)
		wg.Add(1)
		go func() { defer wg.Done(); l.Run() }()
	}
	s := memcache.New(store, cfg)
	ln, err := s.Listen("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		s.Close()
		for _, l := range cfg.Loops {
			l.Stop()
		}
		wg.Wait()
	})
	return ln.Addr().String(), store
}

// startRealMemcached starts Debian's memcached on a free port, or skips.
func startRealMemcached(t testing.TB) string {
	t.Helper()
	bin, err := exec.LookPath("memcached")
	if err != nil {
		t.Skip("memcached not installed (apt-get install -y memcached); skipping the comparison with real memcached")
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	args := []string{"-p", fmt.Sprint(port), "-l", "127.0.0.1", "-U", "0", "-t", "1"}
	if os.Geteuid() == 0 {
		args = append(args, "-u", "root")
	}
	cmd := exec.Command(bin, args...)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	for i := 0; i < 100; i++ {
		if nc, err := net.Dial("tcp", addr); err == nil {
			nc.Close()
			return addr
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatal("memcached did not start")
	return ""
}

type rawConn struct {
	t  testing.TB
	nc net.Conn
	rd *bufio.Reader
}

func dial(t testing.TB, addr string) *rawConn {
	t.Helper()
	nc, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { nc.Close() })
	return &rawConn{t: t, nc: nc, rd: bufio.NewReader(nc)}
}

func (r *rawConn) send(s string) {
	r.t.Helper()
	r.nc.SetWriteDeadline(time.Now().Add(5 * time.Second))
	if _, err := r.nc.Write([]byte(s)); err != nil {
		r.t.Fatal(err)
	}
}

// lines reads n reply lines (without their CRLF).
func (r *rawConn) lines(n int) []string {
	r.t.Helper()
	r.nc.SetReadDeadline(time.Now().Add(5 * time.Second))
	var out []string
	for i := 0; i < n; i++ {
		line, err := r.rd.ReadString('\n')
		if err != nil {
			r.t.Fatalf("reading reply: %v (so far %q)", err, out)
		}
		out = append(out, strings.TrimSuffix(line, "\r\n"))
	}
	return out
}

var capture = regexp.MustCompile(`\{(\w+)\}`)

func unescape(s string) string {
	return strings.NewReplacer(`\r`, "\r", `\n`, "\n", `\x01`, "\x01", `\t`, "\t").Replace(s)
}

// TestScripts runs testdata/*.txt against Damselfly's memcached front end.
//
// Script format: "> line" sends line plus "\r\n"; "! bytes" sends bytes as
// they are (\r \n \t \x01 escapes); the lines that follow, up to a blank or
// directive line, are the exact reply lines expected ("\r\n" removed). In an
// expected line "{name}" matches a number and binds it, and "{name}" in a
// later request is replaced by it (CAS uniques differ between servers).
// "~ sleep 1100ms" waits; "~ eof" expects the server to close the
// connection (then reconnects); "~ big KEY N" sends "set KEY 0 0 N" with N
// bytes of data; "# " lines are comments; "<empty>" expects an empty line.
// Each file gets a fresh server, once served by event loops and once by a
// goroutine per connection.
func TestScripts(t *testing.T) {
	files, _ := filepath.Glob("testdata/*.txt")
	if len(files) == 0 {
		t.Fatal("no scripts in testdata")
	}
	for _, mode := range []struct {
		name  string
		loops int
	}{{"loops", 2}, {"goroutines", 0}} {
		for _, f := range files {
			t.Run(mode.name+"/"+filepath.Base(f), func(t *testing.T) {
				addr, _ := startMemcacheLoops(t, memcache.Config{}, mode.loops)
				runScript(t, f, addr)
			})
		}
	}
}

// TestScriptsAgainstMemcached runs the same scripts against Debian's real
// memcached, which proves every expected reply is memcached's own.
func TestScriptsAgainstMemcached(t *testing.T) {
	files, _ := filepath.Glob("testdata/*.txt")
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			runScript(t, f, startRealMemcached(t))
		})
	}
}

func runScript(t *testing.T, path, addr string) {
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	vars := map[string]string{}
	r := dial(t, addr)
	lines := strings.Split(string(data), "\n")
	isDirective := func(l string) bool {
		return l == "" || strings.HasPrefix(l, "> ") || strings.HasPrefix(l, "! ") || strings.HasPrefix(l, "# ") || strings.HasPrefix(l, "~ ")
	}
	for i := 0; i < len(lines); i++ {
		line := lines[i]
		subst := func(s string) string {
			return capture.ReplaceAllStringFunc(s, func(m string) string { return vars[m[1:len(m)-1]] })
		}
		switch {
		case strings.HasPrefix(line, "> "):
			r.send(unescape(subst(line[2:])) + "\r\n")
		case strings.HasPrefix(line, "! "):
			r.send(unescape(subst(line[2:])))
		case strings.HasPrefix(line, "~ big "):
			var key string
			var n int
			fmt.Sscanf(line[6:], "%s %d", &key, &n)
			r.send(fmt.Sprintf("set %s 0 0 %d\r\n%s\r\n", key, n, strings.Repeat("x", n)))
		case strings.HasPrefix(line, "~ sleep "):
			d, err := time.ParseDuration(strings.TrimPrefix(line, "~ sleep "))
			if err != nil {
				t.Fatal(err)
			}
			time.Sleep(d)
			continue
		case strings.HasPrefix(line, "~ eof"):
			r.nc.SetReadDeadline(time.Now().Add(5 * time.Second))
			if _, err := r.rd.ReadByte(); err != io.EOF {
				t.Errorf("%s:%d: want the connection closed, got %v", path, i+1, err)
			}
			r = dial(t, addr)
			continue
		default:
			continue
		}
		var want []string
		for i+1 < len(lines) && !isDirective(lines[i+1]) {
			i++
			want = append(want, lines[i])
		}
		got := r.lines(len(want))
		for k := range want {
			w := want[k]
			if w == "<empty>" {
				w = ""
			}
			re, err := regexp.Compile(pattern(unescape(w)))
			if err != nil {
				t.Fatalf("%s:%d: bad pattern %q: %v", path, i+1, want[k], err)
			}
			m := re.FindStringSubmatch(got[k])
			if m == nil {
				t.Errorf("%s:%d: %s\n got: %q\nwant: %q", path, i+1, line, got, want)
				break
			}
			for j, name := range re.SubexpNames() {
				if name != "" {
					vars[name] = m[j]
				}
			}
		}
	}
}

// pattern turns an expected line into an anchored regexp whose {name}
// placeholders capture numbers.
func pattern(want string) string {
	var b strings.Builder
	b.WriteString("^")
	last := 0
	for _, m := range capture.FindAllStringSubmatchIndex(want, -1) {
		b.WriteString(regexp.QuoteMeta(want[last:m[0]]))
		b.WriteString("(?P<" + want[m[2]:m[3]] + ">[0-9]+)")
		last = m[1]
	}
	b.WriteString(regexp.QuoteMeta(want[last:]))
	b.WriteString("$")
	return b.String()
}
