package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestUnusableDirRefused: with saving on, a --dir that cannot hold dumps
// stops the server at start with a message saying why (the Docker test
// covers a bind-mounted directory the container's uid may not write).
func TestUnusableDirRefused(t *testing.T) {
	bin := buildBinary(t)
	file := filepath.Join(t.TempDir(), "file")
	os.WriteFile(file, nil, 0o644)
	cases := map[string]string{file: "not a directory", filepath.Join(t.TempDir(), "missing"): "no such file"}
	if os.Getuid() != 0 { // root writes anywhere
		ro := t.TempDir()
		os.Chmod(ro, 0o555)
		cases[ro] = "is not writable"
	}
	for dir, want := range cases {
		out, err := exec.Command(bin, "--port", "0", "--bind", "127.0.0.1", "--dir", dir).CombinedOutput()
		if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 1 || !strings.Contains(string(out), want) {
			t.Errorf("--dir %s: %v, output %q; want exit 1 and %q", dir, err, out, want)
		}
	}
}
