package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestAOFFlagsAndCorruptAOF: --appendonly yes --appendfsync always log
// every write; a restart loads them; a damaged incr file stops start-up
// naming the file and the offset, and is left alone.
func TestAOFFlagsAndCorruptAOF(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	bin := buildBinary(t)
	dir := t.TempDir()
	ctx := context.Background()
	flags := []string{"--save", "", "--appendonly", "yes", "--appendfsync", "always"}
	p := start(t, bin, dir, flags...)
	for i := 0; i < 100; i++ {
		p.rc.Set(ctx, fmt.Sprint("k", i), i, 0)
	}
	if v := p.rc.ConfigGet(ctx, "appendfsync").Val()["appendfsync"]; v != "always" {
		t.Fatalf("appendfsync %q", v)
	}
	_ = p.cmd.Process.Kill()
	_, _ = p.cmd.Process.Wait()
	p2 := start(t, bin, dir, flags...)
	if n := p2.rc.DBSize(ctx).Val(); n != 100 {
		t.Fatalf("%d keys after kill and restart, want 100", n)
	}
	_ = p2.cmd.Process.Kill()
	_, _ = p2.cmd.Process.Wait()

	incr := filepath.Join(dir, "appendonlydir", "appendonly.aof.1.incr.aof")
	data, err := os.ReadFile(incr)
	if err != nil {
		t.Fatal(err)
	}
	off := bytes.Index(data[10:], []byte("*3\r\n")) + 10 // a command start in the middle
	bad := bytes.Clone(data)
	bad[off] = 'X'
	os.WriteFile(incr, bad, 0o644)
	out, err := exec.Command(bin, append([]string{"--port", fmt.Sprint(freePort(t)), "--bind", "127.0.0.1", "--dir", dir}, flags...)...).CombinedOutput()
	if err == nil {
		t.Fatal("started over a damaged AOF")
	}
	if !strings.Contains(string(out), "appendonly.aof.1.incr.aof") || !strings.Contains(string(out), fmt.Sprintf("offset %d", off)) {
		t.Fatalf("message lacks the file and offset %d:\n%s", off, out)
	}
	if now, _ := os.ReadFile(incr); !bytes.Equal(now, bad) {
		t.Fatal("the damaged file was changed")
	}
	if err := exec.Command(bin, "--appendfsync", "sometimes").Run(); err == nil {
		t.Fatal("--appendfsync sometimes accepted")
	}
}
