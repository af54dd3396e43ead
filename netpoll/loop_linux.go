//go:build linux

package netpoll

import (
	"errors"
	"log/slog"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"
)

// Loop is one event loop: one goroutine (Run) serving many connections.
type Loop struct {
	log    *slog.Logger
	epfd   int
	wakefd int
	// wakeMu guards wakeClosed: once the loop has closed its wake-up
	// descriptors, wake (called from any goroutine, also after Stop) must
	// not write 8 bytes into whatever file reuses the number.
	wakeMu     sync.RWMutex
	wakeClosed bool
	conns      []slot // by fd; touched by the loop goroutine only
	events     [256]syscall.EpollEvent

	// barrier, when set, is asked once after a batch of events in which
	// some handler deferred its output (Deferrer) when that output may be
	// written; until then those connections are held: neither read nor
	// written, while the loop serves the others. Set before Run.
	barrier  Barrier
	deferred []request

	// u is the io_uring side when the loop runs on io_uring (NewIOUring);
	// nil for epoll. conns, events and epfd are then unused.
	u *uringLoop

	mu       sync.Mutex // guards what other goroutines hand over:
	adds     []request
	closes   []request
	released [][]request // held batches whose barrier passed
	stopped  bool

	// asleep is set while the loop waits in the kernel (or on the Go
	// poller) for input with nothing left to do. Every other moment it
	// wants a CPU: serving, runnable after a yield or a wake-up, or in a
	// handler waiting for a lock whose holder needs a CPU to let go of
	// it (Awake).
	asleep atomic.Bool
}

// slot is the loop's state of one connection.
type slot struct {
	h          Handler // nil: no connection on this fd
	waitOut    bool    // output is waiting for EPOLLOUT; input is not read
	closeAfter bool    // close once the output is written
	held       bool    // output waits for the barrier; input is not read
}

type request struct {
	fd int
	h  Handler
}

// ErrStopped is returned by Adopt once the loop is stopping.
var ErrStopped = errors.New("netpoll: event loop stopped")

// New creates a loop; start it with go l.Run().
func New(log *slog.Logger) (*Loop, error) {
	if log == nil {
		log = slog.Default()
	}
	epfd, err := syscall.EpollCreate1(syscall.EPOLL_CLOEXEC)
	if err != nil {
		return nil, os.NewSyscallError("epoll_create1", err)
	}
	r, _, errno := syscall.Syscall(syscall.SYS_EVENTFD2, 0, syscall.O_NONBLOCK|syscall.O_CLOEXEC, 0)
	if errno != 0 {
		syscall.Close(epfd)
		return nil, os.NewSyscallError("eventfd2", errno)
	}
	l := &Loop{log: log, epfd: epfd, wakefd: int(r)}
	l.asleep.Store(true) // nothing to serve until Run
	ev := syscall.EpollEvent{Events: syscall.EPOLLIN, Fd: int32(l.wakefd)}
	if err := syscall.EpollCtl(epfd, syscall.EPOLL_CTL_ADD, l.wakefd, &ev); err != nil {
		syscall.Close(epfd)
		syscall.Close(l.wakefd)
		return nil, os.NewSyscallError("epoll_ctl", err)
	}
	return l, nil
}

// Conn is a connection a loop can adopt: a stream socket the Go runtime
// gave us (*net.TCPConn or *net.UnixConn).
type Conn interface {
	syscall.Conn
	Close() error
}

// Adopt moves a freshly accepted connection (TCP or Unix socket) into the
// loop, served by h. The loop keeps a duplicate of tc's fd and tc is closed. owned is called with
// that fd before the loop can serve it (under the loop's lock, so it must
// not call back into the loop), for the handler to record where its
// connection lives. On error nothing changed: the caller still owns tc.
func (l *Loop) Adopt(tc Conn, h Handler, owned func(fd int)) error {
	raw, err := tc.SyscallConn()
	if err != nil {
		return err
	}
	fd := -1
	var derr error
	if err := raw.Control(func(f uintptr) {
		r, _, errno := syscall.Syscall(syscall.SYS_FCNTL, f, syscall.F_DUPFD_CLOEXEC, 0)
		if errno != 0 {
			derr = os.NewSyscallError("fcntl", errno)
			return
		}
		fd = int(r)
	}); err != nil {
		return err
	}
	if derr != nil {
		return derr
	}
	l.mu.Lock()
	if l.stopped {
		l.mu.Unlock()
		syscall.Close(fd)
		return ErrStopped
	}
	owned(fd)
	l.adds = append(l.adds, request{fd, h})
	l.mu.Unlock()
	_ = tc.Close() // the duplicate keeps the socket open (O_NONBLOCK is shared)
	l.wake()
	return nil
}

