//go:build !linux

package netpoll

// Pending reports whether clients of the loop wait; there are no loops
// off Linux (New fails), so never.
func (l *Loop) Pending() bool { return false }

// Awake reports whether the loop is serving; there are no loops off Linux.
func (l *Loop) Awake() bool { return false }
