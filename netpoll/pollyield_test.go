//go:build linux

package netpoll

import (
	"runtime"
	"syscall"
	"testing"
	"time"
)

// cpuTime is the process's user and system CPU time so far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkYield: what one pass through the scheduler costs an io_uring
// loop's goroutine (locked to its thread, GOMAXPROCS 1): runtime.Gosched
// against pollYield, which also polls the network. Both hand the P to
// another thread and back; cpu-ns/op counts both threads.
func BenchmarkYield(b *testing.B) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	run := func(b *testing.B, yield func()) {
		done := make(chan struct{})
		cpu := cpuTime()
		defer func() { b.ReportMetric(float64(cpuTime()-cpu)/float64(b.N), "cpu-ns/op") }()
		go func() {
			defer close(done)
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			for b.Loop() {
				yield()
			}
		}()
		<-done
	}
	b.Run("Gosched", func(b *testing.B) { run(b, runtime.Gosched) })
	b.Run("pollYield", func(b *testing.B) {
		y, err := newPollYield()
		if err != nil {
			b.Fatal(err)
		}
		defer y.close()
		run(b, func() {
			if err := y.yield(); err != nil {
				b.Fatal(err)
			}
		})
	})
}
