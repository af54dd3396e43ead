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
//
// With -replica ADDR the measured event is a full sync instead of a BGSAVE:
// the replica (an empty server) gets REPLICAOF this server, and the phase
// lasts until the replica reports master_link_status:up with no sync in
// progress. The report then adds the replica's CPU over the sync (with
// -replica-pid) and the bytes the primary sent (INFO stats
// total_net_repl_output_bytes; Damselfly has no such field, so its
// process's wchar from /proc/PID/io, which a diskless sync makes the wire).
// Once the writers stop, it checks that the replica caught up and holds
// the primary's values (10,000 random keys compared).
// -small N adds N connections that SET and GET (alternately) their own
// small keys (small:C:0..999, 100 B), never the measured keys: their
// latency, reported apart per phase, is what a save costs the clients that
// are not overwriting big values (a server that stalls a shard or an event
// loop for an overwriter stalls them too). Their SETs count in the
// server's INFO latencystats line for SET beside the big ones.
// -populate fills with DEBUG POPULATE (the same key:N names, faster than
// SETs for 10M keys; the server needs its debug command enabled).
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

// config is the command line.
type config struct {
	addr            string
	pid, keys, size int
	clients         int
	small           int // connections doing small-key SET/GET
	before          time.Duration
	fill, verbose   bool
	populate        bool
	replica         string // full sync to this server instead of a BGSAVE
	replicaPid      int
}

func main() {
	var cfg config
	flag.StringVar(&cfg.addr, "addr", "127.0.0.1:6379", "server address")
	flag.IntVar(&cfg.pid, "pid", 0, "server PID (for Pss; 0 = not measured)")
	flag.IntVar(&cfg.keys, "keys", 1000000, "keys")
	flag.IntVar(&cfg.size, "size", 100, "value bytes")
	flag.IntVar(&cfg.clients, "clients", 50, "writing connections")
	flag.IntVar(&cfg.small, "small", 0, "extra connections doing small-key SET/GET, reported apart")
	flag.DurationVar(&cfg.before, "before", 3*time.Second, "load without a save before BGSAVE")
	flag.BoolVar(&cfg.fill, "fill", true, "FLUSHALL and write every key first")
	flag.BoolVar(&cfg.verbose, "v", false, "list the SETs slower than 500 ms")
	flag.BoolVar(&cfg.populate, "populate", false, "fill with DEBUG POPULATE instead of pipelined SETs")
	flag.StringVar(&cfg.replica, "replica", "", "measure a full sync to this empty server instead of a BGSAVE")
	flag.IntVar(&cfg.replicaPid, "replica-pid", 0, "the replica's PID (for its CPU)")
	flag.Parse()
	ctx := context.Background()
	rc := redis.NewClient(&redis.Options{Addr: cfg.addr, PoolSize: cfg.clients + cfg.small + 4, ReadTimeout: time.Minute, WriteTimeout: time.Minute})
	defer rc.Close()
	val := make([]byte, cfg.size)
	for i := range val {
		val[i] = 'a' + byte(i%26)
	}
	if cfg.fill {
		fillKeys(ctx, rc, cfg.keys, val, cfg.populate)
		time.Sleep(2 * time.Second)
	}
	var res result
	res.idle = pss(cfg.pid)
	must(rc.ConfigResetStat(ctx).Err())
	cpu0 := cpuTicks(cfg.pid)

	l := &setLoad{rc: rc, keys: cfg.keys, start: time.Now()}
	l.wg.Add(cfg.clients + cfg.small)
	for range cfg.clients {
		go l.client(ctx, val)
	}
	for i := range cfg.small {
		go l.smallClient(ctx, i)
	}
	stopSampling := make(chan struct{})
	sampled := make(chan struct{})
	go l.samplePss(cfg.pid, stopSampling, sampled)
	time.Sleep(cfg.before)
	res.srvLat[0] = setLatency(ctx, rc)
	cpu1 := cpuTicks(cfg.pid)
	must(rc.ConfigResetStat(ctx).Err())
	res.bgsaveAt = time.Since(l.start)
	l.phase.Store(1)
	if cfg.replica == "" {
		must(rc.BgSave(ctx).Err())
		waitSave(ctx, rc)
	} else {
		res.sync = fullSync(ctx, rc, cfg)
	}
	res.saveEnd = time.Since(l.start)
	res.saveDur = res.saveEnd - res.bgsaveAt
	l.phase.Store(2)
	res.srvLat[1] = setLatency(ctx, rc)
	cpu2 := cpuTicks(cfg.pid)
	res.cpu[0] = [2]int64{cpu1[0] - cpu0[0], cpu1[1] - cpu0[1]}
	res.cpu[1] = [2]int64{cpu2[0] - cpu1[0], cpu2[1] - cpu1[1]}
	res.fork = "-"
	if s, ok := infoField(ctx, rc, "stats", "latest_fork_usec"); ok {
		res.fork = s + " µs"
	}
	l.wg.Wait()
	if res.sync != nil {
		res.sync.check = checkReplica(ctx, rc, cfg)
	}
	close(stopSampling)
	<-sampled
	res.status = "?"
	if s, ok := infoField(ctx, rc, "persistence", "rdb_last_bgsave_status"); ok {
		res.status = s
	}
	report(cfg, l, res)
}

