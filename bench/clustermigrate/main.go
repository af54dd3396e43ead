// Command clustermigrate measures a slot migration under write load: two
// Damselfly nodes in --cluster-mode yes (this program acts as the control
// plane), N keys on the source, half of the slots moved to the target with
// CLUSTERX MIGRATE while W clients write (INCR of counters and SET of new
// keys, each acknowledged write recorded), then CLUSTERX SETSLOT hands the
// range over. It reports the duration, the longest write pause, writes
// lost or applied twice (must be 0) and memory on both nodes.
//
//	go build -o /tmp/damselfly ./cmd/damselfly
//	go run ./bench/clustermigrate -bin /tmp/damselfly -keys 1000000 -writers 50
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/redis/go-redis/v9/maintnotifications"
)

func freePort() int {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		panic(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

func infoField(ctx context.Context, c *redis.Client, section, field string) string {
	s, _ := c.Info(ctx, section).Result()
	for _, l := range strings.Split(s, "\r\n") {
		if v, ok := strings.CutPrefix(l, field+":"); ok {
			return v
		}
	}
	return ""
}

// config is the command line.
type config struct {
	bin, slots, profile     string
	keys, writers, profSecs int
}

func main() {
	var cfg config
	flag.StringVar(&cfg.bin, "bin", "/tmp/damselfly", "damselfly binary")
	flag.IntVar(&cfg.keys, "keys", 1000000, "keys on the source before the migration")
	flag.IntVar(&cfg.writers, "writers", 50, "writing clients during the migration")
	flag.StringVar(&cfg.slots, "slots", "0-8191", "slots to move")
	flag.StringVar(&cfg.profile, "profile", "", "write CPU profiles of the source and target during the migration's first -profile-seconds to this directory")
	flag.IntVar(&cfg.profSecs, "profile-seconds", 20, "length of the CPU profiles")
	flag.Parse()
	ctx := context.Background()
	dir, _ := os.MkdirTemp("", "clustermigrate")
	defer os.RemoveAll(dir)
	nodes := startNodes(ctx, cfg.bin, dir)
	defer nodes.kill()
	cl := nodes.clients
	must(cl[0].Do(ctx, "DEBUG", "POPULATE", cfg.keys).Err())
	memBefore := []string{infoField(ctx, cl[0], "memory", "used_memory"), infoField(ctx, cl[1], "memory", "used_memory")}

	load := startWriteLoad(ctx, cl[0].Options().Addr, cfg.writers)
	time.Sleep(time.Second)
	start := time.Now()
	var profs sync.WaitGroup
	if cfg.profile != "" {
		for i, name := range []string{"source", "target"} {
			profs.Add(1)
			go func(port int, name string) {
				defer profs.Done()
				fetchProfile(fmt.Sprintf("http://127.0.0.1:%d/debug/pprof/profile?seconds=%d", port, cfg.profSecs), cfg.profile+"/"+name+".pprof")
			}(nodes.admin[i], name)
		}
	}
	must(cl[0].Do(ctx, "CLUSTERX", "MIGRATE", cfg.slots, nodes.ids[1], "async").Err()) // async: sample memory from the start
	peakSrc, peakDst := waitMigration(ctx, cl)
	took := time.Since(start)
	profs.Wait()
	for _, c := range cl {
		must(c.Do(ctx, "CLUSTERX", "SETSLOT", cfg.slots, "NODE", nodes.ids[1], 2).Err())
	}
	time.Sleep(500 * time.Millisecond)
	load.stop()
	v := load.verify(ctx)

	d0, _ := cl[0].DBSize(ctx).Result()
	d1, _ := cl[1].DBSize(ctx).Result()
	fmt.Printf("keys %d, writers %d, slots %s\n", cfg.keys, cfg.writers, cfg.slots)
	fmt.Printf("migration: %.1f s; longest write pause %s µs; writes during the run %d (%d retried on TRYAGAIN/MOVED)\n",
		took.Seconds(), infoField(ctx, cl[0], "cluster", "migrating_last_pause_us"), load.writes.Load(), load.retries.Load())
	fmt.Printf("acknowledged SETs checked %d, lost %d; INCR counters wrong %d of %d (%d skipped: an attempt failed on the network, so it may have run); %d attempts failed on the network\n",
		v.checked, v.lost, v.badCounters, len(load.incrs)-v.skipped, v.skipped, load.netErrs.Load())
	fmt.Printf("keys after: source %d, target %d\n", d0, d1)
	fmt.Printf("used_memory source %s -> peak %d; target %s -> peak %d\n", memBefore[0], peakSrc, memBefore[1], peakDst)
}

// nodes are the source (0) and target (1) servers, told the topology.
type nodes struct {
	procs   []*exec.Cmd
	clients []*redis.Client
	admin   []int
	ids     []string
}

// startNodes starts the two nodes and gives the source every slot.
func startNodes(ctx context.Context, bin, dir string) *nodes {
	ports := []int{freePort(), freePort()}
	n := &nodes{admin: []int{freePort(), freePort()}, ids: []string{strings.Repeat("a", 40), strings.Repeat("b", 40)}}
	for i, p := range ports {
		cmd := exec.Command(bin, "--port", strconv.Itoa(p), "--bind", "127.0.0.1", "--cluster-mode", "yes", "--save", "",
			"--dir", dir, "--dbfilename", fmt.Sprintf("d%d.rdb", i), "--enable-debug-command", "yes", "--loglevel", "warning",
			"--admin-port", strconv.Itoa(n.admin[i]), "--admin-bind", "127.0.0.1", "--admin-pprof")
		cmd.Stderr = os.Stderr
		if err := cmd.Start(); err != nil {
			n.kill()
			panic(err)
		}
		n.procs = append(n.procs, cmd)
	}
	n.clients = make([]*redis.Client, 2)
	for i, p := range ports {
		n.clients[i] = redis.NewClient(&redis.Options{Addr: fmt.Sprintf("127.0.0.1:%d", p), ReadTimeout: time.Minute})
		for n.clients[i].Ping(ctx).Err() != nil {
			time.Sleep(20 * time.Millisecond)
		}
	}
	topo := fmt.Sprintf("%s 127.0.0.1 %d master - 0-16383\n%s 127.0.0.1 %d master -", n.ids[0], ports[0], n.ids[1], ports[1])
	for i, c := range n.clients {
		must(c.Do(ctx, "CLUSTERX", "SETNODEID", n.ids[i]).Err())
		must(c.Do(ctx, "CLUSTERX", "SETNODES", topo, 1).Err())
	}
	return n
}

func (n *nodes) kill() {
	for _, p := range n.procs {
		p.Process.Kill()
		p.Wait()
	}
}

// waitMigration polls the source until the migration ends (panicking
// unless it succeeded) and returns both nodes' peak used_memory.
func waitMigration(ctx context.Context, cl []*redis.Client) (peakSrc, peakDst int64) {
	for poll := 0; ; poll++ {
		s := infoField(ctx, cl[0], "cluster", "migrating_state")
		for i, p := range []*int64{&peakSrc, &peakDst} {
			if poll%5 != 0 && s == "start" {
				break // INFO memory every 250 ms only: it is not free
			}
			if v, _ := strconv.ParseInt(infoField(ctx, cl[i], "memory", "used_memory"), 10, 64); v > *p {
				*p = v
			}
		}
		if s != "start" {
			if s != "success" {
				panic("migration " + s)
			}
			return peakSrc, peakDst
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// writeLoad is the writing clients and what they had acknowledged.
type writeLoad struct {
	cc        *redis.ClusterClient
	acked     sync.Map // key -> value (SET)
	incrs     [64]atomic.Int64
	uncertain [64]atomic.Bool // an INCR attempt failed other than by TRYAGAIN/MOVED: it may have run
	netErrs   atomic.Int64
	writes    atomic.Int64
	retries   atomic.Int64
	done      chan struct{}
	wg        sync.WaitGroup
}

// startWriteLoad starts writers clients through a cluster client that
// knows the node at addr.
func startWriteLoad(ctx context.Context, addr string, writers int) *writeLoad {
	// MaxRetries -1: the node clients do not resend a command whose
	// connection failed (an INCR might then run twice unseen); the cluster
	// client still may, so a hook sees every attempt and marks a counter
	// whose INCR attempt failed on the network as uncertain.
	l := &writeLoad{done: make(chan struct{})}
	l.cc = redis.NewClusterClient(&redis.ClusterOptions{Addrs: []string{addr}, MaxRedirects: 16, PoolSize: writers + 4,
		ReadTimeout: 30 * time.Second, WriteTimeout: 30 * time.Second, MaxRetries: -1,
		MaintNotificationsConfig: &maintnotifications.Config{Mode: maintnotifications.ModeDisabled}})
	l.cc.OnNewNode(func(rdb *redis.Client) { rdb.AddHook(attemptHook{fn: l.attempted}) })
	for w := 0; w < writers; w++ {
		l.wg.Add(1)
		go l.writer(ctx, w)
	}
	return l
}

// attempted sees every command attempt on a node.
func (l *writeLoad) attempted(cmd redis.Cmder, err error) {
	var re redis.Error
	if err == nil || errors.As(err, &re) {
		return
	}
	if l.netErrs.Add(1) <= 5 {
		fmt.Fprintln(os.Stderr, "attempt failed:", cmd.Name(), err)
	}
	if cmd.Name() == "incr" {
		if c, err := strconv.Atoi(strings.TrimPrefix(fmt.Sprint(cmd.Args()[1]), "counter:")); err == nil {
			l.uncertain[c].Store(true)
		}
	}
}

// writer alternates INCR of a counter and SET of a new key, retrying each
// until acknowledged, until the load stops.
func (l *writeLoad) writer(ctx context.Context, w int) {
	defer l.wg.Done()
	for i := 0; ; i++ {
		select {
		case <-l.done:
			return
		default:
		}
		var err error
		if i%2 == 0 {
			c := (w*7 + i) % len(l.incrs)
			for err = l.cc.Incr(ctx, "counter:"+strconv.Itoa(c)).Err(); err != nil; err = l.cc.Incr(ctx, "counter:"+strconv.Itoa(c)).Err() {
				l.retries.Add(1)
				if e := err.Error(); !strings.HasPrefix(e, "TRYAGAIN") && !strings.HasPrefix(e, "MOVED") {
					l.uncertain[c].Store(true)
					fmt.Fprintln(os.Stderr, "INCR error:", e)
				}
				time.Sleep(time.Millisecond)
			}
			l.incrs[c].Add(1)
		} else {
			k := fmt.Sprintf("w%d:%d", w, i)
			for err = l.cc.Set(ctx, k, i, 0).Err(); err != nil; err = l.cc.Set(ctx, k, i, 0).Err() {
				l.retries.Add(1)
				time.Sleep(time.Millisecond)
			}
			l.acked.Store(k, strconv.Itoa(i))
		}
		l.writes.Add(1)
	}
}

func (l *writeLoad) stop() {
	close(l.done)
	l.wg.Wait()
}

// verdict is what verify found.
type verdict struct {
	checked, lost, badCounters, skipped int
}

// verify reads back every acknowledged SET and every counter whose
// increments are all known.
func (l *writeLoad) verify(ctx context.Context) verdict {
	var v verdict
	l.acked.Range(func(k, val any) bool {
		v.checked++
		if got, err := l.cc.Get(ctx, k.(string)).Result(); err != nil || got != val.(string) {
			v.lost++
		}
		return true
	})
	for i := range l.incrs {
		if l.uncertain[i].Load() {
			v.skipped++
			continue
		}
		got, _ := l.cc.Get(ctx, "counter:"+strconv.Itoa(i)).Int64()
		if got != l.incrs[i].Load() {
			v.badCounters++
			fmt.Printf("counter:%d = %d, %d increments acknowledged\n", i, got, l.incrs[i].Load())
		}
	}
	return v
}

// attemptHook reports every command attempt's outcome on a node client.
type attemptHook struct{ fn func(redis.Cmder, error) }

func (attemptHook) DialHook(next redis.DialHook) redis.DialHook { return next }
func (h attemptHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		err := next(ctx, cmd)
		h.fn(cmd, err)
		return err
	}
}
func (h attemptHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		err := next(ctx, cmds)
		for _, c := range cmds {
			h.fn(c, c.Err())
		}
		return err
	}
}

// fetchProfile saves one pprof profile from a node's admin port.
func fetchProfile(url, path string) {
	resp, err := http.Get(url)
	if err != nil {
		fmt.Fprintln(os.Stderr, "profile:", err)
		return
	}
	defer resp.Body.Close()
	f, err := os.Create(path)
	if err != nil {
		fmt.Fprintln(os.Stderr, "profile:", err)
		return
	}
	defer f.Close()
	io.Copy(f, resp.Body)
}

func must(err error) {
	if err != nil {
		panic(err)
	}
}
