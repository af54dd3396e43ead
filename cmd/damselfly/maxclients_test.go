package main

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestTenThousandClients: Redis's default maxclients with the server in its
// own process, as deployed. 10,000 connections are served; the 10,001st
// gets Redis's error and is closed; a save still works and the clients
// already connected keep being answered.
func TestTenThousandClients(t *testing.T) {
	if testing.Short() {
		t.Skip("opens 10,000 connections")
	}
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil || lim.Cur < 10100 {
		t.Skipf("needs an open-files limit above 10100 for the test's own sockets (soft limit %d)", lim.Cur)
	}
	bin := buildBinary(t)
	p := start(t, bin, t.TempDir(), "--save", "")
	rssBefore := rssKB(t, p.cmd.Process.Pid)

	ctl := dialLine(t, p.port)
	// p.rc's pooled connection and ctl count too.
	conns := make([]net.Conn, 0, 10000)
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	for len(conns) < 9998 {
		c, err := net.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", p.port))
		if err != nil {
			t.Fatalf("connection %d: %v", len(conns)+3, err)
		}
		conns = append(conns, c)
	}
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		if n := ctl.infoInt(t, "connected_clients"); n == 10000 {
			break
		} else if time.Now().After(deadline) {
			t.Fatalf("connected_clients %d, want 10000", n)
		}
	}
	extra, err := net.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", p.port))
	if err != nil {
		t.Fatal(err)
	}
	defer extra.Close()
	extra.SetReadDeadline(time.Now().Add(10 * time.Second))
	line, err := bufio.NewReader(extra).ReadString('\n')
	if line != "-ERR max number of clients reached\r\n" {
		t.Fatalf("connection 10,001 got %q (%v)", line, err)
	}
	if got := ctl.do(t, "SAVE"); got != "+OK" {
		t.Fatalf("SAVE with 10,000 clients: %q", got)
	}
	// The first and the last of the flood are still served.
	for _, c := range []net.Conn{conns[0], conns[len(conns)-1]} {
		c.SetDeadline(time.Now().Add(10 * time.Second))
		fmt.Fprint(c, "*1\r\n$4\r\nPING\r\n")
		if l, err := bufio.NewReader(c).ReadString('\n'); l != "+PONG\r\n" {
			t.Fatalf("PING from an admitted client: %q (%v)", l, err)
		}
	}
	rssFull := rssKB(t, p.cmd.Process.Pid)
	for _, c := range conns {
		c.Close()
	}
	conns = nil
	for deadline := time.Now().Add(30 * time.Second); ctl.infoInt(t, "connected_clients") > 2; time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("connected_clients stays at %d after the flood closed", ctl.infoInt(t, "connected_clients"))
		}
	}
	t.Logf("RSS: %d KiB before, %d KiB with 10,000 clients, %d KiB after they left", rssBefore, rssFull, rssKB(t, p.cmd.Process.Pid))
}

// lineConn is a raw RESP connection for one-line replies and INFO.
type lineConn struct {
	nc net.Conn
	rd *bufio.Reader
}

func dialLine(t *testing.T, port int) *lineConn {
	t.Helper()
	nc, err := net.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", port))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { nc.Close() })
	return &lineConn{nc: nc, rd: bufio.NewReader(nc)}
}

// do sends an inline command and returns the first reply line; a bulk
// reply's body follows in rd.
func (c *lineConn) do(t *testing.T, cmd string) string {
	t.Helper()
	c.nc.SetDeadline(time.Now().Add(30 * time.Second))
	fmt.Fprint(c.nc, cmd+"\r\n")
	l, err := c.rd.ReadString('\n')
	if err != nil {
		t.Fatalf("%s: %v", cmd, err)
	}
	return strings.TrimSuffix(l, "\r\n")
}

func (c *lineConn) infoInt(t *testing.T, field string) int {
	t.Helper()
	head := c.do(t, "INFO clients")
	n, err := strconv.Atoi(strings.TrimPrefix(head, "$"))
	if err != nil {
		t.Fatalf("INFO reply %q", head)
	}
	body := make([]byte, n+2)
	if _, err := io.ReadFull(c.rd, body); err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(string(body), "\r\n") {
		if v, ok := strings.CutPrefix(l, field+":"); ok {
			x, _ := strconv.Atoi(v)
			return x
		}
	}
	t.Fatalf("INFO has no %s", field)
	return 0
}

func rssKB(t *testing.T, pid int) int {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return -1
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "VmRSS:"); ok {
			n, _ := strconv.Atoi(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")))
			return n
		}
	}
	return -1
}
