package types

import (
	"bufio"
	"os"
	"strconv"
	"strings"
	"testing"
	"unsafe"
)

// advisedHuge reports whether the mapping holding addr carries VmFlags
// "hg" (madvise(MADV_HUGEPAGE)) in /proc/self/smaps.
func advisedHuge(t *testing.T, addr uint64) bool {
	t.Helper()
	f, err := os.Open("/proc/self/smaps")
	if err != nil {
		t.Skipf("no smaps: %v", err)
	}
	defer f.Close()
	in := false
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if lo, hi, ok := strings.Cut(strings.Fields(line)[0], "-"); ok && !strings.HasSuffix(line, ":") {
			l, err1 := strconv.ParseUint(lo, 16, 64)
			h, err2 := strconv.ParseUint(hi, 16, 64)
			if err1 == nil && err2 == nil {
				in = l <= addr && addr < h
				continue
			}
		}
		if flags, ok := strings.CutPrefix(line, "VmFlags:"); ok && in {
			return strings.Contains(" "+flags+" ", " hg ")
		}
	}
	t.Fatalf("no mapping holds %#x", addr)
	return false
}

// TestNodeChunksHugePages: big lists' node chunks are advised huge pages
// only when the limits ask for them (disable-thp no); the advice covers the
// chunk's 2 MiB-aligned part.
func TestNodeChunksHugePages(t *testing.T) {
	for _, huge := range []bool{false, true} {
		m := newNodeMem(huge)
		first := m.alloc(1024, chunkFrom) // the chunk's first bytes
		// The chunk (minChunk, 4 MiB) holds a whole aligned huge page from
		// the first 2 MiB boundary in it.
		start := uint64(uintptr(unsafe.Pointer(&first[0])))
		aligned := (start + hugePage - 1) &^ (hugePage - 1)
		if got := advisedHuge(t, aligned); got != huge {
			t.Errorf("hugePages %v: chunk advised huge pages %v", huge, got)
		}
		if m.reserved()+len(first) != minChunk {
			t.Fatalf("chunk of %d bytes", m.reserved()+len(first))
		}
	}
}
