//go:build linux

package server

import (
	"errors"
	"net"
	"os"
	"runtime"
	"sync"
	"syscall"
	"time"
	"unsafe"
)

// eventLoop serves many TCP connections from one goroutine with epoll, the
// way redis-server does: a goroutine wake-up per request costs about 40% more
// CPU than Redis spends per request when clients do not pipeline, while one
// epoll_wait per batch of ready connections does not.
//
// For each readable connection the loop reads once (level-triggered, so what
// does not fit is reported again), executes every complete request with the
// ordinary parser and command table, and writes all replies with one write.
// When the socket does not take all of them the rest waits for EPOLLOUT and
// the loop stops reading that connection until it is written (backpressure).
//
// Ownership: a connection's fd, buffers and session belong to its loop
// goroutine. Other goroutines never touch them: adopt queues a new client,
// requestClose (CLIENT KILL, shutdown, Close) queues a close, and both wake
// the loop through an eventfd. A client about to run a command that may block
// (Client.mayBlock) is detached: removed from epoll, its fd wrapped as a
// net.Conn, and served by its own goroutine (serveFrom) from then on, with its
// buffered input, parser state and unwritten replies.
type eventLoop struct {
	srv    *Server
	epfd   int
	wakefd int
	conns  []*Client // by fd; touched by the loop goroutine only
	events [256]syscall.EpollEvent

	mu      sync.Mutex // guards what other goroutines hand over:
	adds    []*Client
	closes  []*Client
	stopped bool
}

var errLoopStopped = errors.New("event loop stopped")

// startLoops starts one event loop per GOMAXPROCS.
func (s *Server) startLoops() ([]*eventLoop, error) {
	n := runtime.GOMAXPROCS(0)
	loops := make([]*eventLoop, 0, n)
	for range n {
		l, err := newEventLoop(s)
		if err != nil {
			for _, l := range loops {
				l.stop()
			}
			return nil, err
		}
		loops = append(loops, l)
		s.wg.Add(1)
		go l.run()
	}
	return loops, nil
}

func newEventLoop(s *Server) (*eventLoop, error) {
	epfd, err := syscall.EpollCreate1(syscall.EPOLL_CLOEXEC)
	if err != nil {
		return nil, os.NewSyscallError("epoll_create1", err)
	}
	r, _, errno := syscall.Syscall(syscall.SYS_EVENTFD2, 0, syscall.O_NONBLOCK|syscall.O_CLOEXEC, 0)
	if errno != 0 {
		syscall.Close(epfd)
		return nil, os.NewSyscallError("eventfd2", errno)
	}
	l := &eventLoop{srv: s, epfd: epfd, wakefd: int(r)}
	ev := syscall.EpollEvent{Events: syscall.EPOLLIN, Fd: int32(l.wakefd)}
	if err := syscall.EpollCtl(epfd, syscall.EPOLL_CTL_ADD, l.wakefd, &ev); err != nil {
		syscall.Close(epfd)
		syscall.Close(l.wakefd)
		return nil, os.NewSyscallError("epoll_ctl", err)
	}
	return l, nil
}

// adopt moves a freshly accepted connection into the loop: the loop keeps a
// duplicate of its fd and the net.Conn is closed. On error the caller still
// owns tc and c.
func (l *eventLoop) adopt(c *Client, tc *net.TCPConn) error {
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
	c.connMu.Lock()
	l.mu.Lock()
	if l.stopped {
		l.mu.Unlock()
		c.connMu.Unlock()
		syscall.Close(fd)
		return errLoopStopped
	}
	c.nc, c.loop, c.fd = nil, l, fd
	l.adds = append(l.adds, c)
	l.mu.Unlock()
	c.connMu.Unlock()
	_ = tc.Close() // the duplicate keeps the socket open (O_NONBLOCK is shared)
	l.wake()
	return nil
}

// requestClose asks the loop to close c (from any goroutine).
func (l *eventLoop) requestClose(c *Client) {
	l.mu.Lock()
	l.closes = append(l.closes, c)
	l.mu.Unlock()
	l.wake()
}

// stop makes the loop close its connections and exit (Server.Close).
func (l *eventLoop) stop() {
	l.mu.Lock()
	l.stopped = true
	l.mu.Unlock()
	l.wake()
}

