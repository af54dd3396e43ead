package types

import (
	"syscall"
	"unsafe"
)

const hugePage = 2 << 20

// adviseHugePages asks for transparent huge pages on the 2 MiB-aligned
// part of b (a Go heap span: page-aligned, not huge-page-aligned).
func adviseHugePages(b []byte) {
	if len(b) < hugePage {
		return
	}
	off := int(-uintptr(unsafe.Pointer(&b[0])) & (hugePage - 1))
	n := (len(b) - off) &^ (hugePage - 1)
	if n > 0 {
		_ = syscall.Madvise(b[off:off+n], syscall.MADV_HUGEPAGE)
	}
}
