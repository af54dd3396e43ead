//go:build !linux

package wbsync

import "os"

// writeback makes the file durable up to off+n: without sync_file_range,
// an fsync per window, as Redis does.
func writeback(f *os.File, off, n int64) error { return f.Sync() }
