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

func main() {
	bin := flag.String("bin", "/tmp/damselfly", "damselfly binary")
	keys := flag.Int("keys", 1000000, "keys on the source before the migration")
	writers := flag.Int("writers", 50, "writing clients during the migration")
	slots := flag.String("slots", "0-8191", "slots to move")
	profile := flag.String("profile", "", "write CPU profiles of the source and target during the migration's first -profile-seconds to this directory")
	profSecs := flag.Int("profile-seconds", 20, "length of the CPU profiles")
	flag.Parse()
	ctx := context.Background()
	dir, _ := os.MkdirTemp("", "clustermigrate")
	defer os.RemoveAll(dir)
	ports := []int{freePort(), freePort()}
	admin := []int{freePort(), freePort()}
	ids := []string{strings.Repeat("a", 40), strings.Repeat("b", 40)}
	var procs []*exec.Cmd
	for i, p := range ports {
		cmd := exec.Command(*bin, "--port", strconv.Itoa(p), "--bind", "127.0.0.1", "--cluster-mode", "yes", "--save", "",
			"--dir", dir, "--dbfilename", fmt.Sprintf("d%d.rdb", i), "--enable-debug-command", "yes", "--loglevel", "warning",
			"--admin-port", strconv.Itoa(admin[i]), "--admin-bind", "127.0.0.1", "--admin-pprof")
		cmd.Stderr = os.Stderr
		if err := cmd.Start(); err != nil {
			panic(err)
		}
		procs = append(procs, cmd)
	}
	defer func() {
		for _, p := range procs {
			p.Process.Kill()
			p.Wait()
		}
	}()
	cl := make([]*redis.Client, 2)
	for i, p := range ports {
		cl[i] = redis.NewClient(&redis.Options{Addr: fmt.Sprintf("127.0.0.1:%d", p), ReadTimeout: time.Minute})
		for cl[i].Ping(ctx).Err() != nil {
			time.Sleep(20 * time.Millisecond)
		}
	}
	topo := fmt.Sprintf("%s 127.0.0.1 %d master - 0-16383\n%s 127.0.0.1 %d master -", ids[0], ports[0], ids[1], ports[1])
	for i, c := range cl {
		must(c.Do(ctx, "CLUSTERX", "SETNODEID", ids[i]).Err())
		must(c.Do(ctx, "CLUSTERX", "SETNODES", topo, 1).Err())
	}
	must(cl[0].Do(ctx, "DEBUG", "POPULATE", *keys).Err())
	memBefore := []string{infoField(ctx, cl[0], "memory", "used_memory"), infoField(ctx, cl[1], "memory", "used_memory")}

	// MaxRetries -1: the node clients do not resend a command whose
	// connection failed (an INCR might then run twice unseen); the cluster
	// client still may, so a hook sees every attempt and marks a counter
	// whose INCR attempt failed on the network as uncertain.
	cc := redis.NewClusterClient(&redis.ClusterOptions{Addrs: []string{cl[0].Options().Addr}, MaxRedirects: 16, PoolSize: *writers + 4,
		ReadTimeout: 30 * time.Second, WriteTimeout: 30 * time.Second, MaxRetries: -1,
		MaintNotificationsConfig: &maintnotifications.Config{Mode: maintnotifications.ModeDisabled}})
	var acked sync.Map // key -> value (SET) or count (INCR counters)
	var incrs [64]atomic.Int64
	var uncertain [64]atomic.Bool // an INCR attempt failed other than by TRYAGAIN/MOVED: it may have run
	var netErrs atomic.Int64
	cc.OnNewNode(func(rdb *redis.Client) {
		rdb.AddHook(attemptHook{fn: func(cmd redis.Cmder, err error) {
			var re redis.Error
			if err == nil || errors.As(err, &re) {
				return
			}
			if netErrs.Add(1) <= 5 {
				fmt.Fprintln(os.Stderr, "attempt failed:", cmd.Name(), err)
			}
			if cmd.Name() == "incr" {
				if c, err := strconv.Atoi(strings.TrimPrefix(fmt.Sprint(cmd.Args()[1]), "counter:")); err == nil {
					uncertain[c].Store(true)
				}
			}
		}})
	})
	var writes, retries atomic.Int64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for w := 0; w < *writers; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				var err error
				if i%2 == 0 {
					c := (w*7 + i) % len(incrs)
					for err = cc.Incr(ctx, "counter:"+strconv.Itoa(c)).Err(); err != nil; err = cc.Incr(ctx, "counter:"+strconv.Itoa(c)).Err() {
						retries.Add(1)
						if e := err.Error(); !strings.HasPrefix(e, "TRYAGAIN") && !strings.HasPrefix(e, "MOVED") {
							uncertain[c].Store(true)
							fmt.Fprintln(os.Stderr, "INCR error:", e)
						}
						time.Sleep(time.Millisecond)
					}
					incrs[c].Add(1)
				} else {
					k := fmt.Sprintf("w%d:%d", w, i)
					for err = cc.Set(ctx, k, i, 0).Err(); err != nil; err = cc.Set(ctx, k, i, 0).Err() {
						retries.Add(1)
						time.Sleep(time.Millisecond)
					}
					acked.Store(k, strconv.Itoa(i))
				}
				writes.Add(1)
			}
		}(w)
	}
	time.Sleep(time.Second)
	start := time.Now()
	var profs sync.WaitGroup
	if *profile != "" {
		for i, name := range []string{"source", "target"} {
			profs.Add(1)
			go func(port int, name string) {
				defer profs.Done()
				fetchProfile(fmt.Sprintf("http://127.0.0.1:%d/debug/pprof/profile?seconds=%d", port, *profSecs), *profile+"/"+name+".pprof")
			}(admin[i], name)
		}
	}
	must(cl[0].Do(ctx, "CLUSTERX", "MIGRATE", *slots, ids[1], "async").Err()) // async: sample memory from the start
	var peakSrc, peakDst int64
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
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	took := time.Since(start)
	profs.Wait()
	for _, c := range cl {
		must(c.Do(ctx, "CLUSTERX", "SETSLOT", *slots, "NODE", ids[1], 2).Err())
	}
	time.Sleep(500 * time.Millisecond)
	close(stop)
	wg.Wait()
	lost := 0
	n := 0
	acked.Range(func(k, v any) bool {
		n++
		if got, err := cc.Get(ctx, k.(string)).Result(); err != nil || got != v.(string) {
			lost++
		}
		return true
	})
	badCounters, skipped := 0, 0
	for i := range incrs {
		if uncertain[i].Load() {
			skipped++
			continue
		}
		got, _ := cc.Get(ctx, "counter:"+strconv.Itoa(i)).Int64()
		if got != incrs[i].Load() {
			badCounters++
			fmt.Printf("counter:%d = %d, %d increments acknowledged\n", i, got, incrs[i].Load())
		}
	}
	d0, _ := cl[0].DBSize(ctx).Result()
	d1, _ := cl[1].DBSize(ctx).Result()
	fmt.Printf("keys %d, writers %d, slots %s\n", *keys, *writers, *slots)
	fmt.Printf("migration: %.1f s; longest write pause %s µs; writes during the run %d (%d retried on TRYAGAIN/MOVED)\n",
		took.Seconds(), infoField(ctx, cl[0], "cluster", "migrating_last_pause_us"), writes.Load(), retries.Load())
	fmt.Printf("acknowledged SETs checked %d, lost %d; INCR counters wrong %d of %d (%d skipped: an attempt failed on the network, so it may have run); %d attempts failed on the network\n",
		n, lost, badCounters, len(incrs)-skipped, skipped, netErrs.Load())
	fmt.Printf("keys after: source %d, target %d\n", d0, d1)
	fmt.Printf("used_memory source %s -> peak %d; target %s -> peak %d\n", memBefore[0], peakSrc, memBefore[1], peakDst)
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
