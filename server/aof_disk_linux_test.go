package server

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// smallDisk mounts a tmpfs of size bytes for the test, or skips.
func smallDisk(t *testing.T, size int) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "disk")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mount("tmpfs", dir, "tmpfs", 0, fmt.Sprintf("size=%d", size)); err != nil {
		t.Skipf("cannot mount a small tmpfs here (%v); skipping the full-disk test", err)
	}
	t.Cleanup(func() { syscall.Unmount(dir, 0) })
	return dir
}

// fill takes all but keep bytes of the disk at dir with a filler file.
func fill(t *testing.T, dir string, keep int64) string {
	t.Helper()
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil {
		t.Fatal(err)
	}
	free := int64(st.Bavail) * st.Bsize
	path := filepath.Join(dir, "filler")
	if free > keep {
		if err := os.WriteFile(path, make([]byte, free-keep), 0o644); err != nil && !strings.Contains(err.Error(), "no space") {
			t.Fatal(err)
		}
	}
	return path
}

func waitInfo(t *testing.T, rc *redis.Client, field string) {
	t.Helper()
	for i := 0; i < 500; i++ {
		if strings.Contains(rc.Info(context.Background(), "persistence").Val(), field+"\r\n") {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("INFO persistence never showed %s:\n%s", field, rc.Info(context.Background(), "persistence").Val())
}

// TestAOFFullDisk: on a full disk appends fail; writes are refused with
// Redis's -MISCONF text, the write that hit the error is answered only
// once it is on disk, and after space is freed everything acknowledged is
// in the AOF. A rewrite that runs out of space fails and leaves the AOF
// in use intact.
func TestAOFFullDisk(t *testing.T) {
	disk := smallDisk(t, 4<<20)
	ctx := context.Background()
	s := startServer(t, aofOn(disk, "always"), func(c *Config) { c.Save = "" })
	rc := newClient(t, s)
	// The rewrite below must need more room than is left: LZF would
	// shrink its repetitive values to nothing.
	if err := rc.ConfigSet(ctx, "rdbcompression", "no").Err(); err != nil {
		t.Fatal(err)
	}
	filler := fill(t, disk, 64<<10)

	var mu sync.Mutex
	var acked []string
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		val := strings.Repeat("x", 8<<10)
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			k := fmt.Sprint("k", i)
			err := rc.Set(ctx, k, val, 0).Err()
			if err != nil {
				if !strings.HasPrefix(err.Error(), "MISCONF") {
					t.Errorf("SET: %v", err)
					return
				}
				time.Sleep(10 * time.Millisecond)
				continue
			}
			mu.Lock()
			acked = append(acked, k)
			mu.Unlock()
		}
	}()
	other := newClient(t, s)
	waitInfo(t, other, "aof_last_write_status:err")
	err := other.Set(ctx, "refused", "1", 0).Err()
	if err == nil || err.Error() != "MISCONF Errors writing to the AOF file: No space left on device" {
		t.Fatalf("SET on a full disk: %v", err)
	}
	if err := other.Get(ctx, "k0").Err(); err != nil {
		t.Fatalf("reads must go on: %v", err)
	}
	// The connection whose write waits for the disk is held, not its
	// event loop: new connections (spread over every loop) are served.
	for i := 0; i < 4; i++ {
		tctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		err := newClient(t, s).Get(tctx, "k0").Err()
		cancel()
		if err != nil {
			t.Fatalf("connection %d not served while the disk is full: %v", i, err)
		}
	}
	close(stop)
	os.Remove(filler)
	<-done // the held write was answered
	waitInfo(t, other, "aof_last_write_status:ok")
	if err := other.Set(ctx, "after", "1", 0).Err(); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	n := len(acked)
	mu.Unlock()
	if n == 0 {
		t.Fatal("nothing was acknowledged")
	}

	// A rewrite without room for its base fails; the AOF goes on.
	filler = fill(t, disk, 32<<10)
	if err := other.Do(ctx, "BGREWRITEAOF").Err(); err != nil {
		t.Fatal(err)
	}
	waitInfo(t, other, "aof_last_bgrewrite_status:err")
	if err := other.Set(ctx, "after-failed-rewrite", "1", 0).Err(); err != nil {
		t.Fatal(err)
	}
	os.Remove(filler)
	want := digestOf(t, other)
	s.Close()

	s2 := startServer(t, aofOn(disk, "everysec"))
	rc2 := newClient(t, s2)
	if got := digestOf(t, rc2); got != want {
		t.Fatalf("digest after restart %s, want %s", got, want)
	}
	for _, k := range acked {
		if rc2.Exists(ctx, k).Val() != 1 {
			t.Fatalf("acknowledged key %s lost", k)
		}
	}
	t.Logf("%d writes acknowledged around the full disk", n)
}