// result is what main measured besides the load's own records.
type result struct {
	idle              int64 // Pss, KiB
	srvLat            [2]string
	cpu               [2][2]int64   // phase -> self, children ticks
	bgsaveAt, saveEnd time.Duration // from the start of the load
	saveDur           time.Duration
	fork, status      string
	sync              *syncResult // with -replica
}

// fillKeys writes key:0..keys-1 once, pipelined.
func fillKeys(ctx context.Context, rc *redis.Client, keys int, val []byte, populate bool) {
	must(rc.FlushAll(ctx).Err())
	if populate {
		must(rc.Do(ctx, "DEBUG", "POPULATE", keys, "key", len(val)).Err())
		return
	}
	batch := max(1, min(1000, (4<<20)/max(len(val), 1)))
	for i := 0; i < keys; i += batch {
		p := rc.Pipeline()
		for j := i; j < min(keys, i+batch); j++ {
			p.Set(ctx, "key:"+strconv.Itoa(j), val, 0)
		}
		_, err := p.Exec(ctx)
		must(err)
	}
}

// syncResult is what a full sync cost: the replica's CPU ticks (self and
// reaped children) and the bytes the primary sent, over the sync.
type syncResult struct {
	replicaCPU [2]int64
	bytes      int64
	keys       int64  // the replica's DBSIZE once in sync
	check      string // checkReplica's verdict once the load has stopped
}

// checkReplica waits, once the writers have stopped, until the replica
// has applied the primary's whole stream (equal master_repl_offset), then
// compares the values of 10,000 random keys: the writes made during the
// sync must have reached the replica.
func checkReplica(ctx context.Context, rc *redis.Client, cfg config) string {
	rep := redis.NewClient(&redis.Options{Addr: cfg.replica, ReadTimeout: time.Minute})
	defer rep.Close()
	deadline := time.Now().Add(time.Minute)
	for {
		p, _ := infoField(ctx, rc, "replication", "master_repl_offset")
		r, _ := infoField(ctx, rep, "replication", "master_repl_offset")
		if p == r && p != "" {
			break
		}
		if time.Now().After(deadline) {
			return fmt.Sprintf("NOT CAUGHT UP after 1 min (primary offset %s, replica %s)", p, r)
		}
		time.Sleep(50 * time.Millisecond)
	}
	const n = 10000
	differ := 0
	for range n {
		k := "key:" + strconv.Itoa(rand.IntN(cfg.keys))
		if rc.Get(ctx, k).Val() != rep.Get(ctx, k).Val() {
			differ++
		}
	}
	if differ > 0 {
		return fmt.Sprintf("%d OF %d KEYS DIFFER", differ, n)
	}
	return fmt.Sprintf("%d random keys equal on both", n)
}

// fullSync makes the replica of cfg a replica of the server rc talks to
// and returns once it is in sync.
func fullSync(ctx context.Context, rc *redis.Client, cfg config) *syncResult {
	rep := redis.NewClient(&redis.Options{Addr: cfg.replica, ReadTimeout: time.Minute})
	defer rep.Close()
	host, port, ok := strings.Cut(cfg.addr, ":")
	if !ok {
		log.Fatalf("address %q has no port", cfg.addr)
	}
	b0, r0 := replBytes(ctx, rc, cfg.pid), cpuTicks(cfg.replicaPid)
	must(rep.Do(ctx, "REPLICAOF", host, port).Err())
	for {
		time.Sleep(20 * time.Millisecond)
		up, _ := infoField(ctx, rep, "replication", "master_link_status")
		busy, _ := infoField(ctx, rep, "replication", "master_sync_in_progress")
		if up == "up" && busy == "0" {
			break
		}
	}
	r1 := cpuTicks(cfg.replicaPid)
	res := &syncResult{replicaCPU: [2]int64{r1[0] - r0[0], r1[1] - r0[1]}, bytes: replBytes(ctx, rc, cfg.pid) - b0}
	res.keys = rep.DBSize(ctx).Val()
	return res
}

