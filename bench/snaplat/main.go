// Command snaplat measures what a background save costs writers and
// memory on any Redis-protocol server (Damselfly or redis-server).
//
//	go run ./bench/snaplat -addr 127.0.0.1:7001 -pid PID -keys 1000000 -size 100
//
// It writes every key key:0..keys-1 once (pipelined), waits, samples the
// proportional set size (Pss) of PID and its children (a fork child
// counts) as "idle", then runs -clients connections that SET random
// existing keys to fresh values of -size bytes, one command at a time. After
// -before of load alone it sends BGSAVE and goes on until INFO persistence
// says the save is over. Every SET's latency is recorded in the phase it
// started in (no save / save), and Pss is sampled every 50 ms: the report
// gives ops/s, p50/p99/p99.9/max latency per phase and the peak Pss of each
// phase over idle, the server's own SET latency percentiles per phase (INFO
// latencystats, reset by CONFIG RESETSTAT at each phase's start), the
// server's CPU per SET per phase from /proc/PID/stat (utime+stime of the
// process, and separately of its reaped children: Redis's fork), and the
// fork time Redis reports (INFO stats latest_fork_usec).
package main

import (
	"context"
	"flag"
	"fmt"
	"log"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:6379", "server address")
	pid := flag.Int("pid", 0, "server PID (for Pss; 0 = not measured)")
	keys := flag.Int("keys", 1000000, "keys")
	size := flag.Int("size", 100, "value bytes")
	clients := flag.Int("clients", 50, "writing connections")
	before := flag.Duration("before", 3*time.Second, "load without a save before BGSAVE")
	fill := flag.Bool("fill", true, "FLUSHALL and write every key first")
	verbose := flag.Bool("v", false, "list the SETs slower than 500 ms")
	flag.Parse()
	ctx := context.Background()
	rc := redis.NewClient(&redis.Options{Addr: *addr, PoolSize: *clients + 4, ReadTimeout: time.Minute, WriteTimeout: time.Minute})
	defer rc.Close()
	val := make([]byte, *size)
	for i := range val {
		val[i] = 'a' + byte(i%26)
	}
	if *fill {
		must(rc.FlushAll(ctx).Err())
		batch := max(1, min(1000, (4<<20)/max(*size, 1)))
		for i := 0; i < *keys; i += batch {
			p := rc.Pipeline()
			for j := i; j < min(*keys, i+batch); j++ {
				p.Set(ctx, "key:"+strconv.Itoa(j), val, 0)
			}
			_, err := p.Exec(ctx)
			must(err)
		}
		time.Sleep(2 * time.Second)
	}
	idle := pss(*pid)
	must(rc.ConfigResetStat(ctx).Err())
	cpu0 := cpuTicks(*pid)
	var srvLat [2]string
	var cpu [2][2]int64 // phase -> self, children ticks

	var phase atomic.Int32 // 0 no save, 1 save, 2 stop
	var mu sync.Mutex
	lat := [2][]time.Duration{}
	type slow struct{ at, d time.Duration }
	var slowest []slow // > 500 ms, offset from the start of the load
	start := time.Now()
	var peak [2]atomic.Int64
	var wg sync.WaitGroup
	for c := 0; c < *clients; c++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var mine [2][]time.Duration
			v := slices.Clone(val)
			for {
				ph := phase.Load()
				if ph == 2 {
					break
				}
				v[0]++ // a fresh value every time
				k := "key:" + strconv.Itoa(rand.IntN(*keys))
				t := time.Now()
				if err := rc.Set(ctx, k, v, 0).Err(); err != nil {
					log.Fatal(err)
				}
				d := time.Since(t)
				mine[ph] = append(mine[ph], d)
				if d > 500*time.Millisecond {
					mu.Lock()
					slowest = append(slowest, slow{t.Sub(start), d})
					mu.Unlock()
				}
			}
			mu.Lock()
			lat[0] = append(lat[0], mine[0]...)
			lat[1] = append(lat[1], mine[1]...)
			mu.Unlock()
		}()
	}
	stopSampling := make(chan struct{})
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		for {
			select {
			case <-stopSampling:
				return
			case <-time.After(50 * time.Millisecond):
			}
			m := pss(*pid)
			p := &peak[min(phase.Load(), 1)]
			if m > p.Load() {
				p.Store(m)
			}
		}
	}()
	time.Sleep(*before)
	srvLat[0] = setLatency(ctx, rc)
	cpu1 := cpuTicks(*pid)
	must(rc.ConfigResetStat(ctx).Err())
	t0 := time.Now()
	phase.Store(1)
	must(rc.BgSave(ctx).Err())
	for {
		time.Sleep(20 * time.Millisecond)
		info := rc.Info(ctx, "persistence").Val()
		if strings.Contains(info, "rdb_bgsave_in_progress:0") {
			break
		}
	}
	saveDur := time.Since(t0)
	saveEnd := time.Since(start)
	phase.Store(2)
	srvLat[1] = setLatency(ctx, rc)
	cpu2 := cpuTicks(*pid)
	cpu[0] = [2]int64{cpu1[0] - cpu0[0], cpu1[1] - cpu0[1]}
	cpu[1] = [2]int64{cpu2[0] - cpu1[0], cpu2[1] - cpu1[1]}
	fork := "-"
	for _, l := range strings.Split(rc.Info(ctx, "stats").Val(), "\r\n") {
		if s, ok := strings.CutPrefix(l, "latest_fork_usec:"); ok {
			fork = s + " µs"
		}
	}
	wg.Wait()
	close(stopSampling)
	<-sampled
	status := "?"
	for _, l := range strings.Split(rc.Info(ctx, "persistence").Val(), "\r\n") {
		if s, ok := strings.CutPrefix(l, "rdb_last_bgsave_status:"); ok {
			status = s
		}
	}
	slices.SortFunc(slowest, func(a, b slow) int { return int(b.d - a.d) })
	if len(slowest) > 0 && *verbose {
		fmt.Printf("  BGSAVE at %v, done at %v; SETs over 500 ms (start, latency): ", t0.Sub(start).Round(time.Millisecond), saveEnd.Round(time.Millisecond))
		for i, s := range slowest {
			if i < 20 {
				fmt.Printf("%v/%v ", s.at.Round(time.Millisecond), s.d.Round(time.Millisecond))
			}
		}
		fmt.Println()
	}
	fmt.Printf("keys %d x %d B, %d clients | idle Pss %.1f MiB | save %.2f s (%s) | latest_fork_usec %s | load average %s\n", *keys, *size, *clients, mib(idle), saveDur.Seconds(), status, fork, loadavg())
	for i, name := range []string{"no save", "during save"} {
		l := lat[i]
		slices.Sort(l)
		d := *before
		if i == 1 {
			d = saveDur
		}
		fmt.Printf("  %-11s SETs %7d  %8.0f ops/s  p50 %8s  p99 %8s  p99.9 %8s  max %8s  peak Pss %.1f MiB (+%.1f MiB over idle)\n",
			name, len(l), float64(len(l))/d.Seconds(), q(l, 0.5), q(l, 0.99), q(l, 0.999), q(l, 1), mib(peak[i].Load()), mib(peak[i].Load()-idle))
		if len(l) > 0 {
			fmt.Printf("  %-11s server SET latency (usec) %s | server CPU %.1f µs/SET (+ children %.1f µs/SET)\n", "",
				srvLat[i], float64(cpu[i][0])*1e6/ticksPerSec/float64(len(l)), float64(cpu[i][1])*1e6/ticksPerSec/float64(len(l)))
		}
	}
}

