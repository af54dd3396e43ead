package main

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// The binary is built once per test run into a temporary directory.
func buildBinary(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "damselfly")
	out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput()
	if err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

func freePort(t *testing.T) int {
	for p := 7250 + int(time.Now().UnixNano()%40); p < 7300; p++ {
		if l, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", p)); err == nil {
			l.Close()
			return p
		}
	}
	t.Fatal("no free port in 7250-7299")
	return 0
}

type proc struct {
	cmd  *exec.Cmd
	port int
	log  *bytes.Buffer
	rc   *redis.Client
}

func start(t *testing.T, bin, dir string, extra ...string) *proc {
	t.Helper()
	return startConfProc(t, bin, "", dir, extra...)
}

// startConfProc is start with a config file (none if conf is "").
func startConfProc(t *testing.T, bin, conf, dir string, extra ...string) *proc {
	t.Helper()
	port := freePort(t)
	var args []string
	if conf != "" {
		args = append(args, conf)
	}
	args = append(append(args, "--port", fmt.Sprint(port), "--bind", "127.0.0.1", "--dir", dir, "--enable-debug-command", "local"), extra...)
	cmd := exec.Command(bin, args...)
	var log bytes.Buffer
	cmd.Stderr = &log
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _, _ = cmd.Process.Wait() })
	p := &proc{cmd: cmd, port: port, log: &log, rc: redis.NewClient(&redis.Options{Addr: fmt.Sprintf("127.0.0.1:%d", port)})}
	t.Cleanup(func() { p.rc.Close() })
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(30 * time.Millisecond) {
		if p.rc.Ping(context.Background()).Err() == nil {
			return p
		}
	}
	t.Fatalf("damselfly did not start:\n%s", log.String())
	return nil
}

func (p *proc) info(t *testing.T, field string) string {
	for _, l := range strings.Split(p.rc.Info(context.Background(), "persistence").Val(), "\r\n") {
		if v, ok := strings.CutPrefix(l, field+":"); ok {
			return v
		}
	}
	return ""
}

// TestCrashDuringSave: kill -9 in the middle of a save; the previous dump
// still loads.
func TestCrashDuringSave(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	bin := buildBinary(t)
	dir := t.TempDir()
	ctx := context.Background()
	p := start(t, bin, dir, "--save", "")
	for i := 0; i < 1000; i++ {
		p.rc.Set(ctx, fmt.Sprint("old", i), i, 0)
	}
	if err := p.rc.Save(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	p.rc.Do(ctx, "DEBUG", "POPULATE", 1500000, "key", 100)
	if err := p.rc.Do(ctx, "BGSAVE").Err(); err != nil {
		t.Fatal(err)
	}
	// Wait until the temporary file is being written, then kill.
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(time.Millisecond) {
		m, _ := filepath.Glob(filepath.Join(dir, "temp-*.rdb"))
		if len(m) > 0 {
			if st, err := os.Stat(m[0]); err == nil && st.Size() > 0 {
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatal("no save in progress seen")
		}
	}
	_ = p.cmd.Process.Signal(syscall.SIGKILL)
	_, _ = p.cmd.Process.Wait()
	p2 := start(t, bin, dir, "--save", "")
	if n := p2.rc.DBSize(ctx).Val(); n != 1000 {
		t.Fatalf("after the crash: %d keys, want the previous dump's 1000", n)
	}
}

// TestSigtermSaves: SIGTERM saves (a schedule is configured) and every
// acknowledged write is in the dump.
func TestSigtermSaves(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	bin := buildBinary(t)
	dir := t.TempDir()
	ctx := context.Background()
	p := start(t, bin, dir, "--save", "3600 1")
	acked := make(chan int, 1)
	go func() {
		n := 0
		for ; ; n++ {
			if p.rc.Set(ctx, fmt.Sprint("k", n), n, 0).Err() != nil {
				break
			}
		}
		acked <- n
	}()
	time.Sleep(300 * time.Millisecond)
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	if err := p.cmd.Wait(); err != nil {
		t.Fatalf("exit: %v\n%s", err, p.log)
	}
	n := <-acked
	if !strings.Contains(p.log.String(), "DB saved on disk") {
		t.Fatalf("no save logged:\n%s", p.log)
	}
	p2 := start(t, bin, dir)
	for i := 0; i < n; i++ {
		if v, err := p2.rc.Get(ctx, fmt.Sprint("k", i)).Int(); err != nil || v != i {
			t.Fatalf("acknowledged key k%d lost after SIGTERM (%d acked): %v", i, n, err)
		}
	}
	// The health check answers 0 against a running server, 1 without one.
	if err := exec.Command(bin, "--healthcheck", "--port", fmt.Sprint(p2.port)).Run(); err != nil {
		t.Fatalf("healthcheck: %v", err)
	}
	if err := exec.Command(bin, "--healthcheck", "--port", fmt.Sprint(freePort(t))).Run(); err == nil {
		t.Fatal("healthcheck passed without a server")
	}
}

// TestCorruptDumpRefused: a truncated or corrupt dump stops start-up with
// the file and offset, and the file is left alone.
func TestCorruptDumpRefused(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	bin := buildBinary(t)
	dir := t.TempDir()
	ctx := context.Background()
	p := start(t, bin, dir, "--save", "")
	p.rc.Do(ctx, "DEBUG", "POPULATE", 10000)
	p.rc.Save(ctx)
	p.rc.Shutdown(ctx)
	_, _ = p.cmd.Process.Wait()
	good, err := os.ReadFile(filepath.Join(dir, "dump.rdb"))
	if err != nil {
		t.Fatal(err)
	}
	bad := bytes.Clone(good)
	bad[len(bad)/2] ^= 0xff
	for name, data := range map[string][]byte{"truncated": good[:len(good)/2], "corrupt": bad} {
		path := filepath.Join(dir, "dump.rdb")
		os.WriteFile(path, data, 0o644)
		out, err := exec.Command(bin, "--port", fmt.Sprint(freePort(t)), "--bind", "127.0.0.1", "--dir", dir).CombinedOutput()
		if err == nil {
			t.Fatalf("%s: started", name)
		}
		if !strings.Contains(string(out), path) || (name == "truncated" && !strings.Contains(string(out), "offset")) {
			t.Fatalf("%s: message lacks file/offset:\n%s", name, out)
		}
		if now, _ := os.ReadFile(path); !bytes.Equal(now, data) {
			t.Fatalf("%s: the dump was changed", name)
		}
	}
}
