package server

import (
	"runtime"
	"strconv"
	"syscall"
	"testing"
)

// threadCPU is this thread's CPU time in ns (the benchmark locks its OS
// thread, so time spent descheduled on a loaded machine is not counted).
func threadCPU() int64 {
	var ru syscall.Rusage
	_ = syscall.Getrusage(1 /* RUSAGE_THREAD */, &ru)
	return ru.Utime.Nano() + ru.Stime.Nano()
}

// benchCPU runs fn b.N times and reports CPU ns per run as cpu-ns/op.
func benchCPU(b *testing.B, fn func(i int)) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	b.ReportAllocs()
	b.ResetTimer()
	t0 := threadCPU()
	for i := 0; i < b.N; i++ {
		fn(i)
	}
	b.ReportMetric(float64(threadCPU()-t0)/float64(b.N), "cpu-ns/op")
}

// BenchmarkCmdStatsHook is what command statistics add to one command:
// cmdBegin and cmdDone around an empty handler (build with -tags
// nocmdstats for the same without the counters: the clock reads stay, the
// watchdog and SLOWLOG need them).
func BenchmarkCmdStatsHook(b *testing.B) {
	for _, tracking := range []bool{true, false} {
		b.Run("latency-tracking="+strconv.FormatBool(tracking), func(b *testing.B) {
			c := benchClient(b)
			c.srv.obs.latTracking.Store(tracking)
			cmd := c.srv.cmds["get"]
			args := [][]byte{[]byte("GET"), []byte("k")}
			benchCPU(b, func(int) {
				start, errs := c.cmdBegin(cmd, args), c.errCount
				c.cmdDone(cmd, args, start, errs, callDirect)
			})
		})
	}
}

// BenchmarkCmdStatsRequest is a whole SET or GET request without I/O
// (parse, dispatch, command, reply), in CPU time.
func BenchmarkCmdStatsRequest(b *testing.B) {
	for _, name := range []string{"SET", "GET"} {
		b.Run(name, func(b *testing.B) {
			c := benchClient(b)
			const n = 10000
			reqs := make([][]byte, n)
			val := string(make([]byte, 100))
			for i := range reqs {
				k := "key:" + strconv.Itoa(i)
				if name == "SET" {
					reqs[i] = []byte(encode("SET", k, val))
				} else {
					c.execute([][]byte{[]byte("SET"), []byte(k), []byte(val)})
					reqs[i] = []byte(encode("GET", k))
				}
			}
			c.out = c.out[:0]
			benchCPU(b, func(i int) {
				c.r, c.w = 0, copy(c.in, reqs[i%n])
				if err := c.processInput(); err != nil {
					b.Fatal(err)
				}
				c.out = c.out[:0]
			})
		})
	}
}
