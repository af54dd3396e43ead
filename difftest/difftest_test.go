package difftest

import (
	"io"
	"log/slog"
	"math/rand/v2"
	"os"
	"os/exec"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/damselflydb/damselfly/internal/redistest"
	"github.com/damselflydb/damselfly/server"
)

// TestDifferential runs random command sequences against Damselfly and a
// real redis-server side by side (see the package doc). Environment:
//
//	DIFFTEST_DURATION  how long to run (default 3s; e.g. 1h)
//	DIFFTEST_SEED      first seed (default: random, printed)
//	DIFFTEST_STEPS     steps per sequence (default 60)
//	DIFFTEST_ONE=1     run only the seed DIFFTEST_SEED
func TestDifferential(t *testing.T) {
	dur := 3 * time.Second
	if testing.Short() {
		dur = time.Second
	}
	if v := os.Getenv("DIFFTEST_DURATION"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil {
			t.Fatalf("DIFFTEST_DURATION: %v", err)
		}
		dur = d
	}
	seed := rand.Uint64() >> 16
	if v := os.Getenv("DIFFTEST_SEED"); v != "" {
		s, err := strconv.ParseUint(v, 10, 64)
		if err != nil {
			t.Fatalf("DIFFTEST_SEED: %v", err)
		}
		seed = s
	}
	cfg := seqConfig{conns: 3, steps: 60}
	if v := os.Getenv("DIFFTEST_STEPS"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			t.Fatalf("DIFFTEST_STEPS: %q", v)
		}
		cfg.steps = n
	}
	redisAddr := startRedis(t)
	damselAddr := startDamselfly(t)
	r, err := newRunner(redisAddr, damselAddr)
	if err != nil {
		t.Fatal(err)
	}
	defer r.close()

	found := map[string]bool{} // by summary: one report per kind of divergence
	var sequences, steps int
	start := time.Now()
	for s := seed; ; s++ {
		if os.Getenv("DIFFTEST_ONE") == "1" && s != seed {
			break
		}
		if os.Getenv("DIFFTEST_ONE") != "1" && time.Since(start) > dur {
			break
		}
		seq := generate(s, cfg)
		sequences++
		steps += len(seq)
		d, err := r.run(seq, cfg.conns)
		if err != nil {
			t.Fatalf("seed %d: %v", s, err)
		}
		if d == nil {
			continue
		}
		kind := strings.TrimPrefix(d.summary, "EXEC/")
		if found[kind] {
			continue
		}
		found[kind] = true
		min, md := minimize(r, seq[:d.at+min(1, len(seq)-d.at)], cfg.conns, d, 300, 90*time.Second)
		t.Errorf("divergence (seed %d, DIFFTEST_SEED=%d DIFFTEST_ONE=1 to rerun): %s\nminimal sequence (%d steps):\n%s\n%s",
			s, s, d.summary, len(min), render(min), md)
	}
	kinds := make([]string, 0, len(found))
	for k := range found {
		kinds = append(kinds, k)
	}
	sort.Strings(kinds)
	t.Logf("seeds %d..%d: %d sequences, %d steps, %d commands per server, %d kinds of divergence %v in %v",
		seed, seed+uint64(sequences)-1, sequences, steps, r.commands, len(found), kinds, time.Since(start).Round(time.Millisecond))
}

func render(steps []step) string {
	var sb strings.Builder
	for _, s := range steps {
		sb.WriteString("  " + s.String() + "\n")
	}
	return sb.String()
}

// minimize shrinks a failing sequence (delta debugging: drop chunks of
// steps while a divergence on the same command remains), within budget.
func minimize(r *runner, seq []step, nconns int, d *divergence, runs int, budget time.Duration) ([]step, *divergence) {
	end := time.Now().Add(budget)
	fails := func(cand []step) *divergence {
		runs--
		got, err := r.run(cand, nconns)
		if err != nil || got == nil || got.summary != d.summary {
			return nil
		}
		return got
	}
	best, bestD := seq, d
	for chunk := len(best) / 2; chunk >= 1; {
		removed := false
		for i := 0; i+chunk <= len(best) && runs > 0 && time.Now().Before(end); {
			cand := append(append([]step(nil), best[:i]...), best[i+chunk:]...)
			if got := fails(cand); got != nil {
				best, bestD, removed = cand[:got.at+min(1, len(cand)-got.at)], got, true
				continue
			}
			i += chunk
		}
		if runs <= 0 || time.Now().After(end) {
			break
		}
		if !removed {
			chunk /= 2
		}
	}
	return best, bestD
}

// startDamselfly runs an in-process server on a free loopback port.
func startDamselfly(t *testing.T) string {
	t.Helper()
	cfg := server.Config{Port: 0, Bind: "127.0.0.1", Shards: 4, DBNum: 16, Dir: t.TempDir(), DBFilename: "dump.rdb",
		Logger:           slog.New(slog.NewTextHandler(io.Discard, nil)),
		GoroutinePerConn: os.Getenv("DAMSELFLY_GOROUTINE_PER_CONN") == "1"}
	if testing.Verbose() {
		cfg.Logger = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	}
	s := server.New(cfg)
	if err := s.Start(cfg); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s.Addr()
}

// startRedis starts Debian's redis-server on a free port, or skips.
func startRedis(t *testing.T) string {
	t.Helper()
	if _, err := exec.LookPath("redis-server"); err != nil {
		t.Skip("redis-server not installed (apt-get install -y redis-server): no differential test")
	}
	return redistest.Start(t, "", "--save", "", "--appendonly", "no", "--dir", t.TempDir()).Addr
}

// TestReplay runs a sequence written in the report's format
// (DIFFTEST_REPLAY=file), for debugging a minimized divergence.
func TestReplay(t *testing.T) {
	file := os.Getenv("DIFFTEST_REPLAY")
	if file == "" {
		t.Skip("DIFFTEST_REPLAY not set")
	}
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	seq, err := parseSteps(string(data))
	if err != nil {
		t.Fatal(err)
	}
	r, err := newRunner(startRedis(t), startDamselfly(t))
	if err != nil {
		t.Fatal(err)
	}
	defer r.close()
	d, err := r.run(seq, 3)
	if err != nil {
		t.Fatal(err)
	}
	if d != nil {
		t.Fatal(d)
	}
}
