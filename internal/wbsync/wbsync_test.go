package wbsync

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// TestWindows: for random write sizes and windows, the file holds exactly
// what was written, and the writeback calls cover consecutive windows from
// the starting offset, each started as soon as it is full, never one that
// is not.
func TestWindows(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for iter := range 100 {
		window := int64(1 + rng.IntN(5000))
		f, err := os.Create(filepath.Join(t.TempDir(), "f"))
		if err != nil {
			t.Fatal(err)
		}
		prefix := make([]byte, rng.IntN(3000))
		if _, err := f.Write(prefix); err != nil {
			t.Fatal(err)
		}
		w := New(f, window)
		var calls [][2]int64
		real := w.writeback
		w.writeback = func(f *os.File, off, n int64) error {
			calls = append(calls, [2]int64{off, n})
			return real(f, off, n)
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
			if int64(len(calls)) != full {
				t.Fatalf("iter %d: %d bytes past the start, window %d: %d writebacks, want %d", iter, want.Len()-len(prefix), window, len(calls), full)
			}
		}
		for i, c := range calls {
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

// TestStickyError: after a failed write, every Write fails.
func TestStickyError(t *testing.T) {
	f, err := os.Create(filepath.Join(t.TempDir(), "f"))
	if err != nil {
		t.Fatal(err)
	}
	w := New(f, 10)
	f.Close()
	if _, err := w.Write([]byte("x")); err == nil {
		t.Fatal("write to a closed file succeeded")
	}
	if _, err := w.Write(nil); err == nil {
		t.Fatal("the error is not sticky")
	}
}

// BenchmarkWindow writes a file of 210 MB (a SAVE of 20 x 10 MB) in 1 MB
// writes and fsyncs it, with no incremental writeback (window 0) and with
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
					out = New(f, window)
				}
				for range total {
					if _, err := out.Write(buf); err != nil {
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