// ticksPerSec is the kernel's USER_HZ (/proc/PID/stat's unit).
const ticksPerSec = 100

// cpuTicks returns utime+stime of pid and cutime+cstime (its reaped
// children) from /proc/PID/stat.
func cpuTicks(pid int) [2]int64 {
	if pid == 0 {
		return [2]int64{}
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return [2]int64{}
	}
	s := string(b)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+2:]) // f[0] is field 3 (state)
	n := func(i int) int64 { v, _ := strconv.ParseInt(f[i-3], 10, 64); return v }
	return [2]int64{n(14) + n(15), n(16) + n(17)}
}

// setLatency is INFO latencystats' line for SET.
func setLatency(ctx context.Context, rc *redis.Client) string {
	for _, l := range strings.Split(rc.Info(ctx, "latencystats").Val(), "\r\n") {
		if s, ok := strings.CutPrefix(l, "latency_percentiles_usec_set:"); ok {
			return s
		}
	}
	return "-"
}

func loadavg() string {
	b, _ := os.ReadFile("/proc/loadavg")
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "?"
	}
	return strings.Join(f[:3], " ")
}

func q(l []time.Duration, f float64) string {
	if len(l) == 0 {
		return "-"
	}
	i := min(len(l)-1, int(f*float64(len(l))))
	return l[i].Round(10 * time.Microsecond).String()
}

func mib(kb int64) float64 { return float64(kb) / 1024 }

// pss sums the Pss (KiB) of pid and its descendants.
func pss(pid int) int64 {
	if pid == 0 {
		return 0
	}
	var sum int64
	var walk func(p int)
	walk = func(p int) {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/smaps_rollup", p))
		if err == nil {
			for _, l := range strings.Split(string(b), "\n") {
				if f := strings.Fields(l); len(f) >= 2 && f[0] == "Pss:" {
					n, _ := strconv.ParseInt(f[1], 10, 64)
					sum += n
				}
			}
		}
		tasks, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/children", p))
		for _, t := range tasks {
			b, _ := os.ReadFile(t)
			for _, c := range strings.Fields(string(b)) {
				if n, err := strconv.Atoi(c); err == nil {
					walk(n)
				}
			}
		}
	}
	walk(pid)
	return sum
}

func must(err error) {
	if err != nil {
		log.Fatal(err)
	}
}
