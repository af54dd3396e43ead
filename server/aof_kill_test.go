package server

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"log/slog"
	"math/rand"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// TestAOFHelperProcess is the server the kill -9 test runs in a child
// process (it does nothing in a normal run).
func TestAOFHelperProcess(t *testing.T) {
	if os.Getenv("DAMSELFLY_AOF_CHILD") != "1" {
		t.Skip("helper process for TestAOFKill9")
	}
	cfg := Config{Port: 0, Bind: "127.0.0.1", Shards: 4, DBNum: 16, Dir: os.Getenv("DAMSELFLY_AOF_DIR"), DBFilename: "dump.rdb",
		Logger: slog.New(slog.NewTextHandler(os.Stderr, nil)),
		AOF:    AOFConfig{Enabled: true, Fsync: os.Getenv("DAMSELFLY_AOF_FSYNC"), AutoMinSize: 256 << 10}}
	s := New(cfg)
	if err := s.LoadDump(); err != nil {
		fmt.Println("ERR", err)
		os.Exit(1)
	}
	if err := s.Start(cfg); err != nil {
		fmt.Println("ERR", err)
		os.Exit(1)
	}
	fmt.Println("ADDR", s.Addr())
	select {}
}

// child is a server in a child process.
type child struct {
	cmd  *exec.Cmd
	addr string
}

func startChild(t *testing.T, dir, fsync string) *child {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestAOFHelperProcess$")
	cmd.Env = append(os.Environ(), "DAMSELFLY_AOF_CHILD=1", "DAMSELFLY_AOF_DIR="+dir, "DAMSELFLY_AOF_FSYNC="+fsync)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if testing.Verbose() {
		cmd.Stderr = os.Stderr
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(out)
	line, err := br.ReadString('\n')
	if err != nil || !strings.HasPrefix(line, "ADDR ") {
		cmd.Process.Kill()
		cmd.Wait()
		t.Fatalf("child server did not start: %q %v", line, err)
	}
	go io.Copy(io.Discard, br)
	return &child{cmd: cmd, addr: strings.TrimSpace(strings.TrimPrefix(line, "ADDR "))}
}

func (c *child) kill() {
	c.cmd.Process.Kill() // SIGKILL
	c.cmd.Wait()
}

// TestAOFKill9: writers increment counters while the server is killed
// with SIGKILL; after a restart from the AOF, with appendfsync always
// every acknowledged increment is there, with everysec at most about a
// second of them is missing. Automatic rewrites run during the load (a
// small auto-aof-rewrite-min-size), so kills also land in rewrites.
// DAMSELFLY_AOF_KILL_ROUNDS sets the number of rounds (default 3).
func TestAOFKill9(t *testing.T) {
	rounds := 3
	if n, err := strconv.Atoi(os.Getenv("DAMSELFLY_AOF_KILL_ROUNDS")); err == nil && n > 0 {
		rounds = n
	}
	for _, fsync := range []string{"always", "everysec"} {
		t.Run(fsync, func(t *testing.T) {
			dir := t.TempDir()
			const writers = 8
			acked := make([]int64, writers) // last acknowledged value per counter
			rnd := rand.New(rand.NewSource(time.Now().UnixNano()))
			for round := 0; round < rounds; round++ {
				c := startChild(t, dir, fsync)
				rc := redis.NewClient(&redis.Options{Addr: c.addr, MaxRetries: -1, PoolSize: writers + 2})
				ctx := context.Background()
				// Everything acknowledged before is there.
				for i := 0; i < writers; i++ {
					v, err := rc.Get(ctx, fmt.Sprint("ctr:", i)).Int64()
					if err != nil && err != redis.Nil {
						c.kill()
						t.Fatal(err)
					}
					if v < acked[i] || v > acked[i]+1 {
						c.kill()
						t.Fatalf("round %d: counter %d is %d after the restart, last acknowledged %d", round, i, v, acked[i])
					}
					acked[i] = v
				}
				// ackTimes[i][v] is when value v of counter i was acknowledged.
				ackTimes := make([]map[int64]time.Time, writers)
				var wg sync.WaitGroup
				stop := make(chan struct{})
				for i := 0; i < writers; i++ {
					ackTimes[i] = map[int64]time.Time{}
					wg.Add(1)
					go func() {
						defer wg.Done()
						pad := strings.Repeat("p", 100)
						for n := 0; ; n++ {
							select {
							case <-stop:
								return
							default:
							}
							pipe := rc.TxPipeline()
							incr := pipe.Incr(ctx, fmt.Sprint("ctr:", i))
							pipe.Set(ctx, fmt.Sprint("pad:", i, ":", n%1000), pad, 0)
							if _, err := pipe.Exec(ctx); err != nil {
								return // killed
							}
							acked[i] = incr.Val()
							ackTimes[i][incr.Val()] = time.Now()
						}
					}()
				}
				time.Sleep(time.Duration(300+rnd.Intn(700)) * time.Millisecond)
				killedAt := time.Now()
				c.kill()
				close(stop)
				wg.Wait()
				rc.Close()
				if fsync == "everysec" {
					// Restart now and accept what is missing if it was
					// acknowledged within the last 2 seconds.
					c2 := startChild(t, dir, fsync)
					rc2 := redis.NewClient(&redis.Options{Addr: c2.addr})
					for i := 0; i < writers; i++ {
						v, _ := rc2.Get(ctx, fmt.Sprint("ctr:", i)).Int64()
						if v < acked[i] {
							if at, ok := ackTimes[i][v+1]; ok && killedAt.Sub(at) > 2*time.Second {
								t.Errorf("round %d: counter %d lost increments acknowledged %v before the kill", round, i, killedAt.Sub(at))
							}
							acked[i] = v
						}
					}
					rc2.Close()
					c2.kill()
				}
			}
			t.Logf("%d rounds; counters at %v", rounds, acked)
		})
	}
}
