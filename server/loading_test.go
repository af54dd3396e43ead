//go:build linux

package server

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// loadingDump returns an RDB of n string keys written by a server.
func loadingDump(t *testing.T, n int) []byte {
	t.Helper()
	s := startServer(t)
	rc := newClient(t, s)
	ctx := context.Background()
	for i := range n {
		rc.Set(ctx, fmt.Sprint("key:", i), strings.Repeat("v", 100), 0)
	}
	if err := rc.Save(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	_, path := s.dumpPath()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// startLoading starts a server whose dump is a FIFO: StartAndLoad listens
// and then reads the dump as the test writes it into w.
func startLoading(t *testing.T, save string) (addr string, w *os.File, dir string, done chan error) {
	t.Helper()
	dir = t.TempDir()
	fifo := filepath.Join(dir, "dump.rdb")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Skip("no FIFOs here:", err)
	}
	cfg := Config{Port: freePort(t), Bind: "127.0.0.1", Shards: 2, DBNum: 16, Dir: dir, DBFilename: "dump.rdb",
		Save: save, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}
	s := New(cfg)
	done = make(chan error, 1)
	go func() { done <- s.StartAndLoad(cfg) }()
	t.Cleanup(func() { s.Close() })
	// Opening the FIFO for writing waits for the server to open it, which
	// it does after listening.
	w, err := os.OpenFile(fifo, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.Close() })
	return net.JoinHostPort("127.0.0.1", strconv.Itoa(cfg.Port)), w, dir, done
}

func loadingInfo(t *testing.T, c *rawConn, name string) string {
	t.Helper()
	c.do("INFO", "persistence")
	r := c.reply()
	text, err := strconv.Unquote(r[len(r)-1])
	if err != nil {
		t.Fatalf("INFO reply %q", r)
	}
	for _, line := range strings.Split(text, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), name+":"); ok {
			return v
		}
	}
	return ""
}

// TestListenWhileLoading: while the dump loads, clients connect, get
// Redis's -LOADING for data commands and see INFO's loading fields; once
// loaded, the data is served.
func TestListenWhileLoading(t *testing.T) {
	const n = 5000
	dump := loadingDump(t, n)
	addr, w, _, done := startLoading(t, "")
	half := len(dump) / 2
	if _, err := w.Write(dump[:half]); err != nil {
		t.Fatal(err)
	}
	c := dialAddr(t, addr)
	for _, cmd := range [][]string{{"PING"}, {"GET", "key:1"}, {"SET", "x", "1"}, {"DBSIZE"}, {"BGSAVE"}, {"OBJECT", "ENCODING", "key:1"}} {
		c.do(cmd...)
		if got := c.reply(); got[0] != "-"+loadingErr {
			t.Errorf("%v while loading: %q, want -LOADING", cmd, got)
		}
	}
	c.do("MULTI")
	c.reply()
	c.do("GET", "key:1")
	c.reply()
	c.do("EXEC")
	if got := c.reply(); !strings.HasPrefix(got[0], "-EXECABORT") {
		t.Errorf("EXEC after a command refused while loading: %q", got)
	}
	if got := loadingInfo(t, c, "loading"); got != "1" {
		t.Errorf("INFO loading:%s while loading", got)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		read, _ := strconv.Atoi(loadingInfo(t, c, "loading_loaded_bytes"))
		if read > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("loading_loaded_bytes stays 0")
		}
		time.Sleep(5 * time.Millisecond)
	}
	for _, f := range []string{"loading_start_time", "loading_total_bytes", "loading_loaded_perc", "loading_eta_seconds"} {
		if loadingInfo(t, c, f) == "" {
			t.Errorf("INFO persistence lacks %s while loading", f)
		}
	}
	if _, err := w.Write(dump[half:]); err != nil {
		t.Fatal(err)
	}
	w.Close()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	c.do("DBSIZE")
	if got := c.reply(); got[0] != ":"+strconv.Itoa(n) {
		t.Errorf("DBSIZE after the load: %q", got)
	}
	c.do("GET", "key:7")
	if got := c.reply(); len(got) < 2 || got[1] != strings.Repeat("v", 100) {
		t.Errorf("GET after the load: %q", got)
	}
	if got := loadingInfo(t, c, "loading"); got != "0" {
		t.Errorf("INFO loading:%s after the load", got)
	}
	if got := loadingInfo(t, c, "loading_loaded_bytes"); got != "" {
		t.Errorf("loading_loaded_bytes:%s after the load", got)
	}
}

// TestShutdownWhileLoadingKeepsDump: a SHUTDOWN accepted while loading
// never saves the partial dataset over the dump.
func TestShutdownWhileLoadingKeepsDump(t *testing.T) {
	dump := loadingDump(t, 2000)
	addr, w, dir, done := startLoading(t, "3600 1")
	if _, err := w.Write(dump[:len(dump)/2]); err != nil {
		t.Fatal(err)
	}
	c := dialAddr(t, addr)
	c.do("SHUTDOWN")
	c.nc.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := c.rd.ReadLine(); err == nil {
		t.Error("SHUTDOWN while loading replied instead of closing the connection")
	}
	w.Write(dump[len(dump)/2:])
	w.Close()
	<-done
	fi, err := os.Lstat(filepath.Join(dir, "dump.rdb"))
	if err != nil || fi.Mode()&os.ModeNamedPipe == 0 {
		t.Fatalf("the dump was replaced during the load: %v %v", fi, err)
	}
}
