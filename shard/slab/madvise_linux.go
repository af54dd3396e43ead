package slab

import "syscall"

// releaseMemory gives a page's memory back to the OS while keeping the
// mapping, so the page can be reused without a new mmap.
func releaseMemory(b []byte) { _ = syscall.Madvise(b, syscall.MADV_DONTNEED) }

// adviseHugePages asks for transparent huge pages on an arena; without THP
// the kernel ignores it.
func adviseHugePages(b []byte) { _ = syscall.Madvise(b, syscall.MADV_HUGEPAGE) }
