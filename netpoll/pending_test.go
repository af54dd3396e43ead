//go:build linux

package netpoll

import "testing"

// TestPending: Pending sees ready events without taking them from the loop.
func TestPending(t *testing.T) {
	l, err := New(nil)
	if err != nil {
		t.Fatal(err)
	}
	if l.Pending() {
		t.Fatal("a fresh loop reports pending events")
	}
	l.wake() // the loop is not running: its wake-up stays ready
	for i := 0; i < 2; i++ {
		if !l.Pending() {
			t.Fatalf("check %d: the wake-up is not reported", i)
		}
	}
	done := make(chan struct{})
	go func() { l.Run(); close(done) }()
	l.Stop()
	<-done
	if l.Pending() {
		t.Error("a stopped loop reports pending events")
	}
}
