//go:build linux

package netpoll

import (
	"os"
	"syscall"
	"testing"
)

// TestWakeAfterStop: a wake-up requested after the loop stopped (a late
// RequestClose from another goroutine) writes nothing into the file that
// now has the closed eventfd's number.
func TestWakeAfterStop(t *testing.T) {
	l, err := New(nil)
	if err != nil {
		t.Fatal(err)
	}
	wakefd := l.wakefd
	done := make(chan struct{})
	go func() { l.Run(); close(done) }()
	l.Stop()
	<-done
	// The lowest free number is reused: make a pipe until its write end
	// takes wakefd's number (or give up after a few descriptors).
	var r, w *os.File
	var extra []*os.File
	for i := 0; i < 16 && (w == nil || int(w.Fd()) != wakefd); i++ {
		if w != nil {
			extra = append(extra, r, w)
		}
		if r, w, err = os.Pipe(); err != nil {
			t.Fatal(err)
		}
	}
	defer func() {
		for _, f := range append(extra, r, w) {
			f.Close()
		}
	}()
	if int(w.Fd()) != wakefd && int(r.Fd()) != wakefd {
		t.Skipf("descriptor %d was not reused by a pipe", wakefd)
	}
	l.RequestClose(0, nil)
	rfd := int(r.Fd()) // Fd makes the file blocking: take it once, then make it non-blocking
	if err := syscall.SetNonblock(rfd, true); err != nil {
		t.Fatal(err)
	}
	var b [8]byte
	if n, _ := syscall.Read(rfd, b[:]); n > 0 {
		t.Fatalf("a stopped loop wrote %d bytes into descriptor %d", n, wakefd)
	}
}
