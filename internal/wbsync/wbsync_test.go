package wbsync

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"
)

// TestWindows: for random write sizes, windows and aheads, the file holds
// exactly what was written; writeback is started for consecutive windows
// from the starting offset, each as soon as it is full, never one that is
// not; an fdatasync starts at the first full window, never two run at
// once, and the writer never gets more than ahead (plus the write that
// crossed it) past the start of a running one.
func TestWindows(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for iter := range 100 {
		window := int64(1 + rng.IntN(5000))
		ahead := window * int64(1+rng.IntN(4))
		f, err := os.Create(filepath.Join(t.TempDir(), "f"))
		if err != nil {
			t.Fatal(err)
		}
		prefix := make([]byte, rng.IntN(3000))
		if _, err := f.Write(prefix); err != nil {
			t.Fatal(err)
		}
		w := New(f, window, ahead)
		var starts [][2]int64
		start := w.start
		w.start = func(f *os.File, off, n int64) error {
			starts = append(starts, [2]int64{off, n})
			return start(f, off, n)
		}
		var running, syncs atomic.Int32
		sync := w.sync
		w.sync = func(f *os.File) error {
			if running.Add(1) != 1 {
				t.Error("two fdatasyncs at once")
			}
			syncs.Add(1)
			time.Sleep(time.Duration(rng2(iter)) * time.Microsecond)
			err := sync(f)
			running.Add(-1)
			return err
		}
		var want bytes.Buffer
		want.Write(prefix)
		for range rng.IntN(40) {
			p := make([]byte, rng.IntN(int(window)*3))
			for i := range p {
				p[i] = byte(rng.Uint32())
			}
			if n, err := w.Write(p); n != len(p) || err != nil {
				t.Fatalf("Write: %d, %v", n, err)
			}
			want.Write(p)
			// Every full window since New, and no other, was started.
			full := (int64(want.Len()) - int64(len(prefix))) / window
			if int64(len(starts)) != full {
				t.Fatalf("iter %d: %d bytes past the start, window %d: %d writebacks, want %d", iter, want.Len()-len(prefix), window, len(starts), full)
			}
			if full > 0 && w.flush == nil && syncs.Load() == 0 {
				t.Fatalf("iter %d: %d windows filled, no fdatasync", iter, full)
			}
			if w.flush != nil && w.off-w.flushFrom >= ahead+window {
				t.Fatalf("iter %d: the writer is %d bytes past a running fdatasync's start, ahead %d window %d",
					iter, w.off-w.flushFrom, ahead, window)
			}
		}
		if err := w.Finish(); err != nil {
			t.Fatal(err)
		}
		if running.Load() != 0 {
			t.Fatal("an fdatasync runs after Finish")
		}
		if len(starts) > 0 && syncs.Load() == 0 {
			t.Fatalf("iter %d: %d windows filled, no fdatasync", iter, len(starts))
		}
		for i, c := range starts {
			if c != [2]int64{int64(len(prefix)) + int64(i)*window, window} {
				t.Fatalf("iter %d: writeback %d is %v, window %d after %d", iter, i, c, window, len(prefix))
			}
		}
		if err := f.Sync(); err != nil {
			t.Fatal(err)
		}
		f.Close()
		got, err := os.ReadFile(f.Name())
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want.Bytes()) {
			t.Fatalf("iter %d: file differs from what was written", iter)
		}
	}
}

// rng2 is how long an fdatasync is made to last in iteration iter, in µs:
// often none, sometimes long enough for the writer to catch up with it.
func rng2(iter int) int { return []int{0, 0, 50, 500, 3000}[iter%5] }

// TestSyncErrorSticks: a failed fdatasync fails the next Write (or
// Finish) and every one after it.
func TestSyncErrorSticks(t *testing.T) {
	f, err := os.Create(filepath.Join(t.TempDir(), "f"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	w := New(f, 10, 10)
	boom := errors.New("boom")
	w.sync = func(*os.File) error { return boom }
	if _, err := w.Write(make([]byte, 10)); err != nil { // starts the failing fdatasync
		t.Fatal(err)
	}
	if err := w.Finish(); err != boom {
		t.Fatalf("Finish: %v", err)
	}
	if _, err := w.Write([]byte("x")); err != boom {
		t.Fatalf("Write after a failed fdatasync: %v", err)
	}
}

// TestStickyError: after a failed write, every Write fails.
func TestStickyError(t *testing.T) {
	f, err := os.Create(filepath.Join(t.TempDir(), "f"))
	if err != nil {
		t.Fatal(err)
	}
	w := New(f, 10, 0)
	f.Close()
	if _, err := w.Write([]byte("x")); err == nil {
		t.Fatal("write to a closed file succeeded")
	}
	if _, err := w.Write(nil); err == nil {
		t.Fatal("the error is not sticky")
	}
}

// BenchmarkWindow writes a file of 210 MB (a SAVE of 20 x 10 MB) in 1 MB
// writes and fsyncs it (ahead: DefaultAhead), with no incremental writeback (window 0) and with
// each window; it reports the file's MB/s, fsync included, and the share
// of the time spent in the final fsync. WBSYNC_DIR picks the file system
// (default the test's temporary directory).
func BenchmarkWindow(b *testing.B) {
	dir := os.Getenv("WBSYNC_DIR")
	if dir == "" {
		dir = b.TempDir()
	}
	buf := bytes.Repeat([]byte{'x'}, 1<<20)
	const total = 210
	for _, window := range []int64{0, 1 << 20, 4 << 20, 8 << 20, 16 << 20, 32 << 20, 64 << 20} {
		b.Run(fmt.Sprintf("window=%dMB", window>>20), func(b *testing.B) {
			var syncTime time.Duration
			for b.Loop() {
				name := filepath.Join(dir, "wbsync-bench")
				f, err := os.Create(name)
				if err != nil {
					b.Fatal(err)
				}
				var out interface{ Write([]byte) (int, error) } = f
				if window > 0 {
					out = New(f, window, 0)
				}
				for range total {
					if _, err := out.Write(buf); err != nil {
						b.Fatal(err)
					}
				}
				if w, ok := out.(*Writer); ok {
					if err := w.Finish(); err != nil {
						b.Fatal(err)
					}
				}
				t0 := time.Now()
				if err := f.Sync(); err != nil {
					b.Fatal(err)
				}
				syncTime += time.Since(t0)
				f.Close()
				os.Remove(name)
			}
			b.SetBytes(total << 20)
			b.ReportMetric(100*syncTime.Seconds()/b.Elapsed().Seconds(), "%fsync")
		})
	}
}
