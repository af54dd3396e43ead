package server

import (
	"fmt"
	"os/exec"
	"strings"
	"testing"
)

// TestRedisCLI drives the server with the real redis-cli: plain commands,
// RESP3 (-3), a pipe of raw protocol (--pipe) and its start-up COMMAND DOCS
// query (which builds its hints).
func TestRedisCLI(t *testing.T) {
	cli, err := exec.LookPath("redis-cli")
	if err != nil {
		t.Skip("redis-cli not installed (apt-get install -y redis-tools); skipping the redis-cli tests")
	}
	s := startServer(t)
	run := func(stdin string, args ...string) string {
		t.Helper()
		cmd := exec.Command(cli, append([]string{"-p", fmt.Sprint(s.Port())}, args...)...)
		cmd.Stdin = strings.NewReader(stdin)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("redis-cli %v: %v\n%s", args, err, out)
		}
		return strings.TrimSpace(string(out))
	}
	if got := run("", "SET", "greeting", "hello world"); got != "OK" {
		t.Fatalf("SET: %q", got)
	}
	if got := run("", "GET", "greeting"); got != "hello world" {
		t.Fatalf("GET: %q", got)
	}
	if got := run("", "-3", "HELLO", "3"); !strings.Contains(got, "proto") {
		t.Fatalf("HELLO 3: %q", got)
	}
	if got := run("", "INCRBY", "n", "x"); got != "ERR value is not an integer or out of range" {
		t.Fatalf("INCRBY error: %q", got)
	}
	var pipe strings.Builder
	for i := 0; i < 1000; i++ {
		fmt.Fprintf(&pipe, "*3\r\n$3\r\nSET\r\n$%d\r\nk%d\r\n$1\r\nv\r\n", len(fmt.Sprint(i))+1, i)
	}
	if got := run(pipe.String(), "--pipe"); !strings.Contains(got, "errors: 0, replies: 1000") {
		t.Fatalf("--pipe: %q", got)
	}
	if got := run("", "DBSIZE"); got != "1001" {
		t.Fatalf("DBSIZE after --pipe: %q", got)
	}
	// Interactive mode reads commands from stdin, after fetching COMMAND DOCS.
	if got := run("PING\nDBSIZE\n"); !strings.Contains(got, "PONG") || !strings.Contains(got, "1001") {
		t.Fatalf("interactive: %q", got)
	}
}
