package snapshot

import (
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/damselflydb/damselfly/shard"
)

// TestAdaptivePacing: a paced Write pauses only while clients wait (Busy),
// or, without Busy, only when writes reach its shards; whatever it does, the
// dump is complete.
func TestAdaptivePacing(t *testing.T) {
	const nkeys = 30000
	st := shard.NewStore(2, 1)
	for i := range nkeys {
		put(st, 0, fmt.Sprint("k", i), shard.Value{Type: shard.TypeString, Str: []byte("value")})
	}
	want := contents(st, time.Now().UnixMilli(), true)
	check := func(name string, data []byte, stats Stats) {
		t.Helper()
		if stats.Keys != nkeys {
			t.Errorf("%s: %d keys saved, want %d", name, stats.Keys, nkeys)
		}
		compareContents(t, want, contents(load(t, data, 3), time.Now().UnixMilli(), true))
	}

	var asked atomic.Int64
	data, stats := save(t, st, Options{Pace: 4, Busy: func() bool { asked.Add(1); return false }})
	check("idle", data, stats)
	if asked.Load() == 0 || stats.Paused != 0 {
		t.Errorf("nobody waiting: Busy asked %d times, paused %v; want asked, no pause", asked.Load(), stats.Paused)
	}

	data, stats = save(t, st, Options{Pace: 4, Busy: func() bool { return true }})
	check("busy", data, stats)
	if stats.Paused == 0 {
		t.Error("clients always waiting: the save never paused")
	}

	data, stats = save(t, st, Options{Pace: 4})
	check("no Busy, no writes", data, stats)
	if stats.Paused != 0 {
		t.Errorf("no Busy and no writes: paused %v", stats.Paused)
	}

	// Without Busy, writes during the save make it pause. The writers
	// touch keys that did not exist at the cut, so the dump stays the same.
	// They start only after the cut, so none of their keys is in the dump.
	var stop atomic.Bool
	var wg sync.WaitGroup
	cut := make(chan struct{})
	for w := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-cut
			for n := 0; !stop.Load(); n++ {
				k := []byte(fmt.Sprint("new", w, "-", n%1000))
				sh, h := st.ShardOf(k)
				sh.Lock()
				sh.DB(0).Put(h, k, shard.Value{Type: shard.TypeString, Str: []byte("x")})
				sh.Unlock()
			}
		}()
	}
	data, stats = save(t, st, Options{Pace: 4, OnCut: func() { close(cut) }})
	stop.Store(true)
	wg.Wait()
	check("no Busy, writes", data, stats)
	if stats.Paused == 0 {
		t.Error("writes during the save, no Busy: the save never paused")
	}
}
