package server

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/damselflydb/damselfly/snapshot"
	"github.com/redis/go-redis/v9"
)

// TestWriterGateSlowsOverwriters: during a BGSAVE held open by
// rdb-key-save-delay with a 1 MiB snapshot-max-extra-memory, three
// go-redis clients overwrite big values (40 KB) the save has not written
// yet, faster than it writes them, while another client SETs small keys
// (plain, in MULTI/EXEC, and through EVAL). With the writer gate the
// overwriters wait at the gate, holding no lock: the small-key client's
// median latency stays low, no writer waits for the budget with its shard
// locked, and the budget stays under its limit. The same run with the gate
// off (the budget's last resort only) is logged for comparison. Every
// acknowledged write is in the data afterwards, and the dump loads and
// equals the dataset at the cut.
//
// A third run leaves EVAL out: a client that reaches an event loop while a
// script runs is detached for good (waitBusy), so with EVAL the
// overwriters soon wait at the gate on goroutines of their own; without
// it they are loop clients detached to wait and handed back to a loop
// (checkReattached).
func TestWriterGateSlowsOverwriters(t *testing.T) {
	for _, run := range []struct {
		name       string
		gate, eval bool
	}{{"no-gate", false, true}, {"gate", true, true}, {"gate-no-eval", true, false}} {
		gate := run.gate
		t.Run(run.name, func(t *testing.T) {
			small, st := runGateLoad(t, gate, run.eval)
			med := small[len(small)/2]
			locked := st.DropBudget.N + st.HookBudget.N
			t.Logf("small-key commands %d: median %v p99 %v | conn waits %v | locked: drop %v hook %v | budget peak %.2f MiB",
				len(small), med, small[len(small)*99/100], st.ConnBudget, st.DropBudget, st.HookBudget, float64(st.InFlightPeak)/(1<<20))
			if !gate {
				if st.ConnBudget.N != 0 {
					t.Errorf("%d waits at a disabled gate", st.ConnBudget.N)
				}
				return
			}
			if st.ConnBudget.N == 0 {
				t.Error("no overwriter waited at the gate")
			}
			if locked != 0 {
				t.Errorf("%d waits for the budget with a shard locked", locked)
			}
			if st.InFlightPeak > gateTestBudget {
				t.Errorf("budget peak %d over the limit %d", st.InFlightPeak, gateTestBudget)
			}
			if med > 20*time.Millisecond {
				t.Errorf("small-key median latency %v during the save", med)
			}
		})
	}
}

const gateTestBudget = 1 << 20