// RequestClose asks the loop to close the connection h has on fd (from any
// goroutine). It does nothing if the loop no longer serves h there.
func (l *Loop) RequestClose(fd int, h Handler) {
	l.mu.Lock()
	l.closes = append(l.closes, request{fd, h})
	l.mu.Unlock()
	l.wake()
}

// Stop makes the loop close its connections and return from Run.
func (l *Loop) Stop() {
	l.mu.Lock()
	l.stopped = true
	l.mu.Unlock()
	l.wake()
}

func (l *Loop) wake() {
	l.wakeMu.RLock()
	defer l.wakeMu.RUnlock()
	if l.wakeClosed {
		return
	}
	one := uint64(1)
	_, _ = syscall.Write(l.wakefd, (*[8]byte)(unsafe.Pointer(&one))[:])
}

// shutWake makes later wake calls do nothing; the loop calls it before
// closing wakefd.
func (l *Loop) shutWake() {
	l.wakeMu.Lock()
	l.wakeClosed = true
	l.wakeMu.Unlock()
}

// poll returns the ready events without waiting.
func (l *Loop) poll() (int, syscall.Errno) {
	r, _, errno := syscall.RawSyscall6(syscall.SYS_EPOLL_PWAIT, uintptr(l.epfd), // epoll_pwait, no sigmask: arm64 has no epoll_wait
		uintptr(unsafe.Pointer(&l.events[0])), uintptr(len(l.events)), 0, 0, 0)
	if errno != 0 {
		return 0, errno
	}
	return int(r), 0
}

// Read is read(2) on a non-blocking socket. It never blocks, so it skips
// the runtime's system call bookkeeping.
func Read(fd int, b []byte) (int, syscall.Errno) {
	if len(b) == 0 {
		return 0, 0
	}
	if raceEnabled {
		n, err := syscall.Read(fd, b)
		return n, errnoOf(err)
	}
	r, _, errno := syscall.RawSyscall(syscall.SYS_READ, uintptr(fd), uintptr(unsafe.Pointer(&b[0])), uintptr(len(b)))
	if errno != 0 {
		return 0, errno
	}
	return int(r), 0
}

// write is write(2) on a non-blocking socket (see Read).
func write(fd int, b []byte) (int, syscall.Errno) {
	if raceEnabled {
		n, err := syscall.Write(fd, b)
		return n, errnoOf(err)
	}
	r, _, errno := syscall.RawSyscall(syscall.SYS_WRITE, uintptr(fd), uintptr(unsafe.Pointer(&b[0])), uintptr(len(b)))
	if errno != 0 {
		return 0, errno
	}
	return int(r), 0
}

func errnoOf(err error) syscall.Errno {
	if err == nil {
		return 0
	}
	return err.(syscall.Errno)
}