// replBytes is what the primary has sent its replicas: redis-server's
// total_net_repl_output_bytes, else the process's wchar (Damselfly's
// diskless sync is all it writes during the sync).
func replBytes(ctx context.Context, rc *redis.Client, pid int) int64 {
	if s, ok := infoField(ctx, rc, "stats", "total_net_repl_output_bytes"); ok {
		n, _ := strconv.ParseInt(s, 10, 64)
		return n
	}
	b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/io", pid))
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "wchar: "); ok {
			n, _ := strconv.ParseInt(v, 10, 64)
			return n
		}
	}
	return 0
}

// waitSave returns when INFO persistence says no BGSAVE is running.
func waitSave(ctx context.Context, rc *redis.Client) {
	for {
		time.Sleep(20 * time.Millisecond)
		info := rc.Info(ctx, "persistence").Val()
		if strings.Contains(info, "rdb_bgsave_in_progress:0") {
			return
		}
	}
}

// infoField is one field of an INFO section.
func infoField(ctx context.Context, rc *redis.Client, section, field string) (string, bool) {
	for _, l := range strings.Split(rc.Info(ctx, section).Val(), "\r\n") {
		if s, ok := strings.CutPrefix(l, field+":"); ok {
			return s, true
		}
	}
	return "", false
}

// slowSet is a SET over 500 ms: when it started (from the start of the
// load) and how long it took.
type slowSet struct{ at, d time.Duration }

// setLoad is the writing clients and what they recorded, per phase.
type setLoad struct {
	rc      *redis.Client
	keys    int
	start   time.Time
	phase   atomic.Int32 // 0 no save, 1 save, 2 stop
	peak    [2]atomic.Int64
	wg      sync.WaitGroup
	mu      sync.Mutex
	lat     [2][]time.Duration
	small   [2][]time.Duration // -small: their SETs and GETs
	slowest []slowSet
}

// smallClient SETs and GETs (alternately) its own small keys, one at a
// time, until phase 2, recording each latency in the phase it started in.
func (l *setLoad) smallClient(ctx context.Context, id int) {
	defer l.wg.Done()
	var mine [2][]time.Duration
	v := []byte(strings.Repeat("s", 100))
	for i := 0; ; i++ {
		ph := l.phase.Load()
		if ph == 2 {
			break
		}
		k := "small:" + strconv.Itoa(id) + ":" + strconv.Itoa(rand.IntN(1000))
		t := time.Now()
		var err error
		if i%2 == 0 {
			err = l.rc.Set(ctx, k, v, 0).Err()
		} else if err = l.rc.Get(ctx, k).Err(); err == redis.Nil {
			err = nil
		}
		if err != nil {
			log.Fatal(err)
		}
		mine[ph] = append(mine[ph], time.Since(t))
	}
	l.mu.Lock()
	l.small[0] = append(l.small[0], mine[0]...)
	l.small[1] = append(l.small[1], mine[1]...)
	l.mu.Unlock()
}

// client SETs random existing keys to fresh values, one at a time, until
// phase 2, recording each latency in the phase the SET started in.
func (l *setLoad) client(ctx context.Context, val []byte) {
	defer l.wg.Done()
	var mine [2][]time.Duration
	v := slices.Clone(val)
	for {
		ph := l.phase.Load()
		if ph == 2 {
			break
		}
		v[0]++ // a fresh value every time
		k := "key:" + strconv.Itoa(rand.IntN(l.keys))
		t := time.Now()
		if err := l.rc.Set(ctx, k, v, 0).Err(); err != nil {
			log.Fatal(err)
		}
		d := time.Since(t)
		mine[ph] = append(mine[ph], d)
		if d > 500*time.Millisecond {
			l.mu.Lock()
			l.slowest = append(l.slowest, slowSet{t.Sub(l.start), d})
			l.mu.Unlock()
		}
	}
	l.mu.Lock()
	l.lat[0] = append(l.lat[0], mine[0]...)
	l.lat[1] = append(l.lat[1], mine[1]...)
	l.mu.Unlock()
}

