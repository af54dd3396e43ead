//go:build unix

package server

import "syscall"

// raiseOpenFiles raises the soft RLIMIT_NOFILE towards want (capped by the
// hard limit) and returns the soft limit now in force.
func raiseOpenFiles(want uint64) (uint64, bool) {
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		return 0, false
	}
	if uint64(lim.Cur) >= want {
		return uint64(lim.Cur), true
	}
	raised := lim
	setRlim(&raised.Cur, min(want, uint64(lim.Max)))
	if syscall.Setrlimit(syscall.RLIMIT_NOFILE, &raised) == nil {
		return uint64(raised.Cur), true
	}
	return uint64(lim.Cur), true
}

// setRlim stores v in an rlimit field, int64 on some systems and uint64 on
// others.
func setRlim[T ~int64 | ~uint64](field *T, v uint64) { *field = T(v) }