// poll returns the ready events without waiting.
func (l *eventLoop) poll() (int, syscall.Errno) {
	r, _, errno := syscall.RawSyscall6(syscall.SYS_EPOLL_WAIT, uintptr(l.epfd),
		uintptr(unsafe.Pointer(&l.events[0])), uintptr(len(l.events)), 0, 0, 0)
	if errno != 0 {
		return 0, errno
	}
	return int(r), 0
}

// rawRead and rawWrite are read(2) and write(2) on a non-blocking socket:
// they never block, so they skip the runtime's system call bookkeeping.
func rawRead(fd int, b []byte) (int, syscall.Errno) {
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

func rawWrite(fd int, b []byte) (int, syscall.Errno) {
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

func (l *eventLoop) wake() {
	one := uint64(1)
	_, _ = syscall.Write(l.wakefd, (*[8]byte)(unsafe.Pointer(&one))[:])
}

// run is the loop. It never blocks in a system call: epoll_wait is called
// with a zero timeout, and when nothing is ready the goroutine parks in the
// Go runtime's poller, which watches the epoll fd itself (an epoll instance is
// readable while it has events ready). A goroutine blocked in epoll_wait
// would instead have its P retaken by sysmon after 20µs and pay thread
// hand-offs (futex wake-ups, context switches) on every return: measured, that
// cost more than the goroutine wake-ups the loop saves. For the same reason
// reads and writes of the non-blocking sockets are raw system calls.
func (l *eventLoop) run() {
	defer l.srv.wg.Done()
	var ep *os.File
	defer func() {
		// Stopped (or failed): no client is adopted from now on; close
		// the ones queued and owned.
		l.mu.Lock()
		l.stopped = true
		adds := l.adds
		l.adds = nil
		l.mu.Unlock()
		for _, c := range adds {
			syscall.Close(c.fd)
			l.forget(c)
		}
		for _, c := range l.conns {
			if c != nil {
				l.closeClient(c)
			}
		}
		if ep != nil {
			ep.Close()
		} else {
			syscall.Close(l.epfd)
		}
		syscall.Close(l.wakefd)
	}()
	var rc syscall.RawConn
	err := syscall.SetNonblock(l.epfd, true)
	if err == nil {
		ep = os.NewFile(uintptr(l.epfd), "epoll")
		rc, err = ep.SyscallConn()
	}
	if err != nil {
		l.srv.log.Error("event loop: cannot poll the epoll fd", "err", err)
		return
	}
	for {
		var n int
		var errno syscall.Errno
		err := rc.Read(func(uintptr) bool {
			n, errno = l.poll()
			return n != 0 || (errno != 0 && errno != syscall.EINTR)
		})
		if err == nil && errno != 0 {
			err = errno
		}
		if err != nil {
			l.srv.log.Error("event loop: epoll_wait", "err", err)
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
			if fd >= len(l.conns) || l.conns[fd] == nil {
				continue
			}
			c := l.conns[fd]
			if c.waitOut && ev.Events&(syscall.EPOLLOUT|syscall.EPOLLHUP|syscall.EPOLLERR) != 0 {
				// On a hang-up or error the write fails and c is closed
				// (level-triggered: ignoring it would spin).
				if !l.flush(c) {
					l.closeClient(c)
					continue
				}
				if c.outPos == 0 && (c.quit || c.closed.Load()) {
					l.closeClient(c)
					continue
				}
			}
			if ev.Events&(syscall.EPOLLIN|syscall.EPOLLHUP|syscall.EPOLLERR) != 0 && !c.waitOut {
				l.readable(c, now)
			}
		}
	}
}

// handover takes the clients and closes other goroutines queued; false
// when the loop must stop.
func (l *eventLoop) handover() bool {
	var buf [8]byte
	_, _ = syscall.Read(l.wakefd, buf[:])
	l.mu.Lock()
	adds, closes, stopped := l.adds, l.closes, l.stopped
	l.adds, l.closes = nil, nil
	l.mu.Unlock()
	for _, c := range adds {
		ev := syscall.EpollEvent{Events: syscall.EPOLLIN, Fd: int32(c.fd)}
		if err := syscall.EpollCtl(l.epfd, syscall.EPOLL_CTL_ADD, c.fd, &ev); err != nil {
			l.srv.log.Warn("event loop: epoll_ctl", "client", c.id, "err", err)
			syscall.Close(c.fd)
			l.forget(c)
			continue
		}
		for c.fd >= len(l.conns) {
			l.conns = append(l.conns, make([]*Client, len(l.conns)+64)...)
		}
		l.conns[c.fd] = c
	}
	for _, c := range closes {
		if c.fd >= 0 && c.fd < len(l.conns) && l.conns[c.fd] == c {
			l.closeClient(c)
		}
	}
	return !stopped
}

// readable reads once from c, executes every complete request and writes
// the replies.
func (l *eventLoop) readable(c *Client, now int64) {
	if c.w == len(c.in) {
		c.makeRoom()
	}
	n, err := rawRead(c.fd, c.in[c.w:])
	if err == syscall.EAGAIN || err == syscall.EINTR {
		return
	}
	eof := n <= 0
	if n > 0 {
		c.w += n
	}
	c.lastSeen.Store(now)
	if perr := c.processInput(); perr != nil {
		c.quit = true
	}
	if c.detach || c.handoff != nil {
		l.detachClient(c)
		return
	}
	if !l.flush(c) || eof {
		l.closeClient(c)
		return
	}
	if c.quit || c.closed.Load() {
		if c.outPos == 0 { // else closed once written (EPOLLOUT)
			l.closeClient(c)
		}
		return
	}
	if c.r == c.w {
		c.r, c.w = 0, 0
		if len(c.in) > 4*readBufSize {
			c.in = make([]byte, readBufSize)
		}
	}
}

// flush writes c's replies; what the socket does not take waits for
// EPOLLOUT (and c is not read meanwhile). False on a write error.
func (l *eventLoop) flush(c *Client) bool {
	for c.outPos < len(c.out) {
		n, err := rawWrite(c.fd, c.out[c.outPos:])
		if n > 0 {
			c.outPos += n
		}
		switch err {
		case 0:
		case syscall.EINTR:
		case syscall.EAGAIN:
			if !c.waitOut {
				c.waitOut = true
				l.interest(c, syscall.EPOLLOUT)
			}
			return true
		default:
			return false
		}
	}
	c.resetOut()
	c.outPos = 0
	if c.waitOut {
		c.waitOut = false
		l.interest(c, syscall.EPOLLIN)
	}
	return true
}

func (l *eventLoop) interest(c *Client, events uint32) {
	ev := syscall.EpollEvent{Events: events, Fd: int32(c.fd)}
	if err := syscall.EpollCtl(l.epfd, syscall.EPOLL_CTL_MOD, c.fd, &ev); err != nil {
		l.srv.log.Warn("event loop: epoll_ctl", "client", c.id, "err", err)
	}
}

// closeClient closes a connection the loop owns and ends its session.
func (l *eventLoop) closeClient(c *Client) {
	l.conns[c.fd] = nil
	syscall.Close(c.fd) // also removes it from epoll: no other fd refers to the socket
	l.forget(c)
}

func (l *eventLoop) forget(c *Client) {
	c.connMu.Lock()
	c.loop, c.fd = nil, -1
	c.connMu.Unlock()
	c.endSession()
	l.srv.dropClient(c)
}

// detachClient hands c to a goroutine of its own (serveFrom) before it runs
// a command that may block; the loop never sees it again.
func (l *eventLoop) detachClient(c *Client) {
	fd := c.fd
	l.conns[fd] = nil
	_ = syscall.EpollCtl(l.epfd, syscall.EPOLL_CTL_DEL, fd, nil)
	c.waitOut = false
	// Blocking first so that os.NewFile does not register it with the
	// runtime poller; net.FileConn's duplicate is made non-blocking again.
	_ = syscall.SetNonblock(fd, false)
	f := os.NewFile(uintptr(fd), "")
	nc, err := net.FileConn(f)
	f.Close()
	if err != nil {
		l.srv.log.Warn("event loop: cannot detach connection", "client", c.id, "err", err)
		c.connMu.Lock()
		c.loop, c.fd = nil, -1
		c.connMu.Unlock()
		c.endSession()
		l.srv.dropClient(c)
		return
	}
	c.connMu.Lock()
	c.nc, c.loop, c.fd = nc, nil, -1
	c.connMu.Unlock()
	c.detach = false
	go c.serveFrom(true)
}
