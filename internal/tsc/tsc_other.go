//go:build !amd64

package tsc

func read() uint64    { return 0 }
func invariant() bool { return false }
