package snapshot

import (
	"bytes"
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/damselflydb/damselfly/shard"
)

// TestWriterGate: the zero gate is open; closed, every Wait gets a channel
// that the opening closes, and each such wait is counted in the attached
// save's measurements with its length; end opens and detaches.
func TestWriterGate(t *testing.T) {
	var g WriterGate
	if g.Closed() || g.Wait() != nil {
		t.Fatal("the zero gate is not open")
	}
	var w waits
	g.begin(&w)
	g.open() // no-op while open
	g.close()
	g.close() // no-op while closed
	if !g.Closed() {
		t.Fatal("not closed")
	}
	const waiters = 8
	var wg sync.WaitGroup
	var mu sync.Mutex
	woke := 0
	for range waiters {
		ch := g.Wait()
		if ch == nil {
			t.Fatal("Wait on a closed gate returned nil")
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-ch
			mu.Lock()
			woke++
			mu.Unlock()
		}()
	}
	time.Sleep(20 * time.Millisecond)
	mu.Lock()
	if woke != 0 {
		t.Fatalf("%d waiters passed a closed gate", woke)
	}
	mu.Unlock()
	g.open()
	wg.Wait()
	if g.Closed() || g.Wait() != nil {
		t.Fatal("not open after open")
	}
	b := w.budgetWaits(causeConnBudget)
	if b.N != waiters || b.Max < 20*time.Millisecond || b.Total < waiters*20*time.Millisecond {
		t.Fatalf("waits counted %v, want %d of at least 20ms", b, waiters)
	}

	// A save's end opens the gate, and later waits count nowhere.
	g.close()
	ch := g.Wait()
	g.end()
	select {
	case <-ch:
	default:
		t.Fatal("end left the gate closed")
	}
	if n := w.budgetWaits(causeConnBudget).N; n != waiters+1 {
		t.Fatalf("%d waits, want %d", n, waiters+1)
	}
	g.close()
	g.Wait()
	g.open()
	if n := w.budgetWaits(causeConnBudget).N; n != waiters+1 {
		t.Fatalf("a wait after the save's end was counted in it (%d)", n)
	}
}

// TestBudgetSoftLimit: the budget closes its gate while more than half of
// its limit is in flight and opens it as soon as no more is.
func TestBudgetSoftLimit(t *testing.T) {
	var g WriterGate
	b := newBudget(1000, &g)
	b.acquire(500, nil)
	if g.Closed() || b.overSoft() {
		t.Fatal("closed at the soft limit")
	}
	if !b.tryAcquire(1) || !g.Closed() || !b.overSoft() {
		t.Fatal("open over the soft limit")
	}
	b.adjust(-1)
	if g.Closed() {
		t.Fatal("closed back at the soft limit")
	}
	b.adjust(400)
	if !g.Closed() {
		t.Fatal("open over the soft limit (adjust)")
	}
	b.release(400)
	if g.Closed() {
		t.Fatal("closed under the soft limit (release)")
	}
	// Past the soft limit, below the hard one, nothing waits.
	if !b.tryAcquire(499) || !g.Closed() {
		t.Fatal("a charge under the hard limit was refused")
	}
	if b.tryAcquire(2) {
		t.Fatal("a charge over the hard limit was taken")
	}
}

// TestWriteGateMarks: writers overwriting big values the save has not
// written, faster than the output drains them, get their shard marked
// once the budget passes its soft limit; a writer that waits at the gate
// whenever its shard was marked (as the server's connections do) keeps the
// budget under the limit without any wait for room with the shard locked.
// The gate is open when Write returns, and the file holds the cut.
func TestWriteGateMarks(t *testing.T) {
	const keys, size, limit = 48, 64 << 10, 1 << 20
	st := shard.NewStore(2, 16)
	val := func(i int, tag byte) []byte { return bytes.Repeat([]byte{tag, byte('a' + i%26)}, size/2) }
	for i := range keys {
		put(st, 0, fmt.Sprint("k", i), shard.Value{Type: shard.TypeString, Str: val(i, 'o')})
	}
	want := contents(st, time.Now().UnixMilli(), true)
	var g WriterGate
	cut := make(chan struct{})
	stop := make(chan struct{})
	var wg sync.WaitGroup
	var marksMu sync.Mutex
	marks := 0
	for w := range 3 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-cut
			fresh := val(w, 'n')
			for i := w; ; i += 3 {
				select {
				case <-stop:
					return
				default:
				}
				key := []byte(fmt.Sprint("k", i%keys))
				sh, h := st.ShardOf(key)
				sh.Lock()
				sh.DB(0).Put(h, key, shard.Value{Type: shard.TypeString, Str: fresh})
				marked := sh.TakeGateMark()
				sh.Unlock()
				if marked {
					marksMu.Lock()
					marks++
					marksMu.Unlock()
					if ch := g.Wait(); ch != nil {
						<-ch
					}
				}
			}
		}()
	}
	var buf bytes.Buffer
	stats, err := Write(context.Background(), st, &slowWriter{w: &buf, delay: 200 * time.Microsecond}, Options{MaxExtraMemory: limit, Gate: &g, OnCut: func() { close(cut) }})
	close(stop)
	wg.Wait()
	if err != nil {
		t.Fatal(err)
	}
	if g.Closed() {
		t.Fatal("the gate is closed after Write returned")
	}
	t.Logf("marks %d, conn waits %v, drop (locked) %v, hook (locked) %v, peak %d", marks, stats.ConnBudget, stats.DropBudget, stats.HookBudget, stats.InFlightPeak)
	if marks == 0 || stats.ConnBudget.N == 0 {
		t.Error("no writer was marked to wait at the gate")
	}
	if stats.DropBudget.N+stats.HookBudget.N != 0 {
		t.Error("a writer waited for the budget with its shard locked")
	}
	if stats.InFlightPeak > limit {
		t.Errorf("in flight at most %d bytes, limit %d", stats.InFlightPeak, limit)
	}
	compareContents(t, want, contents(load(t, buf.Bytes(), 3), time.Now().UnixMilli(), true))
}
