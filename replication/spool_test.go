package replication

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"sync"
	"testing"
	"time"
)

// slowWriter records what it is sent; it blocks until released, then
// sleeps a little on some writes so the spool alternates between spilling
// and catching up.
type slowWriter struct {
	mu      sync.Mutex
	got     bytes.Buffer
	release chan struct{}
	rnd     *rand.Rand
	fail    error
}

func (w *slowWriter) Write(p []byte) (int, error) {
	<-w.release
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.fail != nil {
		return 0, w.fail
	}
	if w.rnd.IntN(4) == 0 {
		time.Sleep(time.Millisecond)
	}
	return w.got.Write(p)
}

func TestSpoolKeepsOrderAcrossSpills(t *testing.T) {
	rnd := rand.New(rand.NewPCG(1, 2))
	w := &slowWriter{release: make(chan struct{}), rnd: rand.New(rand.NewPCG(3, 4))}
	close(w.release)
	sp := newSpool(w, 4<<10, t.TempDir())
	var want bytes.Buffer
	for i := range 3000 {
		p := make([]byte, rnd.IntN(3000)+1)
		for j := range p {
			p[j] = byte(i + j)
		}
		want.Write(p)
		if _, err := sp.Write(p); err != nil {
			t.Fatal(err)
		}
		if i%500 == 0 {
			time.Sleep(20 * time.Millisecond) // let the drain catch up: back to memory
		}
	}
	if err := sp.Close(); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(w.got.Bytes(), want.Bytes()) {
		t.Fatalf("sent %d bytes, want %d identical ones", w.got.Len(), want.Len())
	}
}

// TestSpoolNeverWaitsForTheReplica: with the destination stalled, 32 MiB of
// writes complete at once (spilled to disk), and all arrive once it moves.
func TestSpoolNeverWaitsForTheReplica(t *testing.T) {
	w := &slowWriter{release: make(chan struct{}), rnd: rand.New(rand.NewPCG(5, 6))}
	sp := newSpool(w, 1<<20, t.TempDir())
	chunk := bytes.Repeat([]byte("0123456789abcdef"), 4096)
	start := time.Now()
	for range 32 << 20 / len(chunk) {
		if _, err := sp.Write(chunk); err != nil {
			t.Fatal(err)
		}
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("writes took %v with the replica stalled", d)
	}
	close(w.release)
	if err := sp.Close(); err != nil {
		t.Fatal(err)
	}
	if w.got.Len() != 32<<20 {
		t.Fatalf("sent %d bytes, want %d", w.got.Len(), 32<<20)
	}
}

func TestSpoolReportsSendErrors(t *testing.T) {
	boom := errors.New("connection reset")
	w := &slowWriter{release: make(chan struct{}), rnd: rand.New(rand.NewPCG(7, 8)), fail: boom}
	close(w.release)
	sp := newSpool(w, 1<<10, t.TempDir())
	deadline := time.Now().Add(5 * time.Second)
	for {
		if _, err := sp.Write(make([]byte, 100)); err != nil {
			if !errors.Is(err, boom) {
				t.Fatalf("write error %v, want %v", err, boom)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("writes kept succeeding after the drain failed")
		}
		time.Sleep(time.Millisecond)
	}
	if err := sp.Close(); !errors.Is(err, boom) {
		t.Fatalf("Close: %v, want %v", err, boom)
	}
}
