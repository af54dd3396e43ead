package main

import (
	"context"
	"os/exec"
	"strings"
	"testing"

	"github.com/damselflydb/damselfly/server"
)

// TestFlagsAndVersion: flags use Redis's kebab-case names and still accept
// the older snake_case spellings; --version and INFO give Damselfly's own
// version while redis_version stays the protocol level.
func TestFlagsAndVersion(t *testing.T) {
	bin := buildBinary(t)
	out, err := exec.Command(bin, "--version").CombinedOutput()
	if err != nil || !strings.Contains(string(out), "damselfly "+server.Version) {
		t.Fatalf("--version: %v %q", err, out)
	}
	for _, flag := range []string{"--memcached-port", "--memcached_port"} {
		out, err := exec.Command(bin, flag, "99999").CombinedOutput()
		if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 2 || !strings.Contains(string(out), "--memcached-port 99999") {
			t.Errorf("%s 99999: %v %q", flag, err, out)
		}
	}
	p := start(t, bin, t.TempDir(), "--save", "", "--repl_backlog_size", "2mb", "--max_item_size", "2mb", "--max-item-size", "3mb")
	info := p.rc.Info(context.Background(), "server", "replication").Val()
	for _, want := range []string{"redis_version:" + server.RedisVersion, "damselfly_version:" + server.Version, "repl_backlog_size:2097152"} {
		if !strings.Contains(info, want+"\r\n") {
			t.Errorf("INFO lacks %q", want)
		}
	}
}
