// Package redistest starts a real redis-server for the tests that compare
// Damselfly with it.
//
// Picking a free port and handing it to another process is racy: between
// the probe listener's close and redis-server's bind, any process on the
// machine (another test binary's server on port 0, a client's ephemeral
// source port) may take the port. redis-server then exits with "Address
// already in use" while the test's dial reaches whoever took the port, and
// the comparison silently runs against the wrong server. Start therefore
// returns only once the server answering on the port reports the started
// process's pid in INFO, and retries on a fresh port when the process
// exits during start-up.
//
// Start also waits for INFO's loading:0: redis-server answers INFO and
// DEBUG (both flagged "loading") while it is still reading its AOF or
// dump, so a DEBUG DIGEST taken earlier sees a partial dataset.
package redistest

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// Server is a running redis-server, killed by the test's cleanup.
type Server struct {
	Addr string // 127.0.0.1:port
	Port int
	Pid  int
}

// Start runs redis-server (bin, or redis-server from PATH when bin is
// empty; the test is skipped when that is missing) with --port and --bind
// 127.0.0.1 followed by args, and waits until it answers as itself.
func Start(t testing.TB, bin string, args ...string) *Server {
	t.Helper()
	if bin == "" {
		path, err := exec.LookPath("redis-server")
		if err != nil {
			t.Skip("redis-server not installed (apt-get install -y redis-server): skipping the comparison with real Redis")
		}
		bin = path
	}
	var lastOut string
	for attempt := 0; attempt < 5; attempt++ {
		s, out, err := try(t, bin, args)
		if err == nil {
			return s
		}
		lastOut = fmt.Sprintf("%v\n%s", err, out)
	}
	t.Fatalf("redis-server did not start after 5 attempts: %s", lastOut)
	return nil
}

// lockedBuffer collects the process's output while it runs.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

func try(t testing.TB, bin string, args []string) (*Server, string, error) {
	port, err := freePort()
	if err != nil {
		return nil, "", err
	}
	all := append([]string{"--port", strconv.Itoa(port), "--bind", "127.0.0.1"}, args...)
	cmd := exec.Command(bin, all...)
	out := &lockedBuffer{}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		return nil, "", err
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	kill := func() { _ = cmd.Process.Kill(); <-exited }
	s := &Server{Addr: net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), Port: port, Pid: cmd.Process.Pid}
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); {
		select {
		case <-exited:
			return nil, out.String(), fmt.Errorf("redis-server exited during start-up (port %d)", port)
		default:
		}
		pid, loading, err := answering(s.Addr, requirePass(args))
		switch {
		case err == nil && pid == s.Pid && loading:
			// Ours, still reading its data: wait.
		case err == nil && pid == s.Pid:
			t.Cleanup(kill)
			return s, "", nil
		case err == nil:
			// Another process owns the port; ours cannot bind and will exit.
			kill()
			return nil, out.String(), fmt.Errorf("port %d is served by pid %d, not by redis-server %d", port, pid, s.Pid)
		}
		time.Sleep(20 * time.Millisecond)
	}
	kill()
	return nil, out.String(), fmt.Errorf("redis-server on port %d did not answer", port)
}

func freePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

// requirePass is the --requirepass among args, the default user's
// password that INFO then needs.
func requirePass(args []string) string {
	for i := 0; i+1 < len(args); i++ {
		if args[i] == "--requirepass" {
			return args[i+1]
		}
	}
	return ""
}

// answering asks whoever listens on addr for INFO's process_id and
// whether it is still loading, authenticating first when pass is set.
func answering(addr, pass string) (pid int, loading bool, err error) {
	c, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		return 0, false, err
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(2 * time.Second))
	r := bufio.NewReader(c)
	if pass != "" {
		auth := fmt.Sprintf("*2\r\n$4\r\nAUTH\r\n$%d\r\n%s\r\n", len(pass), pass)
		if _, err := c.Write([]byte(auth)); err != nil {
			return 0, false, err
		}
		if line, err := r.ReadString('\n'); err != nil || !strings.HasPrefix(line, "+OK") {
			return 0, false, fmt.Errorf("AUTH: %q %v", line, err)
		}
	}
	if _, err := c.Write([]byte("*1\r\n$4\r\nINFO\r\n")); err != nil {
		return 0, false, err
	}
	head, err := r.ReadString('\n')
	if err != nil {
		return 0, false, err
	}
	if !strings.HasPrefix(head, "$") {
		return 0, false, fmt.Errorf("INFO: %s", strings.TrimSpace(head))
	}
	n, err := strconv.Atoi(strings.TrimSpace(head[1:]))
	if err != nil || n < 0 {
		return 0, false, fmt.Errorf("INFO: bad length %q", head)
	}
	body := make([]byte, n+2)
	if _, err := io.ReadFull(r, body); err != nil {
		return 0, false, err
	}
	pid = -1
	for _, line := range strings.Split(string(body), "\r\n") {
		if v, ok := strings.CutPrefix(line, "process_id:"); ok {
			pid, _ = strconv.Atoi(v)
		}
		if line == "loading:1" {
			loading = true
		}
	}
	if pid < 0 {
		return 0, false, fmt.Errorf("INFO has no process_id")
	}
	return pid, loading, nil
}
