//go:build !linux

package slab

import "golang.org/x/sys/unix"

// releaseMemory gives a page's memory back to the OS while keeping the
// mapping (MADV_DONTNEED is advisory outside Linux: the pages may stay
// resident until the system needs them).
func releaseMemory(b []byte) { _ = unix.Madvise(b, unix.MADV_DONTNEED) }

// adviseHugePages is a no-op: transparent huge pages are a Linux notion.
func adviseHugePages([]byte) {}
