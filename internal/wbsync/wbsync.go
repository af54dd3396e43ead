// Package wbsync writes a file while making the kernel write it back to
// disk as it grows, so that the fsync that ends it has little left to do
// (Redis's rdb-save-incremental-fsync and aof-rewrite-incremental-fsync).
//
// Without it a snapshot of a few hundred MB stays in the page cache until
// its final fsync (the kernel starts background writeback only past
// vm.dirty_background_ratio, gigabytes on a large machine), so the save
// takes the time to produce the bytes plus the time to write them all. With
// it the disk writes one window while the next is produced.
//
// The final fsync still has the device flush its write cache (on this
// project's VM 0.08-0.17 s for 210 MB already written back). Keeping an
// fdatasync running beside the writes brought that to 0.001-0.005 s; it
// cut the SAVE of 10 MB values by 10-20% on a quiet machine, but not of
// 100 KB or 100 B values, nor anything on a busy shared disk (a cache
// flush writes the neighbours' data too), so it is not in (commit
// 8f1283c; BENCHMARKS.md, savesync).
//
// Invariants:
//   - Every Window bytes (counted from the file's offset at New), the window
//     just filled is handed to the kernel's writeback without waiting
//     (Linux: sync_file_range SYNC_FILE_RANGE_WRITE), and the writer then
//     waits until the window before it is on disk (WAIT_BEFORE|WRITE|
//     WAIT_AFTER), as Redis 7 does: at most about two windows of the file
//     are dirty or under writeback at any time, and the writer never runs
//     more than a window ahead of the disk.
//   - Off Linux (and on a Linux file system without sync_file_range),
//     each filled window is synced instead (os.File.Sync; fdatasync), as
//     Redis does there.
//   - The Writer does not make the file durable: the caller still fsyncs
//     it (sync_file_range writes no metadata) before renaming it.
package wbsync

import (
	"io"
	"os"
)

// DefaultWindow is Redis's REDIS_AUTOSYNC_BYTES; 16 and 32 MB windows
// measured no faster (BENCHMARKS.md, savesync).
const DefaultWindow = 4 << 20

// Writer writes to a file, starting its writeback every Window bytes.
// It is not safe for concurrent use.
type Writer struct {
	f      *os.File
	window int64
	off    int64 // bytes written since New
	next   int64 // end of the next window to start
	err    error // sticky
	// writeback starts the writeback of [off, off+n) and waits for the
	// window before it (a field so that tests can watch the windows).
	writeback func(f *os.File, off, n int64) error
}

// New returns a Writer appending to f, which is empty or positioned at
// its end, with writeback every window bytes (DefaultWindow if <= 0).
func New(f *os.File, window int64) *Writer {
	if window <= 0 {
		window = DefaultWindow
	}
	base, err := f.Seek(0, io.SeekCurrent)
	if err != nil {
		base = 0 // not seekable: windows from here on
	}
	return &Writer{f: f, window: window, off: base, next: base + window, writeback: writeback}
}

// Write writes p to the file, then starts the writeback of every window
// it completed.
func (w *Writer) Write(p []byte) (int, error) {
	if w.err != nil {
		return 0, w.err
	}
	n, err := w.f.Write(p)
	w.off += int64(n)
	if err != nil {
		w.err = err
		return n, err
	}
	for w.off >= w.next {
		if err := w.writeback(w.f, w.next-w.window, w.window); err != nil {
			w.err = err
			return n, err
		}
		w.next += w.window
	}
	return n, nil
}
