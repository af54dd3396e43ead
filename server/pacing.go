package server

import "github.com/damselflydb/damselfly/netpoll"

// snapshotBusy is what paced snapshots (BGSAVE, full syncs) ask to decide
// whether to yield the CPU: whether any event loop has a connection with
// input ready (see snapshot.Options.Busy). Serving every connection from
// its own goroutine, there is no such view: nil, and the snapshot falls
// back to pausing after batches during which writes arrived.
func (s *Server) snapshotBusy() func() bool { return s.anyLoop((*netpoll.Loop).Pending) }

// snapshotWanted is what a paced snapshot's big value encoders and
// writers ask before they step aside (runtime.Gosched) between slices:
// whether any event loop is awake, serving or waiting for a CPU (see
// snapshot.Options.Wanted and netpoll.Loop.Awake). Nil without loops.
func (s *Server) snapshotWanted() func() bool { return s.anyLoop((*netpoll.Loop).Awake) }

// anyLoop reports, when called, whether any event loop satisfies is; nil
// when connections are served without loops.
func (s *Server) anyLoop(is func(*netpoll.Loop) bool) func() bool {
	if len(s.loops) == 0 {
		return nil
	}
	loops := s.loops
	return func() bool {
		for _, l := range loops {
			if is(l) {
				return true
			}
		}
		return false
	}
}