// runGateLoad runs one save under the overwriters and the small-key client
// and returns the small-key client's latencies during the save (sorted)
// and the save's stats, after checking the data and the dump.
func runGateLoad(t *testing.T, gate, eval bool) ([]time.Duration, snapshot.Stats) {
	dir := t.TempDir()
	s := startServer(t, func(c *Config) { c.Dir = dir; c.Shards = 2; c.SnapshotMaxExtraMemory = gateTestBudget })
	s.noWriterGate.Store(!gate)
	ctx := context.Background()
	rdb := redis.NewClient(&redis.Options{Addr: s.Addr(), Protocol: 2, PoolSize: 8, ReadTimeout: time.Minute})
	defer rdb.Close()
	const keys, size, writers = 240, 40 << 10, 3
	val := func(i, gen int) string {
		return strings.Repeat(fmt.Sprintf("%d.%d.", i, gen), size/4)[:size]
	}
	p := rdb.Pipeline()
	for i := range keys {
		p.Set(ctx, fmt.Sprint("big:", i), val(i, 0), 0)
	}
	if _, err := p.Exec(ctx); err != nil {
		t.Fatal(err)
	}
	atCut, err := rdb.Do(ctx, "DEBUG", "DIGEST").Text()
	if err != nil {
		t.Fatal(err)
	}
	rdb.ConfigSet(ctx, "rdb-key-save-delay", "20000") // 20 ms per key, big values included
	if err := rdb.BgSave(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	saving := func() bool {
		return strings.Contains(rdb.Info(ctx, "persistence").Val(), "rdb_bgsave_in_progress:1")
	}

	// Overwriters, one connection each: writer w owns the keys i ≡ w (mod
	// writers), so the last value it had acknowledged for a key is the
	// key's final value. Writer 0 pipelines 8 SETs at a time, so that a
	// connection detached to wait at the gate has input buffered.
	var stop atomic.Bool
	var wg sync.WaitGroup
	acked := make([]map[int]int, writers)
	conns := make([]*redis.Client, writers)
	for w := range writers {
		acked[w] = map[int]int{}
		conns[w] = redis.NewClient(&redis.Options{Addr: s.Addr(), Protocol: 2, PoolSize: 1, ReadTimeout: time.Minute})
		defer conns[w].Close()
		wg.Add(1)
		go func() {
			defer wg.Done()
			rc := conns[w]
			for gen := 1; !stop.Load(); gen++ {
				for i := w; i < keys && !stop.Load(); i += writers * 8 {
					p := rc.Pipeline()
					var sent []int
					for j := i; j < min(keys, i+writers*8) && (w == 0 || len(sent) == 0); j += writers {
						p.Set(ctx, fmt.Sprint("big:", j), val(j, gen), 0)
						sent = append(sent, j)
					}
					if _, err := p.Exec(ctx); err != nil {
						t.Error(err)
						return
					}
					for _, j := range sent {
						acked[w][j] = gen
					}
				}
			}
		}()
	}

	// The small-key client: SET, MULTI/EXEC and EVAL (if eval) in turn.
	kinds := 2
	if eval {
		kinds = 3
	}
	var lat []time.Duration
	smallAcked := map[string]int{}
	wg.Add(1)
	go func() {
		defer wg.Done()
		for n := 0; !stop.Load(); n++ {
			k := fmt.Sprint("small:", n%50)
			t0 := time.Now()
			var err error
			switch n % kinds {
			case 0:
				err = rdb.Set(ctx, k, n, 0).Err()
			case 1:
				_, err = rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
					p.Set(ctx, k, n, 0)
					return nil
				})
			default:
				err = rdb.Eval(ctx, "return redis.call('SET', KEYS[1], ARGV[1])", []string{k}, n).Err()
			}
			if err != nil {
				t.Error(err)
				return
			}
			lat = append(lat, time.Since(t0))
			smallAcked[k] = n
		}
	}()
	time.Sleep(time.Second)
	still := saving()
	stop.Store(true)
	wg.Wait()
	if !still {
		t.Fatal("the BGSAVE finished within a second: raise rdb-key-save-delay")
	}
	rdb.ConfigSet(ctx, "rdb-key-save-delay", "0")
	for deadline := time.Now().Add(2 * time.Minute); saving(); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("BGSAVE did not finish")
		}
	}
	if !strings.Contains(rdb.Info(ctx, "persistence").Val(), "rdb_last_bgsave_status:ok") {
		t.Fatal("BGSAVE failed")
	}
	st := s.persist.lastStats.Load()
	if st == nil {
		t.Fatal("no save stats")
	}
	if s.loops != nil && !eval {
		checkReattached(t, s, conns)
	}

	// Every acknowledged write is there.
	for w := range writers {
		for i, gen := range acked[w] {
			if got := rdb.Get(ctx, fmt.Sprint("big:", i)).Val(); got != val(i, gen) {
				t.Fatalf("big:%d is not the acknowledged generation %d", i, gen)
			}
		}
	}
	for k, n := range smallAcked {
		if got := rdb.Get(ctx, k).Val(); got != fmt.Sprint(n) {
			t.Fatalf("%s = %q, acknowledged %d", k, got, n)
		}
	}
	// The dump loads and holds the dataset at the cut.
	fresh := startServer(t, func(c *Config) { c.Dir = dir; c.Shards = 3 })
	if err := fresh.LoadDump(); err != nil {
		t.Fatal(err)
	}
	got, err := newClient(t, fresh).Do(ctx, "DEBUG", "DIGEST").Text()
	if err != nil {
		t.Fatal(err)
	}
	if got != atCut {
		t.Fatalf("the dump's digest %s differs from the dataset's at the cut %s", got, atCut)
	}
	if len(lat) == 0 {
		t.Fatal("the small-key client ran no command")
	}
	slices.Sort(lat)
	return lat, *st
}

// checkReattached: on the event loops, the overwriters were detached to
// wait at the gate (or not at all, without it) and, once the save is over
// and each has sent one more command, every one is served by a loop again.
func checkReattached(t *testing.T, s *Server, conns []*redis.Client) {
	ctx := context.Background()
	ids := make([]int64, len(conns))
	for i, rc := range conns {
		id, err := rc.ClientID(ctx).Result()
		if err != nil {
			t.Fatal(err)
		}
		ids[i] = id
	}
	det := s.gateDetaches.Load()
	if !s.noWriterGate.Load() && det == 0 {
		t.Error("no loop client was detached to wait at the gate")
	}
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		off := 0
		for _, id := range ids {
			s.clientsMu.Lock()
			c := s.clients[id]
			s.clientsMu.Unlock()
			if c == nil {
				t.Fatalf("client %d is gone", id)
			}
			c.connMu.Lock()
			if c.loop == nil {
				off++
			}
			c.connMu.Unlock()
		}
		if off == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of the overwriters are still off the event loops", off)
		}
		for _, rc := range conns {
			if err := rc.Ping(ctx).Err(); err != nil {
				t.Fatal(err)
			}
		}
	}
	t.Logf("detached to wait at the gate %d times, handed back to a loop %d times, kept off for a command %d times",
		s.gateDetaches.Load(), s.gateReattaches.Load(), s.gateKept.Load())
	// (The small-key client's connections may be marked too, by a hook's
	// chunk; one may then stay on its goroutine until its next command.)
	if d, r, k := s.gateDetaches.Load(), s.gateReattaches.Load(), s.gateKept.Load(); r == 0 || r+k > d {
		t.Errorf("%d detached for the gate, %d handed back, %d kept for a command", d, r, k)
	}
}
