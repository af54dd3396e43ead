//go:build linux

package netpoll

import (
	"syscall"
	"unsafe"
)

// Pending reports whether any connection of the loop has input (or output
// room it waits for) ready to be handled right now. It may be called from
// any goroutine: it asks the loop's epoll instance without waiting and
// takes nothing from it (every registration is level-triggered, so the
// loop still sees the same events). Background work such as a snapshot's
// serializer uses it to yield the CPU only while clients wait for it.
//
// On an io_uring loop, completions the loop has not reaped are in the
// completion ring, or, with DEFER_TASKRUN, still queued as task work
// that runs only when the loop thread next enters the kernel (the ring is
// set up with IORING_SETUP_TASKRUN_FLAG, so the kernel raises
// IORING_SQ_TASKRUN meanwhile): both count. Looking at the completion ring
// alone missed input reaching a loop that waits for a CPU, the very case
// a yielding snapshot serializer asks about.
//
// The check holds the loop's mutex, so the epoll descriptor cannot be
// closed (and its number reused) meanwhile: Run marks the loop stopped
// under the same mutex before it closes anything.
func (l *Loop) Pending() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.stopped {
		return false
	}
	if l.u != nil {
		r := l.u.r
		return r.pending() || r.taskrun() || r.overflowed()
	}
	var ev [1]syscall.EpollEvent
	r, _, errno := syscall.RawSyscall6(syscall.SYS_EPOLL_PWAIT, uintptr(l.epfd), // epoll_pwait, no sigmask: arm64 has no epoll_wait
		uintptr(unsafe.Pointer(&ev[0])), 1, 0, 0, 0)
	return errno == 0 && r > 0
}

// Awake reports whether the loop is anywhere but asleep in the kernel (or
// on the Go poller) waiting for input: serving, or wanting a CPU back
// (runnable after runtime.Gosched, parked for the Go poller in
// yieldToNetpoll, or in a handler waiting for a lock whose holder must run
// first). Its clients may then have nothing new in the ring, their replies
// not even submitted yet, so Pending says no: a snapshot's big value
// encoder that asked only Pending ran on for 15-70 ms while both loops
// waited for a CPU (runtime trace of a BGSAVE of 100 KB values under 8
// writers, BENCHMARKS.md). Background work that can step aside cheaply
// (runtime.Gosched, which returns at once when nobody else is runnable)
// asks this; work that sleeps asks Pending (a sleeper's timer may wait
// for the P of a loop that blocks in the kernel without handing it over).
func (l *Loop) Awake() bool {
	return !l.asleep.Load()
}
