package replication

import (
	"errors"
	"io"
	"os"
	"sync"
)

// spool decouples a diskless full sync from the replica's network speed.
// The snapshot writes into it and never waits for the socket: up to
// memLimit bytes are held in memory, anything beyond goes to a temporary
// file, and a drain goroutine sends everything to the replica in order.
// Without it a slow replica would fill the snapshot's bounded queue, and
// the pre-change hooks, which wait for room while holding a shard lock,
// would stall the primary's writers for as long as the transfer lasts.
type spool struct {
	dst      io.Writer
	memLimit int
	dir      string

	wmu sync.Mutex // one Write at a time: segments are appended in file order

	mu      sync.Mutex
	ready   sync.Cond // signalled when segs grows or the spool closes
	writing bool      // a Write is spilling with mu released
	segs    []segment // in order; segs[0] is drained next
	inMem   int       // bytes of memory segments not yet drained
	file    *os.File  // spill file, created on first need
	fileEnd int64     // where the next spilled byte goes
	closed  bool      // no more writes
	err     error     // the drain failed: writes fail with it
	done    chan struct{}
}

// segment is a run of bytes, in memory or at [off, off+n) of the file.
type segment struct {
	mem []byte
	off int64
	n   int64
}

// newSpool starts draining into dst; spill files go to dir ("" = the
// system's temporary directory).
func newSpool(dst io.Writer, memLimit int, dir string) *spool {
	s := &spool{dst: dst, memLimit: memLimit, dir: dir, done: make(chan struct{})}
	s.ready.L = &s.mu
	go s.drain()
	return s
}

// Write queues p; it blocks only on the spill file's disk writes.
func (s *spool) Write(p []byte) (int, error) {
	s.wmu.Lock()
	defer s.wmu.Unlock()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.err != nil {
		return 0, s.err
	}
	if len(p) == 0 {
		return 0, nil
	}
	if s.file == nil && s.inMem+len(p) <= s.memLimit {
		s.segs = append(s.segs, segment{mem: append([]byte(nil), p...)})
		s.inMem += len(p)
		s.ready.Signal()
		return len(p), nil
	}
	// Spilling. Once the file is in use everything goes there until the
	// drain catches up (it may still be sending older memory segments).
	if s.file == nil {
		f, err := os.CreateTemp(s.dir, "damselfly-sync-spool-*")
		if err != nil {
			return 0, err
		}
		_ = os.Remove(f.Name()) // unlinked: gone when closed, even after a crash
		s.file, s.fileEnd = f, 0
	}
	off, f := s.fileEnd, s.file
	s.writing = true
	s.mu.Unlock()
	_, err := f.WriteAt(p, off) // the drain reads below off only
	s.mu.Lock()
	s.writing = false
	if err != nil {
		return 0, err
	}
	s.fileEnd += int64(len(p))
	if n := len(s.segs); n > 0 && s.segs[n-1].mem == nil && s.segs[n-1].off+s.segs[n-1].n == off {
		s.segs[n-1].n += int64(len(p))
	} else {
		s.segs = append(s.segs, segment{off: off, n: int64(len(p))})
	}
	s.ready.Signal()
	return len(p), nil
}

// Close waits until everything written has been sent (or sending failed)
// and returns the drain's error.
func (s *spool) Close() error {
	s.mu.Lock()
	s.closed = true
	s.ready.Signal()
	s.mu.Unlock()
	<-s.done
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.err
}

// Discard drops what was not sent yet and stops the drain without waiting
// for it (it may be blocked on a dead replica's socket until that closes).
func (s *spool) Discard() {
	s.mu.Lock()
	if s.err == nil {
		s.err = errSpoolDiscarded
	}
	s.segs, s.closed = nil, true
	s.ready.Signal()
	s.mu.Unlock()
}

var errSpoolDiscarded = errors.New("full sync abandoned")

func (s *spool) drain() {
	defer close(s.done)
	defer func() {
		s.mu.Lock()
		if s.file != nil {
			s.file.Close()
			s.file = nil
		}
		s.mu.Unlock()
	}()
	buf := make([]byte, 256<<10)
	for {
		s.mu.Lock()
		for len(s.segs) == 0 && !s.closed {
			s.ready.Wait()
		}
		if len(s.segs) == 0 { // closed and drained
			s.mu.Unlock()
			return
		}
		seg := s.segs[0]
		file := s.file
		s.mu.Unlock()

		var err error
		if seg.mem != nil {
			_, err = s.dst.Write(seg.mem)
		} else {
			// The file part may have grown since it was taken: send what
			// it held then, the rest on the next round.
			for sent := int64(0); sent < seg.n && err == nil; {
				n := min(int64(len(buf)), seg.n-sent)
				if _, err = file.ReadAt(buf[:n], seg.off+sent); err == nil {
					_, err = s.dst.Write(buf[:n])
				}
				sent += n
			}
		}

		s.mu.Lock()
		if err != nil && s.err == nil {
			s.err = err
		}
		if s.err != nil {
			s.segs = nil
			s.mu.Unlock()
			return
		}
		if seg.mem != nil {
			s.inMem -= len(seg.mem)
			s.segs = s.segs[1:]
		} else if s.segs[0].n == seg.n {
			s.segs = s.segs[1:]
			if len(s.segs) == 0 && !s.writing && s.file != nil {
				// Caught up: drop the file (unlinked, so its space is
				// freed) and go back to memory.
				s.file.Close()
				s.file, s.fileEnd = nil, 0
			}
		} else {
			s.segs[0].off += seg.n
			s.segs[0].n -= seg.n
		}
		s.mu.Unlock()
	}
}