// samplePss records the peak Pss of each phase every 50 ms until stop.
func (l *setLoad) samplePss(pid int, stop <-chan struct{}, done chan<- struct{}) {
	defer close(done)
	for {
		select {
		case <-stop:
			return
		case <-time.After(50 * time.Millisecond):
		}
		m := pss(pid)
		p := &l.peak[min(l.phase.Load(), 1)]
		if m > p.Load() {
			p.Store(m)
		}
	}
}

// report prints the figures of both phases.
func report(cfg config, l *setLoad, res result) {
	slices.SortFunc(l.slowest, func(a, b slowSet) int { return int(b.d - a.d) })
	if len(l.slowest) > 0 && cfg.verbose {
		fmt.Printf("  BGSAVE at %v, done at %v; SETs over 500 ms (start, latency): ", res.bgsaveAt.Round(time.Millisecond), res.saveEnd.Round(time.Millisecond))
		for i, s := range l.slowest {
			if i < 20 {
				fmt.Printf("%v/%v ", s.at.Round(time.Millisecond), s.d.Round(time.Millisecond))
			}
		}
		fmt.Println()
	}
	event := "save"
	if res.sync != nil {
		event = "full sync"
	}
	fmt.Printf("keys %d x %d B, %d clients | idle Pss %.1f MiB | %s %.2f s (%s) | latest_fork_usec %s | load average %s\n",
		cfg.keys, cfg.size, cfg.clients, mib(res.idle), event, res.saveDur.Seconds(), res.status, res.fork, loadavg())
	for i, name := range []string{"no save", "during " + event} {
		lat := l.lat[i]
		slices.Sort(lat)
		d := cfg.before
		if i == 1 {
			d = res.saveDur
		}
		peak := l.peak[i].Load()
		fmt.Printf("  %-11s SETs %7d  %8.0f ops/s  p50 %8s  p99 %8s  p99.9 %8s  max %8s  peak Pss %.1f MiB (+%.1f MiB over idle)\n",
			name, len(lat), float64(len(lat))/d.Seconds(), q(lat, 0.5), q(lat, 0.99), q(lat, 0.999), q(lat, 1), mib(peak), mib(peak-res.idle))
		if len(lat) > 0 {
			fmt.Printf("  %-11s server SET latency (usec) %s | server CPU %.1f µs/SET (+ children %.1f µs/SET)\n", "",
				res.srvLat[i], float64(res.cpu[i][0])*1e6/ticksPerSec/float64(len(lat)), float64(res.cpu[i][1])*1e6/ticksPerSec/float64(len(lat)))
		}
		if sm := l.small[i]; cfg.small > 0 {
			slices.Sort(sm)
			fmt.Printf("  %-11s small keys (%d cl.) SET/GET %7d  %8.0f ops/s  p50 %8s  p99 %8s  p99.9 %8s  max %8s\n", "",
				cfg.small, len(sm), float64(len(sm))/d.Seconds(), q(sm, 0.5), q(sm, 0.99), q(sm, 0.999), q(sm, 1))
		}
	}
	reportEventCPU(l, res, event)
}

// reportEventCPU prints the server's CPU seconds over the save (or sync)
// and their excess over what its SETs cost at the no-save rate: the
// save's own CPU, estimated, since the writers share the process.
func reportEventCPU(l *setLoad, res result, event string) {
	secs := func(t [2]int64) float64 { return float64(t[0]+t[1]) / ticksPerSec }
	during := secs(res.cpu[1])
	excess := during
	if n := len(l.lat[0]); n > 0 {
		excess -= secs(res.cpu[0]) / float64(n) * float64(len(l.lat[1]))
	}
	fmt.Printf("  %s: server CPU %.2f s (incl. children), %.2f s over its SETs at the no-save rate", event, during, excess)
	if sr := res.sync; sr != nil {
		fmt.Printf(" | replica CPU %.2f s | %.1f MB sent (total_net_repl_output_bytes, or wchar) | replica keys %d | after the load: %s",
			secs(sr.replicaCPU), float64(sr.bytes)/1e6, sr.keys, sr.check)
	}
	fmt.Println()
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
