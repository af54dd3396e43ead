//go:build linux

package netpoll

import (
	"log/slog"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// The io_uring loop (NewIOUring) serves the same Handlers with the same
// guarantees as the epoll loop, with fewer system calls: each iteration
// reaps every completion in the shared completion ring (no system call),
// runs the handlers of the connections that received input, and then
// submits all of the iteration's sends and receive (re)arms with one
// io_uring_enter. An unpipelined request costs that share of one
// io_uring_enter instead of a read(2), a write(2) and a share of
// epoll_wait.
//
// Invariants, besides the package's:
//   - Receives use provided buffers (a buffer ring of bufCount x bufBytes,
//     outside the Go heap). With multishot receive (Linux 6.0 and later)
//     one submission keeps delivering input until it ends or is
//     cancelled; otherwise each completion is re-armed by the next
//     iteration's submission. A provided buffer goes back to the kernel
//     within the iteration that received it: what the handler did not read
//     is copied to the connection's pending input first.
//   - Memory handed to the kernel stays reachable and unchanged until its
//     completion: a send's slice is kept in its slot (the handler is not
//     run while its send is in flight, so it cannot touch the bytes), the
//     eventfd's 8 bytes live in the loop, the buffers are never unmapped
//     while a receive may be outstanding.
//   - Backpressure as under epoll: a connection whose send is in flight,
//     whose output is held by the barrier, or whose pending input passed
//     pendLimit is not run; past pendLimit its receive is cancelled, so
//     a client that does not read stops being served instead of growing
//     the server's buffers.
//   - A connection's fd is closed, or handed over by Detached, only once no
//     operation on it is outstanding (cancellations first), so its number
//     cannot be reused under a completion still in flight; completions
//     carry a per-fd generation as well and stale ones are dropped.
//   - Only the loop goroutine submits and reaps. Other goroutines queue
//     requests and write the eventfd, whose READ completes into the ring.
//   - The loop keeps its Go P while it waits for the next completion
//     (waitBriefly) only while no goroutine is runnable (schedProbe), and
//     after yieldEvery of work or such waiting it parks on the Go poller
//     (pollYield), so that its P's scheduler runs timers and polls the
//     network, then wakes an idle P if there may be one: work off the
//     loops (a BGSAVE, a detached command, a sleeping goroutine, one woken
//     by Go's poller) runs about as it does beside the epoll loop, which
//     gives its P up whenever it is idle.

// IOUringOptions tunes NewIOUring.
type IOUringOptions struct {
	// SingleShot re-arms one receive per completion even where the kernel
	// offers multishot receive (tests cover both paths with it).
	SingleShot bool
	// PlainRing sets the ring up without IORING_SETUP_SINGLE_ISSUER and
	// DEFER_TASKRUN (as on kernels before 6.1): completion work then
	// interrupts the submitting thread, and the loop waits on the Go
	// poller. For tests and measurements.
	PlainRing bool
}

const (
	kindRecv   = 1
	kindSend   = 2
	kindWake   = 3
	kindCancel = 4

	// briefWait bounds the loop's wait for the next completion while it
	// keeps its P (ring.waitBriefly); past it, it parks on the Go poller,
	// which lets the runtime use the P elsewhere.
	briefWait = time.Millisecond

	// yieldEvery bounds how long the loop goes on working or waiting
	// with its P without passing through the Go scheduler (yieldToNetpoll).
	// Timers are run by the scheduler of the P that holds them: a
	// goroutine asleep in time.Sleep on the loop's P (a paced BGSAVE
	// serializer pauses that way) stays asleep until the loop lets go of
	// the P, whatever schedProbe says; a goroutine whose socket became
	// ready waits for a scheduler to poll the network.
	yieldEvery = time.Millisecond

	// pendLimit is the input a connection may have received ahead of its
	// handler before its receive is cancelled.
	pendLimit = 64 << 10
)

type uringLoop struct {
	r         *ring
	multishot bool
	conns     []uslot // by fd
	touched   []int   // fds to revisit at the end of this iteration
	next      []int   // fds with input left for the next iteration
	wakeBuf   *[8]byte
	wakeArmed bool
	recycled  bool // buffers were put back this iteration
	probe     *schedProbe
	yielder   *pollYield
	parked    int64 // when the loop last slept in the kernel or went through the scheduler (UnixNano)
}

// uslot is the io_uring loop's state of one connection.
type uslot struct {
	h          Handler
	gen        uint32 // 24 bits, tells this connection's completions from an earlier one's
	recv       bool   // a receive is outstanding
	canceling  bool   // its cancellation is submitted
	sending    []byte // output of the send in flight (kept reachable); nil: none
	sendCancel bool
	held       bool // output waits for the barrier; not run
	closeAfter bool // close once all output is written
	closeNow   bool // close after at most one send attempt
	triedSend  bool
	closing    bool // cancel what is outstanding, then close
	detaching  bool // likewise, then Detached
	queued     bool // in touched
	in         inbuf
}

func userData(kind, fd int, gen uint32) uint64 {
	return uint64(fd)<<32 | uint64(gen&0xFFFFFF)<<8 | uint64(kind)
}

// NewIOUring creates a loop on io_uring; start it with go l.Run(). It
// fails where io_uring cannot be had (no kernel support, io_uring_disabled,
// a seccomp filter) and the caller falls back to New (epoll).
func NewIOUring(log *slog.Logger, opt IOUringOptions) (*Loop, error) {
	if log == nil {
		log = slog.Default()
	}
	r, err := newRing(!opt.PlainRing)
	if err != nil {
		return nil, err
	}
	// A blocking eventfd: io_uring's READ of an O_NONBLOCK file fails with
	// EAGAIN at once instead of waiting. Writers (wake) never block on it.
	w, _, errno := syscall.Syscall(syscall.SYS_EVENTFD2, 0, syscall.O_CLOEXEC, 0)
	if errno != 0 {
		r.close()
		return nil, os.NewSyscallError("eventfd2", errno)
	}
	y, err := newPollYield()
	if err != nil {
		syscall.Close(int(w))
		r.close()
		return nil, err
	}
	u := &uringLoop{r: r, multishot: !opt.SingleShot && kernelAtLeast(6, 0), wakeBuf: new([8]byte), probe: newSchedProbe(), yielder: y}
	l := &Loop{log: log, epfd: -1, wakefd: int(w), u: u}
	l.asleep.Store(true) // nothing to serve until Run
	return l, nil
}

// Backend names the loop's kind: "epoll" or "io_uring".
func (l *Loop) Backend() string {
	if l.u != nil {
		return "io_uring"
	}
	return "epoll"
}

// kernelAtLeast compares the running kernel's release with major.minor.
func kernelAtLeast(major, minor int) bool {
	var u unix.Utsname
	if unix.Uname(&u) != nil {
		return false
	}
	rel := unix.ByteSliceToString(u.Release[:])
	parts := strings.SplitN(rel, ".", 3)
	if len(parts) < 2 {
		return false
	}
	ma, _ := strconv.Atoi(parts[0])
	mi, _ := strconv.Atoi(strings.TrimFunc(parts[1], func(r rune) bool { return r < '0' || r > '9' }))
	return ma > major || ma == major && mi >= minor
}

func (u *uringLoop) touch(fd int) {
	s := &u.conns[fd]
	if !s.queued {
		s.queued = true
		u.touched = append(u.touched, fd)
	}
}

func (u *uringLoop) armWake(wakefd int) {
	e := u.r.get()
	e.opcode = opRead
	e.fd = int32(wakefd)
	e.addr = uint64(uintptr(unsafe.Pointer(&u.wakeBuf[0])))
	e.len = 8
	e.off = ^uint64(0)
	e.userData = userData(kindWake, 0, 0)
	u.wakeArmed = true
}

func (u *uringLoop) armRecv(fd int, s *uslot) {
	e := u.r.get()
	e.opcode = opRecv
	e.fd = int32(fd)
	e.flags = sqeBufferSelect
	if u.multishot {
		e.ioprio = recvMultishot
	}
	e.userData = userData(kindRecv, fd, s.gen)
	s.recv = true
}

func (u *uringLoop) send(fd int, s *uslot, out []byte, flags uint32) {
	e := u.r.get()
	e.opcode = opSend
	e.fd = int32(fd)
	e.addr = uint64(uintptr(unsafe.Pointer(&out[0])))
	e.len = uint32(min(len(out), 1<<30))
	e.opFlags = flags | syscall.MSG_NOSIGNAL
	e.userData = userData(kindSend, fd, s.gen)
	s.sending = out
}

func (u *uringLoop) cancel(target uint64) {
	e := u.r.get()
	e.opcode = opAsyncCancel
	e.fd = -1
	e.addr = target
	e.flags = sqeSkipSuccess
	e.userData = userData(kindCancel, 0, 0)
}

// runUring is Run on io_uring.
func (l *Loop) runUring() {
	u := l.u
	r := u.r
	var rf *os.File
	var rc syscall.RawConn
	var err error
	if r.deferTR {
		// The ring's only issuer is this thread: the loop goroutine
		// stays on it, and waits in io_uring_enter (see ring.wait).
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		err = r.enable()
	} else {
		err = syscall.SetNonblock(r.fd, true)
		if err == nil {
			rf = os.NewFile(uintptr(r.fd), "io_uring")
			rc, err = rf.SyscallConn()
		}
	}
	defer func() { l.teardownUring(rf) }()
	if err != nil {
		l.log.Error("event loop: cannot start io_uring", "err", err)
		return
	}
	u.armWake(l.wakefd)
	busy := false
	now := time.Now().UnixNano()
	for {
		r.publish()
		if now-u.parked >= int64(yieldEvery) && (busy || len(u.next) > 0 || r.pending()) {
			// Busy for yieldEvery without passing through the scheduler:
			// let it run timers and poll the network (see pollYield).
			if !l.yieldToNetpoll() {
				return
			}
			now = u.parked
		}
		if r.deferTR {
			// One system call submits the iteration's sends, runs the
			// receives the kernel queued and, with nothing to do, sleeps.
			var errno syscall.Errno
			switch {
			case len(u.next) > 0 || r.pending():
				if r.unsubmit > 0 || r.taskrun() {
					errno = r.enter(0)
				}
			case busy && !u.probe.othersRunnable(now):
				// Served something last time: the next input is
				// likely microseconds away; wait for it holding the P,
				// which no other goroutine is waiting for (schedProbe),
				// until the next yieldToNetpoll is due.
				d := min(briefWait, time.Duration(u.parked+int64(yieldEvery)-now))
				l.asleep.Store(true)
				errno = r.waitBriefly(max(d, 10*time.Microsecond))
				l.asleep.Store(false)
				if errno == syscall.ETIME {
					busy = false
					continue
				}
			default:
				// Idle, or goroutines wait for our P: sleep in
				// io_uring_enter as a blocking system call, so the
				// runtime hands the P over. The kernel wakes this
				// thread itself when completion work arrives. (An
				// eventfd registered with the ring and watched by the
				// Go poller was tried: the kernel signals it only when
				// its deferred-work list goes from empty to non-empty,
				// and after an RCU grace period when that happens
				// inside another eventfd's wake-up; parks then lasted
				// 8-32 ms with requests waiting, and memtier's default
				// workload got a fifth of epoll's ops/s.)
				if busy {
					// Goroutines wait for our P. Entering the kernel
					// would hand it over only once sysmon notices
					// (20 µs to 10 ms); yield it now instead, and
					// sleep only if nothing arrived meanwhile.
					runtime.Gosched()
					if r.pending() || r.taskrun() {
						errno = r.enter(0)
						u.parked = time.Now().UnixNano()
						break
					}
				}
				l.asleep.Store(true)
				errno = r.wait()
				l.asleep.Store(false)
				u.parked = time.Now().UnixNano()
			}
			busy = true
			switch errno {
			case 0, syscall.EINTR, syscall.EAGAIN, syscall.EBUSY, syscall.ETIME:
			default:
				l.log.Error("event loop: io_uring_enter", "err", errno)
				return
			}
		} else if !l.waitPlain(rc) {
			return
		}
		now = time.Now().UnixNano()
		for _, fd := range u.next {
			u.touch(fd)
		}
		u.next = u.next[:0]
		if !l.reap(now) {
			return
		}
		l.finish(now)
	}
}

// yieldToNetpoll submits what is published, so that replies do not wait,
// then parks the loop until the scheduler has polled the network
// (pollYield); false when the loop must stop.
func (l *Loop) yieldToNetpoll() bool {
	u := l.u
	if u.r.unsubmit > 0 {
		switch errno := u.r.enter(0); errno {
		case 0, syscall.EINTR, syscall.EAGAIN, syscall.EBUSY:
		default:
			l.log.Error("event loop: io_uring_enter", "err", errno)
			return false
		}
	}
	if err := u.yielder.yield(); err != nil {
		l.log.Error("event loop: yielding to the Go poller", "err", err)
		return false
	}
	if u.probe.idleP() {
		// The thread that readied the loop may have been the one
		// waiting in the Go poller for the idle Ps; it now stops, and
		// until another thread goes idle nobody polls the network.
		// A new goroutine wakes an idle P (runtime.wakep), whose
		// thread, once nothing is left to run, waits in the poller.
		go func() {}()
	}
	u.probe.forget()
	u.parked = time.Now().UnixNano()
	return true
}

// waitPlain submits and waits on a plain ring (no DEFER_TASKRUN), through
// the Go poller on the ring's fd; false when the loop must stop.
func (l *Loop) waitPlain(rc syscall.RawConn) bool {
	u := l.u
	r := u.r
	// Enter to submit, or to flush completions the kernel kept aside
	// while the completion ring was full (enter adds GETEVENTS then).
	if r.unsubmit > 0 || r.overflowed() {
		switch errno := r.enter(0); errno {
		case 0, syscall.EINTR, syscall.EAGAIN, syscall.EBUSY:
		default:
			l.log.Error("event loop: io_uring_enter", "err", errno)
			return false
		}
	}
	if len(u.next) == 0 && r.unsubmit == 0 && !r.pending() && !r.overflowed() {
		l.asleep.Store(true)
		err := rc.Read(func(uintptr) bool { return r.pending() })
		l.asleep.Store(false)
		if err != nil {
			l.log.Error("event loop: waiting on io_uring", "err", err)
			return false
		}
	}
	return true
}

// reap handles every completion in the ring; false when the loop must stop.
func (l *Loop) reap(now int64) bool {
	u := l.u
	r := u.r
	run := true
	head := atomic.LoadUint32(r.cqHead)
	tail := atomic.LoadUint32(r.cqTail)
	for ; head != tail; head++ {
		c := r.cqes[head&r.cqMask]
		kind := int(c.userData & 0xFF)
		switch kind {
		case kindWake:
			u.wakeArmed = false
			if !l.handoverUring() {
				run = false
			}
			u.armWake(l.wakefd)
			continue
		case kindCancel:
			continue
		}
		fd := int(c.userData >> 32)
		gen := uint32(c.userData>>8) & 0xFFFFFF
		var s *uslot
		if fd < len(u.conns) && u.conns[fd].h != nil && u.conns[fd].gen == gen {
			s = &u.conns[fd]
		}
		switch kind {
		case kindRecv:
			bid, hasBuf := uint16(c.flags>>cqeBufShift), c.flags&cqeFBuffer != 0
			if s != nil {
				if c.flags&cqeFMore == 0 {
					s.recv, s.canceling = false, false
				}
				switch {
				case c.res > 0:
					if hasBuf {
						s.in.cur = r.buf(bid)[:c.res]
						if canRun(s) {
							l.runHandler(fd, s, now)
						}
						s.in.keep()
					}
				case c.res == 0:
					s.in.eof = true
				case c.res == -int32(syscall.ENOBUFS) || c.res == -int32(syscall.ECANCELED):
					// Re-armed by finish when still wanted.
				default:
					s.in.errno = syscall.Errno(-c.res)
				}
				u.touch(fd)
			}
			if hasBuf {
				r.putBuf(bid)
				u.recycled = true
			}
		case kindSend:
			if s == nil {
				continue
			}
			s.sending, s.sendCancel = nil, false
			if c.res < 0 {
				// A write error: the peer is gone.
				s.closing = true
			} else if c.res > 0 {
				s.h.Wrote(int(c.res))
			}
			u.touch(fd)
		}
	}
	atomic.StoreUint32(r.cqHead, head)
	if u.recycled {
		r.publishBufs()
		u.recycled = false
	}
	return run
}

// canRun: whether the handler may be run now (see the invariants).
func canRun(s *uslot) bool {
	return s.sending == nil && !s.held && !s.closing && !s.detaching && !s.closeAfter && !s.closeNow
}

func (l *Loop) runHandler(fd int, s *uslot, now int64) {
	switch s.h.Readable(Input{fd: fd, src: &s.in}, now) {
	case Keep:
		if l.barrier != nil {
			if d, ok := s.h.(Deferrer); ok && d.Defer() {
				s.held = true
				l.deferred = append(l.deferred, request{fd, s.h})
			}
		}
	case CloseNow:
		s.closeNow = true
	case CloseAfterWrite:
		s.closeAfter = true
	case Detach:
		s.detaching = true
	}
	l.u.touch(fd)
}

// finish revisits the connections touched this iteration: runs the ones
// with input left, then queues their sends, receives, cancellations, and
// closes or hands over the ones with nothing outstanding.
func (l *Loop) finish(now int64) {
	u := l.u
	for i := 0; i < len(u.touched); i++ {
		fd := u.touched[i]
		s := &u.conns[fd]
		if s.h != nil && canRun(s) && (s.in.buffered() > 0 || s.in.eof || s.in.errno != 0) {
			l.runHandler(fd, s, now)
		}
	}
	if len(l.deferred) > 0 {
		l.flushDeferred()
	}
	for i := 0; i < len(u.touched); i++ {
		fd := u.touched[i]
		s := &u.conns[fd]
		s.queued = false
		if s.h == nil {
			continue
		}
		if s.closeNow && !s.closing {
			if !s.triedSend && s.sending == nil {
				s.triedSend = true
				if out := s.h.Output(); len(out) > 0 {
					u.send(fd, s, out, syscall.MSG_DONTWAIT) // only what the socket takes at once
				}
			}
			if s.sending == nil {
				s.closing = true
			}
		} else if s.sending == nil && !s.held && !s.closing && !s.detaching {
			if out := s.h.Output(); len(out) > 0 {
				u.send(fd, s, out, 0)
			} else if s.closeAfter {
				s.closing = true
			}
		}
		if s.closing || s.detaching {
			if s.recv && !s.canceling {
				u.cancel(userData(kindRecv, fd, s.gen))
				s.canceling = true
			}
			if s.closing && s.sending != nil && !s.sendCancel {
				u.cancel(userData(kindSend, fd, s.gen))
				s.sendCancel = true
			}
			if !s.recv && s.sending == nil {
				l.release1(fd, s)
			}
			continue
		}
		want := !s.held && !s.closeAfter && !s.closeNow && !s.in.eof && s.in.errno == 0 && s.in.buffered() < pendLimit
		switch {
		case want && !s.recv:
			u.armRecv(fd, s)
		case !want && s.recv && !s.canceling && (s.closeAfter || s.closeNow || s.in.buffered() >= pendLimit):
			u.cancel(userData(kindRecv, fd, s.gen))
			s.canceling = true
		}
		if canRun(s) && (s.in.buffered() > 0 || s.in.eof || s.in.errno != 0) {
			u.next = append(u.next, fd)
		}
	}
	u.touched = u.touched[:0]
}

// release1 closes a connection with nothing outstanding, or hands it over.
func (l *Loop) release1(fd int, s *uslot) {
	h := s.h
	if s.detaching {
		buffered := s.in.unread()
		*s = uslot{gen: s.gen}
		h.Detached(fd, buffered)
		return
	}
	*s = uslot{gen: s.gen}
	syscall.Close(fd)
	h.Closed()
}

// releaseUring lets held connections be run and written again.
func (l *Loop) releaseUring(batch []request) {
	u := l.u
	for _, r := range batch {
		if r.fd >= len(u.conns) || u.conns[r.fd].h != r.h {
			continue
		}
		u.conns[r.fd].held = false
		u.touch(r.fd)
	}
}

// handoverUring takes what other goroutines queued; false when stopping.
func (l *Loop) handoverUring() bool {
	u := l.u
	adds, closes, stopped := l.takeQueued()
	for _, a := range adds {
		for a.fd >= len(u.conns) {
			u.conns = append(u.conns, make([]uslot, len(u.conns)+64)...)
		}
		s := &u.conns[a.fd]
		*s = uslot{h: a.h, gen: (s.gen + 1) & 0xFFFFFF}
		u.touch(a.fd)
	}
	for _, r := range closes {
		if r.fd >= 0 && r.fd < len(u.conns) && u.conns[r.fd].h == r.h {
			u.conns[r.fd].closing = true
			u.touch(r.fd)
		}
	}
	return !stopped
}

// teardownUring cancels everything outstanding, waits (boundedly) for the
// kernel to let go of the buffers and send slices, then closes every
// connection and the ring.
func (l *Loop) teardownUring(rf *os.File) {
	u := l.u
	r := u.r
	l.closeQueued()
	e := r.get()
	e.opcode = opAsyncCancel
	e.fd = -1
	e.opFlags = cancelAny | cancelAll
	e.userData = userData(kindCancel, 0, 0)
	r.publish()
	outstanding := func() bool {
		if u.wakeArmed {
			return true
		}
		for i := range u.conns {
			if s := &u.conns[i]; s.recv || s.sending != nil {
				return true
			}
		}
		return false
	}
	quiet := false
	for range 2000 {
		if r.unsubmit > 0 {
			r.enter(0)
		}
		head, tail := atomic.LoadUint32(r.cqHead), atomic.LoadUint32(r.cqTail)
		for ; head != tail; head++ {
			c := r.cqes[head&r.cqMask]
			fd, gen := int(c.userData>>32), uint32(c.userData>>8)&0xFFFFFF
			switch int(c.userData & 0xFF) {
			case kindWake:
				u.wakeArmed = false
			case kindRecv:
				if fd < len(u.conns) && u.conns[fd].gen == gen && c.flags&cqeFMore == 0 {
					u.conns[fd].recv = false
				}
			case kindSend:
				if fd < len(u.conns) && u.conns[fd].gen == gen {
					u.conns[fd].sending = nil
				}
			}
		}
		atomic.StoreUint32(r.cqHead, head)
		if !outstanding() {
			quiet = true
			break
		}
		time.Sleep(time.Millisecond)
	}
	for fd := range u.conns {
		if s := &u.conns[fd]; s.h != nil {
			h := s.h
			*s = uslot{}
			syscall.Close(fd)
			h.Closed()
		}
	}
	if !quiet {
		// The kernel may still write into the buffers: keep them mapped.
		l.log.Warn("event loop: io_uring operations still outstanding at stop")
		r.bufs = nil
	}
	if rf != nil {
		rf.Close()
		r.fd = -1
	}
	r.close()
	u.yielder.close()
	l.shutWake()
	syscall.Close(l.wakefd)
}
