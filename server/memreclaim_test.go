package server

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
)

// TestDeleteFreesBudgetAtOnce is issue 13's reproduction scaled down: under
// noeviction, fill a set until -OOM, DEL it, and the next write is accepted
// at once (not after Go's next garbage collection).
//
// used_memory counts the whole process's Go heap, so the test runs in a
// child process of its own: in the shared test binary, live memory of other
// tests (goroutines and servers still winding down) counted against the
// 40 MB limit and refused the probe.
func TestDeleteFreesBudgetAtOnce(t *testing.T) {
	if os.Getenv("DAMSELFLY_MEMRECLAIM_CHILD") == "" {
		cmd := exec.Command(os.Args[0], "-test.run=^TestDeleteFreesBudgetAtOnce$", "-test.v")
		cmd.Env = append(os.Environ(), "DAMSELFLY_MEMRECLAIM_CHILD=1")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("child process: %v\n%s", err, out)
		}
		if !strings.Contains(string(out), "--- PASS: TestDeleteFreesBudgetAtOnce") {
			t.Fatalf("child process did not run the test:\n%s", out)
		}
		return
	}
	s := startServer(t, func(c *Config) { c.MaxMemory = 40 << 20 })
	rdb := newClient(t, s)
	ctx := context.Background()
	oom := false
	for i := 0; i < 2000 && !oom; i++ {
		members := make([]any, 500)
		for j := range members {
			members[j] = fmt.Sprintf("member-%d-%d-%s", i, j, strings.Repeat("x", 40))
		}
		err := rdb.SAdd(ctx, "big", members...).Err()
		if err != nil {
			if !strings.HasPrefix(err.Error(), "OOM") {
				t.Fatal(err)
			}
			oom = true
		}
		if i%20 == 0 {
			waitCron(s)
		}
	}
	if !oom {
		t.Fatal("never reached maxmemory")
	}
	if err := rdb.Del(ctx, "big").Err(); err != nil {
		t.Fatal(err)
	}
	if err := rdb.Set(ctx, "probe", "x", 0).Err(); err != nil {
		t.Fatalf("SET right after DEL on an empty database: %v", err)
	}
}

// waitCron measures used memory as the 100 ms cron does.
func waitCron(s *Server) {
	heap, dataset := s.memoryParts(nil)
	s.usedMem.Store(heap + dataset)
}
