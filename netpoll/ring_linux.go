//go:build linux

package netpoll

import (
	"fmt"
	"os"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// The io_uring ABI (include/uapi/linux/io_uring.h), only what the loop uses.
// Written against the raw system calls of golang.org/x/sys/unix rather than
// a Go io_uring package: the loop needs a small, fixed subset (RECV with
// provided buffers, SEND, READ, ASYNC_CANCEL), and owning the ring code
// keeps the memory ordering and the Go-heap lifetime rules (see uringLoop)
// in one place we can read, with no dependency that must track the kernel.

const (
	opRead        = 22
	opSend        = 26
	opRecv        = 27
	opAsyncCancel = 14

	sqeBufferSelect = 1 << 5
	sqeSkipSuccess  = 1 << 6 // IOSQE_CQE_SKIP_SUCCESS

	recvMultishot = 1 << 1 // IORING_RECV_MULTISHOT, in sqe.ioprio

	cqeFBuffer  = 1 << 0
	cqeFMore    = 1 << 1
	cqeBufShift = 16

	setupCQSize       = 1 << 3
	setupClamp        = 1 << 4
	setupRDisabled    = 1 << 6
	setupSubmitAll    = 1 << 7
	setupSingleIssuer = 1 << 12
	setupDeferTaskrun = 1 << 13
	setupTaskrunFlag  = 1 << 9

	featSingleMmap = 1 << 0
	featNoDrop     = 1 << 1
	featFastPoll   = 1 << 5

	enterGetEvents      = 1 << 0
	enterExtArg         = 1 << 3
	enterRegisteredRing = 1 << 4
	sqCQOverflow        = 1 << 1
	sqTaskrun           = 1 << 2 // IORING_SQ_TASKRUN: completion work is queued

	offSQRing = 0
	offCQRing = 0x8000000
	offSQEs   = 0x10000000

	registerEnableRings = 12
	registerRingFds     = 20
	unregisterRingFds   = 21
	registerPbufRing    = 22
	unregisterPbufRing  = 23

	cancelAny = 1 << 2
	cancelAll = 1 << 0
)

type sqringOffsets struct {
	head, tail, ringMask, ringEntries, flags, dropped, array, resv1 uint32
	userAddr                                                        uint64
}

type cqringOffsets struct {
	head, tail, ringMask, ringEntries, overflow, cqes, flags, resv1 uint32
	userAddr                                                        uint64
}

type uringParams struct {
	sqEntries, cqEntries, flags, sqThreadCPU, sqThreadIdle, features, wqFd uint32
	resv                                                                   [3]uint32
	sqOff                                                                  sqringOffsets
	cqOff                                                                  cqringOffsets
}

type sqe struct {
	opcode      uint8
	flags       uint8
	ioprio      uint16
	fd          int32
	off         uint64
	addr        uint64
	len         uint32
	opFlags     uint32
	userData    uint64
	bufGroup    uint16
	personality uint16
	spliceFdIn  int32
	addr3       uint64
	_           uint64
}

type cqe struct {
	userData uint64
	res      int32
	flags    uint32
}

type bufReg struct {
	ringAddr    uint64
	ringEntries uint32
	bgid        uint16
	flags       uint16
	resv        [3]uint64
}

// ring is one io_uring instance with its provided-buffer ring. Only the
// loop goroutine touches the submission side and the CQ head; Pending
// (any goroutine) only reads the CQ indexes.
type ring struct {
	fd       int
	sqMem    []byte
	cqMem    []byte // same as sqMem with IORING_FEAT_SINGLE_MMAP
	sqeMem   []byte
	sqHead   *uint32
	sqTail   *uint32
	sqFlags  *uint32
	sqMask   uint32
	sqN      uint32
	sqes     []sqe
	cqHead   *uint32
	cqTail   *uint32
	cqMask   uint32
	cqes     []cqe
	tail     uint32 // our SQ tail, published by submit
	unsubmit uint32 // SQEs published but not yet taken by the kernel

	// Provided buffers (group 0): bufN buffers of bufSize bytes, outside
	// the Go heap, and the ring of free ones the kernel picks from.
	bufRing  []byte
	bufs     []byte
	bufN     uint16
	bufSize  int
	bufTail  uint16
	features uint32

	// deferTR: set up with IORING_SETUP_SINGLE_ISSUER|DEFER_TASKRUN. The
	// kernel then runs completion work (the receives) only inside our
	// io_uring_enter(GETEVENTS) instead of interrupting whichever thread
	// submitted last, and the loop waits in io_uring_enter rather than on
	// the Go poller. The ring starts disabled; enable, on the loop's
	// locked thread, makes that thread the only issuer and registers the
	// ring fd (enterFd is then its index, with enterRegisteredRing).
	deferTR    bool
	enterFd    uintptr
	enterFlags uintptr
}

const (
	ringEntries = 1024
	bufCount    = 128      // provided buffers per loop (power of two)
	bufBytes    = 16 << 10 // bytes per provided buffer, as the server's read buffer
)

// newRing sets up an io_uring with a registered provided-buffer ring, or
// fails (io_uring_setup refused: ENOSYS, EPERM under io_uring_disabled or
// a seccomp filter; or a kernel without buffer rings, before 5.19).
// With deferTR it asks for IORING_SETUP_SINGLE_ISSUER|DEFER_TASKRUN
// (Linux 6.1) and falls back to a plain ring where the kernel refuses.
func newRing(deferTR bool) (*ring, error) {
	var p uringParams
	fd := -1
	if deferTR {
		p = uringParams{flags: setupCQSize | setupClamp | setupSubmitAll | setupSingleIssuer | setupDeferTaskrun | setupTaskrunFlag | setupRDisabled, cqEntries: 4 * ringEntries}
		r1, _, errno := syscall.Syscall(unix.SYS_IO_URING_SETUP, ringEntries, uintptr(unsafe.Pointer(&p)), 0)
		if errno == 0 {
			fd = int(r1)
		} else {
			deferTR = false
		}
	}
	if fd < 0 {
		p = uringParams{flags: setupCQSize | setupClamp, cqEntries: 4 * ringEntries}
		r1, _, errno := syscall.Syscall(unix.SYS_IO_URING_SETUP, ringEntries, uintptr(unsafe.Pointer(&p)), 0)
		if errno != 0 {
			return nil, os.NewSyscallError("io_uring_setup", errno)
		}
		fd = int(r1)
	}
	r := &ring{fd: fd, features: p.features, deferTR: deferTR, enterFd: uintptr(fd)}
	ok := false
	defer func() {
		if !ok {
			r.close()
		}
	}()
	if p.features&featSingleMmap == 0 || p.features&featNoDrop == 0 || p.features&featFastPoll == 0 {
		return nil, fmt.Errorf("io_uring: kernel lacks single mmap, no-drop or fast poll (features %#x)", p.features)
	}
	sqSize := int(p.sqOff.array) + int(p.sqEntries)*4
	cqSize := int(p.cqOff.cqes) + int(p.cqEntries)*int(unsafe.Sizeof(cqe{}))
	size := max(sqSize, cqSize)
	mem, err := unix.Mmap(r.fd, offSQRing, size, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED|unix.MAP_POPULATE)
	if err != nil {
		return nil, os.NewSyscallError("mmap", err)
	}
	r.sqMem, r.cqMem = mem, mem
	sqeMem, err := unix.Mmap(r.fd, offSQEs, int(p.sqEntries)*int(unsafe.Sizeof(sqe{})), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED|unix.MAP_POPULATE)
	if err != nil {
		return nil, os.NewSyscallError("mmap", err)
	}
	r.sqeMem = sqeMem
	at := func(off uint32) *uint32 { return (*uint32)(unsafe.Pointer(&mem[off])) }
	r.sqHead, r.sqTail, r.sqFlags = at(p.sqOff.head), at(p.sqOff.tail), at(p.sqOff.flags)
	r.sqMask, r.sqN = *at(p.sqOff.ringMask), *at(p.sqOff.ringEntries)
	r.sqes = unsafe.Slice((*sqe)(unsafe.Pointer(&sqeMem[0])), p.sqEntries)
	array := unsafe.Slice((*uint32)(unsafe.Pointer(&mem[p.sqOff.array])), p.sqEntries)
	for i := range array {
		array[i] = uint32(i) // SQE i always sits in slot i of the ring
	}
	r.tail = atomic.LoadUint32(r.sqTail)
	r.cqHead, r.cqTail = at(p.cqOff.head), at(p.cqOff.tail)
	r.cqMask = *at(p.cqOff.ringMask)
	r.cqes = unsafe.Slice((*cqe)(unsafe.Pointer(&mem[p.cqOff.cqes])), p.cqEntries)

	// The buffer ring: bufCount entries of 16 bytes, page aligned.
	r.bufN, r.bufSize = bufCount, bufBytes
	r.bufRing, err = unix.Mmap(-1, 0, bufCount*16, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_ANON|unix.MAP_PRIVATE)
	if err != nil {
		return nil, os.NewSyscallError("mmap", err)
	}
	r.bufs, err = unix.Mmap(-1, 0, bufCount*bufBytes, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_ANON|unix.MAP_PRIVATE)
	if err != nil {
		return nil, os.NewSyscallError("mmap", err)
	}
	reg := bufReg{ringAddr: uint64(uintptr(unsafe.Pointer(&r.bufRing[0]))), ringEntries: bufCount}
	if _, _, errno := syscall.Syscall6(unix.SYS_IO_URING_REGISTER, uintptr(r.fd), registerPbufRing, uintptr(unsafe.Pointer(&reg)), 1, 0, 0); errno != 0 {
		return nil, os.NewSyscallError("io_uring_register(PBUF_RING)", errno)
	}
	for i := range uint16(bufCount) {
		r.putBuf(i)
	}
	r.publishBufs()
	ok = true
	return r, nil
}

// putBuf hands buffer bid back to the kernel (visible after publishBufs).
func (r *ring) putBuf(bid uint16) {
	e := unsafe.Pointer(&r.bufRing[int(r.bufTail&(r.bufN-1))*16])
	*(*uint64)(e) = uint64(uintptr(unsafe.Pointer(&r.bufs[int(bid)*r.bufSize])))
	*(*uint32)(unsafe.Add(e, 8)) = uint32(r.bufSize)
	*(*uint16)(unsafe.Add(e, 12)) = bid
	r.bufTail++
}

// publishBufs makes the buffers put so far visible to the kernel. The
// ring's tail is the 16-bit resv field of its first entry (offset 14); it
// is stored together with that entry's bid (offset 12, unchanged) as one
// atomic 32-bit store, which also orders the entries' plain stores before it.
func (r *ring) publishBufs() {
	p := (*uint32)(unsafe.Pointer(&r.bufRing[12]))
	bid0 := uint32(*(*uint16)(unsafe.Pointer(&r.bufRing[12])))
	atomic.StoreUint32(p, bid0|uint32(r.bufTail)<<16)
}

// buf returns provided buffer bid.
func (r *ring) buf(bid uint16) []byte {
	off := int(bid) * r.bufSize
	return r.bufs[off : off+r.bufSize : off+r.bufSize]
}

// get returns a zeroed SQE to fill, submitting first if the ring is full.
func (r *ring) get() *sqe {
	for r.tail-atomic.LoadUint32(r.sqHead) >= r.sqN {
		r.publish()
		if errno := r.enter(0); errno != 0 && errno != syscall.EINTR && errno != syscall.EAGAIN && errno != syscall.EBUSY {
			panic(fmt.Sprintf("netpoll: io_uring_enter: %v", errno))
		}
	}
	s := &r.sqes[r.tail&r.sqMask]
	*s = sqe{}
	r.tail++
	return s
}

// publish makes the SQEs filled so far visible to the kernel.
func (r *ring) publish() {
	old := atomic.LoadUint32(r.sqTail)
	if old != r.tail {
		r.unsubmit += r.tail - old
		atomic.StoreUint32(r.sqTail, r.tail)
	}
}

// enter submits every published SQE in one io_uring_enter; it never
// waits for completions (min_complete 0), so it does not block. On a
// DEFER_TASKRUN ring it also runs the completion work queued so far.
func (r *ring) enter(flags uintptr) syscall.Errno {
	if r.deferTR || atomic.LoadUint32(r.sqFlags)&sqCQOverflow != 0 {
		flags |= enterGetEvents
	}
	var n uintptr
	var errno syscall.Errno
	if raceEnabled {
		n, _, errno = syscall.Syscall6(unix.SYS_IO_URING_ENTER, r.enterFd, uintptr(r.unsubmit), 0, flags|r.enterFlags, 0, 0)
	} else {
		n, _, errno = syscall.RawSyscall6(unix.SYS_IO_URING_ENTER, r.enterFd, uintptr(r.unsubmit), 0, flags|r.enterFlags, 0, 0)
	}
	if errno == 0 {
		r.unsubmit -= uint32(n)
	}
	return errno
}

// wait submits what is published and sleeps in the kernel until at least
// one completion is posted (DEFER_TASKRUN rings only). It is a blocking
// system call for the Go runtime (entersyscall): while the loop sleeps,
// its P can run other goroutines.
func (r *ring) wait() syscall.Errno {
	n, _, errno := syscall.Syscall6(unix.SYS_IO_URING_ENTER, r.enterFd, uintptr(r.unsubmit), 1, enterGetEvents|r.enterFlags, 0, 0)
	if errno == 0 {
		r.unsubmit -= uint32(n)
	}
	return errno
}

// getEventsArg is struct io_uring_getevents_arg (IORING_ENTER_EXT_ARG).
type getEventsArg struct {
	sigmask   uint64
	sigmaskSz uint32
	minWait   uint32
	ts        uint64
}

// waitBriefly is wait bounded by d, without the runtime's system call
// bookkeeping: the goroutine keeps its P meanwhile, so the runtime does not
// hand the P to another thread (sysmon's retake, a futex wake-up and a
// spinning thread) for a sleep that is over in microseconds. ETIME when
// nothing completed in d. Only for short d: other goroutines of this P and
// a stop-the-world wait for it.
func (r *ring) waitBriefly(d time.Duration) syscall.Errno {
	if raceEnabled {
		return r.wait()
	}
	ts := syscall.NsecToTimespec(int64(d))
	arg := getEventsArg{ts: uint64(uintptr(unsafe.Pointer(&ts)))}
	n, _, errno := syscall.RawSyscall6(unix.SYS_IO_URING_ENTER, r.enterFd, uintptr(r.unsubmit), 1,
		enterGetEvents|enterExtArg|r.enterFlags, uintptr(unsafe.Pointer(&arg)), unsafe.Sizeof(arg))
	if errno == 0 {
		// What was submitted; a timeout after submitting is not reported.
		r.unsubmit -= uint32(n)
	}
	return errno
}

// enable starts a ring set up disabled (deferTR) from the calling thread,
// which becomes its only issuer (the caller has locked its OS thread), and
// registers the ring fd so that io_uring_enter skips the fd lookup. Call it
// before any submission.
func (r *ring) enable() error {
	if !r.deferTR {
		return nil
	}
	if _, _, errno := syscall.Syscall6(unix.SYS_IO_URING_REGISTER, uintptr(r.fd), registerEnableRings, 0, 0, 0, 0); errno != 0 {
		return os.NewSyscallError("io_uring_register(ENABLE_RINGS)", errno)
	}
	upd := struct {
		offset, resv uint32
		data         uint64
	}{offset: ^uint32(0), data: uint64(r.fd)}
	if _, _, errno := syscall.Syscall6(unix.SYS_IO_URING_REGISTER, uintptr(r.fd), registerRingFds, uintptr(unsafe.Pointer(&upd)), 1, 0, 0); errno == 0 {
		r.enterFd, r.enterFlags = uintptr(upd.offset), enterRegisteredRing
	}
	return nil
}

// taskrun reports whether the kernel queued completion work for our next
// io_uring_enter (DEFER_TASKRUN rings).
func (r *ring) taskrun() bool { return atomic.LoadUint32(r.sqFlags)&sqTaskrun != 0 }

// overflowed reports whether completions wait outside the full CQ ring.
func (r *ring) overflowed() bool { return atomic.LoadUint32(r.sqFlags)&sqCQOverflow != 0 }

// pending reports whether completions wait in the CQ ring.
func (r *ring) pending() bool {
	return atomic.LoadUint32(r.cqTail) != atomic.LoadUint32(r.cqHead)
}

// close unmaps and closes the ring; a registered ring fd is unregistered
// first, which must happen on the thread that registered it (enable's).
func (r *ring) close() {
	if r.enterFlags&enterRegisteredRing != 0 {
		upd := struct {
			offset, resv uint32
			data         uint64
		}{offset: uint32(r.enterFd)}
		syscall.Syscall6(unix.SYS_IO_URING_REGISTER, uintptr(r.fd), unregisterRingFds, uintptr(unsafe.Pointer(&upd)), 1, 0, 0)
		r.enterFd, r.enterFlags = uintptr(r.fd), 0
	}
	if r.fd >= 0 {
		syscall.Close(r.fd)
		r.fd = -1
	}
	for _, m := range [][]byte{r.sqeMem, r.sqMem, r.bufRing, r.bufs} {
		if m != nil {
			_ = unix.Munmap(m)
		}
	}
	r.sqeMem, r.sqMem, r.cqMem, r.bufRing, r.bufs = nil, nil, nil, nil, nil
}