// Run serves connections until Stop; then it closes every connection it
// owns (or was handed) and returns.
func (l *Loop) Run() {
	if l.u != nil {
		l.runUring()
		return
	}
	var ep *os.File
	defer func() {
		l.closeQueued()
		for fd := range l.conns {
			if l.conns[fd].h != nil {
				l.close(fd)
			}
		}
		if ep != nil {
			ep.Close()
		} else {
			syscall.Close(l.epfd)
		}
		l.shutWake()
		syscall.Close(l.wakefd)
	}()
	var rc syscall.RawConn
	err := syscall.SetNonblock(l.epfd, true)
	if err == nil {
		ep = os.NewFile(uintptr(l.epfd), "epoll")
		rc, err = ep.SyscallConn()
	}
	if err != nil {
		l.log.Error("event loop: cannot poll the epoll fd", "err", err)
		return
	}
	for {
		var n int
		var errno syscall.Errno
		err := rc.Read(func(uintptr) bool {
			n, errno = l.poll()
			ready := n != 0 || (errno != 0 && errno != syscall.EINTR)
			l.asleep.Store(!ready) // parks on the Go poller unless ready
			return ready
		})
		l.asleep.Store(false)
		if err == nil && errno != 0 {
			err = errno
		}
		if err != nil {
			l.log.Error("event loop: epoll_wait", "err", err)
			return
		}
		now := time.Now().UnixNano()
		for i := range n {
			ev := &l.events[i]
			fd := int(ev.Fd)
			if fd == l.wakefd {
				if !l.handover() {
					return
				}
				continue
			}
			if fd >= len(l.conns) || l.conns[fd].h == nil {
				continue
			}
			s := &l.conns[fd]
			if s.waitOut && ev.Events&(syscall.EPOLLOUT|syscall.EPOLLHUP|syscall.EPOLLERR) != 0 {
				// On a hang-up or error the write fails and the
				// connection closes (level-triggered: ignoring it would spin).
				if !l.flush(fd, s) || (!s.waitOut && s.closeAfter) {
					l.close(fd)
					continue
				}
			}
			if ev.Events&(syscall.EPOLLIN|syscall.EPOLLHUP|syscall.EPOLLERR) != 0 && !s.waitOut && !s.held {
				l.readable(fd, s, now)
			}
		}
		if len(l.deferred) > 0 {
			l.flushDeferred()
		}
	}
}

// closeQueued marks the loop stopped and closes the connections queued
// for it that it never served.
func (l *Loop) closeQueued() {
	l.mu.Lock()
	l.stopped = true
	adds := l.adds
	l.adds = nil
	l.mu.Unlock()
	for _, a := range adds {
		syscall.Close(a.fd)
		a.h.Closed()
	}
}

// SetBarrier installs what deferred output waits for (see Deferrer). Call
// it before Run.
func (l *Loop) SetBarrier(b Barrier) { l.barrier = b }

// flushDeferred asks the barrier once for the whole batch: the deferred
// output is written now, or its connections are held (no input read, no
// output written) until a goroutine waiting on the barrier's channel hands
// the batch back through the wake-up fd. Both loop kinds use it; the
// io_uring loop marked its connections held when they deferred.
func (l *Loop) flushDeferred() {
	ch := l.barrier.Hold()
	if ch == nil {
		l.releaseBatch(l.deferred)
		l.deferred = l.deferred[:0]
		return
	}
	batch := make([]request, len(l.deferred))
	copy(batch, l.deferred)
	l.deferred = l.deferred[:0]
	if l.u == nil {
		for _, r := range batch {
			s := &l.conns[r.fd]
			s.held = true
			l.interest(r.fd, 0)
		}
	}
	go func() {
		<-ch
		l.mu.Lock()
		l.released = append(l.released, batch)
		l.mu.Unlock()
		l.wake()
	}()
}

// releaseBatch lets a batch the barrier held (or did not need to hold) go:
// release or releaseUring.
func (l *Loop) releaseBatch(batch []request) {
	if l.u != nil {
		l.releaseUring(batch)
	} else {
		l.release(batch)
	}
}

// takeQueued takes what other goroutines queued for the loop, and lets
// the batches whose barrier passed go; stopped when the loop must stop.
func (l *Loop) takeQueued() (adds, closes []request, stopped bool) {
	l.mu.Lock()
	adds, closes, released, stopped := l.adds, l.closes, l.released, l.stopped
	l.adds, l.closes, l.released = nil, nil, nil
	l.mu.Unlock()
	for _, b := range released {
		l.releaseBatch(b)
	}
	return adds, closes, stopped
}

// release writes the output of held or deferred connections (those still
// served by the same handler) and reads them again.
func (l *Loop) release(batch []request) {
	for _, r := range batch {
		if r.fd >= len(l.conns) || l.conns[r.fd].h != r.h {
			continue // closed meanwhile (and maybe reused)
		}
		s := &l.conns[r.fd]
		if s.held {
			s.held = false
			l.interest(r.fd, syscall.EPOLLIN)
		}
		if !l.flush(r.fd, s) || (!s.waitOut && s.closeAfter) {
			l.close(r.fd)
		}
	}
}

