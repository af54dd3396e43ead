//go:build linux

package netpoll

import (
	"os"
	"syscall"
	"unsafe"
)

// pollYield lets the Go scheduler poll the network for an io_uring loop.
//
// A goroutine whose socket becomes ready through Go's own poller (a
// replication link, the cluster bus, a client served on a goroutine of its
// own, an in-process client) becomes runnable only when some P polls the
// network. A P's scheduler does so only once it finds its run queues empty
// (runtime.findRunnable); sysmon polls only every ~10 ms. With every P
// held by a busy io_uring loop, runtime.Gosched does not help: the loop
// goroutine goes to the global run queue, and findRunnable takes it back
// from there before it looks at the network. Such goroutines then waited
// up to 10 ms per wake-up where the epoll loop, which parks on the Go
// poller whenever it is idle, woke them in microseconds.
//
// So the loop parks on the Go poller instead, on an eventfd of its own
// that it makes readable just before: the goroutine is in no run queue,
// its P's scheduler runs expired timers and what is queued, then polls the
// network, which readies the loop and every goroutine whose fd became
// ready, all in one epoll_wait(0). A time.Sleep would not do: the runtime
// rounds a poll timeout under 1 ms up to 1 ms, so the loop would sleep a
// whole millisecond whenever nothing else was ready.
//
// Cost per yield: an eventfd write and read, a non-blocking epoll_wait, and
// the P's hand-over to another thread and back (the loop's goroutine is
// locked to its thread), what runtime.Gosched costs already.
type pollYield struct {
	f     *os.File
	rc    syscall.RawConn
	wrote bool               // the eventfd was made readable for this yield
	step  func(uintptr) bool // p.readable, bound once: yield does not allocate
}

func newPollYield() (*pollYield, error) {
	fd, _, errno := syscall.Syscall(syscall.SYS_EVENTFD2, 0, syscall.O_CLOEXEC|syscall.O_NONBLOCK, 0)
	if errno != 0 {
		return nil, os.NewSyscallError("eventfd2", errno)
	}
	// Non-blocking, so os.NewFile registers it with the Go poller.
	f := os.NewFile(fd, "netpoll-yield")
	rc, err := f.SyscallConn()
	if err != nil {
		f.Close()
		return nil, err
	}
	p := &pollYield{f: f, rc: rc}
	p.step = p.readable
	return p, nil
}

// yield parks the calling goroutine until its P's scheduler (or another
// thread's) has polled the network.
func (p *pollYield) yield() error {
	p.wrote = false
	return p.rc.Read(p.step)
}

// readable is yield's RawConn.Read callback. Its first call makes the
// eventfd readable and asks to wait: the write happens after the Go
// poller's readiness flag was reset for this read, so its edge cannot be
// lost. Later calls consume the count; EAGAIN (a readiness report from
// before the write) waits again.
func (p *pollYield) readable(fd uintptr) bool {
	var v uint64 = 1
	if !p.wrote {
		p.wrote = true
		_, _, errno := syscall.RawSyscall(syscall.SYS_WRITE, fd, uintptr(unsafe.Pointer(&v)), 8)
		return errno != 0 // cannot fail on a drained eventfd; never wait for nothing

	}
	_, _, errno := syscall.RawSyscall(syscall.SYS_READ, fd, uintptr(unsafe.Pointer(&v)), 8)
	return errno != syscall.EAGAIN
}

func (p *pollYield) close() { p.f.Close() }
