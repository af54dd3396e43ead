//go:build !unix

package server

// raiseOpenFiles is a no-op where there is no RLIMIT_NOFILE.
func raiseOpenFiles(uint64) (uint64, bool) { return 0, false }
