package snapshot

import (
	"bytes"
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/damselflydb/damselfly/shard"
)

// cutRace is a save raced by concurrent writers, for the tests that check
// a dump holds every key as it was at the cut whatever the writers do
// meanwhile. What the writers do and with which values is the test's.
type cutRace struct {
	// writers run in goroutines of their own, each called with n = 0, 1,
	// 2, ... until the save is done; the save starts once writers[0] has
	// been called warmup times.
	writers []func(n int)
	warmup  int
	// seq counts the writes. A writer bumps it with the key's shard
	// locked, so the cut, which holds every shard lock, sees how many came
	// before it.
	seq        *atomic.Int64
	delay      time.Duration // before each write to the output: a save that lasts
	opt        Options       // the save's options; run sets OnCut
	minOverlap int64         // writes the save must overlap, or the test proves nothing
	loadShards int           // of the store the dump is loaded into
}

// run saves st while the writers run, and checks that the save succeeded,
// that minOverlap writes or more came after the cut, and that the dump
// holds exactly the store at the cut. It returns the save's stats and the
// number of writes after the cut.
func (c cutRace) run(t *testing.T, st *shard.Store) (Stats, int64) {
	t.Helper()
	var (
		want    map[string]string
		cutSeq  int64
		stop    atomic.Bool
		wg      sync.WaitGroup
		started = make(chan struct{})
	)
	for w, write := range c.writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for n := 0; !stop.Load(); n++ {
				if w == 0 && n == c.warmup {
					close(started)
				}
				write(n)
			}
		}()
	}
	<-started
	opt := c.opt
	opt.OnCut = func() {
		cutSeq = c.seq.Load()
		want = contents(st, time.Now().UnixMilli(), false)
	}
	var buf bytes.Buffer
	stats, err := Write(context.Background(), st, &slowWriter{&buf, c.delay}, opt)
	overlapped := c.seq.Load() - cutSeq
	stop.Store(true)
	wg.Wait()
	if err != nil {
		t.Fatal(err)
	}
	if overlapped < c.minOverlap {
		t.Fatalf("only %d writes overlapped the snapshot", overlapped)
	}
	t.Logf("%d keys at the cut, %d writes during the save", len(want), overlapped)
	compareContents(t, want, contents(load(t, buf.Bytes(), c.loadShards), time.Now().UnixMilli(), true))
	return stats, overlapped
}