// handover takes the connections and close requests other goroutines
// queued; false when the loop must stop.
func (l *Loop) handover() bool {
	var buf [8]byte
	_, _ = syscall.Read(l.wakefd, buf[:])
	adds, closes, stopped := l.takeQueued()
	for _, a := range adds {
		ev := syscall.EpollEvent{Events: syscall.EPOLLIN, Fd: int32(a.fd)}
		if err := syscall.EpollCtl(l.epfd, syscall.EPOLL_CTL_ADD, a.fd, &ev); err != nil {
			l.log.Warn("event loop: epoll_ctl", "err", err)
			syscall.Close(a.fd)
			a.h.Closed()
			continue
		}
		for a.fd >= len(l.conns) {
			l.conns = append(l.conns, make([]slot, len(l.conns)+64)...)
		}
		l.conns[a.fd] = slot{h: a.h}
	}
	for _, r := range closes {
		if r.fd >= 0 && r.fd < len(l.conns) && l.conns[r.fd].h == r.h {
			l.close(r.fd)
		}
	}
	return !stopped
}

// readable lets the handler read and execute, then writes its replies.
func (l *Loop) readable(fd int, s *slot, now int64) {
	switch s.h.Readable(Input{fd: fd}, now) {
	case Keep:
		if l.barrier != nil {
			if d, ok := s.h.(Deferrer); ok && d.Defer() {
				l.deferred = append(l.deferred, request{fd, s.h})
				return
			}
		}
		if !l.flush(fd, s) {
			l.close(fd)
		}
	case CloseNow:
		l.flush(fd, s)
		l.close(fd)
	case CloseAfterWrite:
		if !l.flush(fd, s) || !s.waitOut {
			l.close(fd)
			return
		}
		s.closeAfter = true
	case Detach:
		l.detach(fd)
	}
}

// flush writes the handler's output; what the socket does not take waits
// for EPOLLOUT (and the connection is not read meanwhile). False on a write
// error.
func (l *Loop) flush(fd int, s *slot) bool {
	for {
		out := s.h.Output()
		if len(out) == 0 {
			break
		}
		n, err := write(fd, out)
		if n > 0 {
			s.h.Wrote(n)
		}
		switch err {
		case 0, syscall.EINTR:
		case syscall.EAGAIN:
			if !s.waitOut {
				s.waitOut = true
				l.interest(fd, syscall.EPOLLOUT)
			}
			return true
		default:
			return false
		}
	}
	if s.waitOut {
		s.waitOut = false
		l.interest(fd, syscall.EPOLLIN)
	}
	return true
}

func (l *Loop) interest(fd int, events uint32) {
	ev := syscall.EpollEvent{Events: events, Fd: int32(fd)}
	if err := syscall.EpollCtl(l.epfd, syscall.EPOLL_CTL_MOD, fd, &ev); err != nil {
		l.log.Warn("event loop: epoll_ctl", "err", err)
	}
}

// close closes a connection the loop owns.
func (l *Loop) close(fd int) {
	h := l.conns[fd].h
	l.conns[fd] = slot{}
	syscall.Close(fd) // also removes it from epoll: no other fd refers to the socket
	h.Closed()
}

// detach stops watching fd and gives it to its handler.
func (l *Loop) detach(fd int) {
	h := l.conns[fd].h
	l.conns[fd] = slot{}
	_ = syscall.EpollCtl(l.epfd, syscall.EPOLL_CTL_DEL, fd, nil)
	h.Detached(fd, nil)
}

// FileConn turns an fd a handler got from Detached into a net.Conn served
// by the Go runtime's poller; fd is consumed (closed) either way.
func FileConn(fd int) (net.Conn, error) {
	// Blocking first so that os.NewFile does not register it with the
	// runtime poller; net.FileConn's duplicate is made non-blocking again.
	_ = syscall.SetNonblock(fd, false)
	f := os.NewFile(uintptr(fd), "")
	nc, err := net.FileConn(f)
	f.Close()
	return nc, err
}
