package server

import (
	"errors"
	"syscall"

	"github.com/damselflydb/damselfly/netpoll"
)

// Event loop kinds (Config.EventLoop, --event-loop): io_uring submits a
// whole loop iteration's replies and receives with one system call; epoll
// is the fallback where io_uring cannot be had (kernel before 5.19,
// io_uring_disabled, a container's seccomp filter) and the choice made by
// "epoll". The kind is chosen once, at start, for every loop.

// newLoop makes one loop of the configured kind, falling back to epoll.
func (s *Server) newLoop(kind string) (*netpoll.Loop, error) {
	if kind != "epoll" {
		l, err := netpoll.NewIOUring(s.log, netpoll.IOUringOptions{})
		if err == nil {
			return l, nil
		}
		args := []any{"err", err}
		if errors.Is(err, syscall.EPERM) {
			// The usual cause in a container, where epoll costs about
			// 1.5x io_uring's CPU per request (BENCHMARKS.md, issue 22).
			args = append(args, "hint", "refused by a seccomp profile (Docker 25+'s default refuses io_uring: "+
				"allow io_uring_setup, io_uring_enter and io_uring_register, see the README's Docker section) "+
				"or by the sysctl kernel.io_uring_disabled")
		}
		if kind == "io_uring" {
			s.log.Warn("io_uring unavailable; event loops use epoll", args...)
		} else {
			s.log.Info("io_uring unavailable; event loops use epoll", args...)
		}
	}
	return netpoll.New(s.log)
}

// multiplexingAPI is INFO's multiplexing_api: the loops' kind, or
// goroutines when every connection has its own.
func (s *Server) multiplexingAPI() string {
	if len(s.loops) == 0 {
		return "goroutines"
	}
	return s.loops[0].Backend()
}
