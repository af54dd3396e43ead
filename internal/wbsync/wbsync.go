// Package wbsync writes a file while the kernel writes it to disk as it
// grows, so that the fsync that ends it has little left to do (Redis's
// rdb-save-incremental-fsync and aof-rewrite-incremental-fsync).
//
// Without it a snapshot of a few hundred MB stays in the page cache until
// its final fsync (the kernel starts background writeback only past
// vm.dirty_background_ratio, gigabytes on a large machine), so a save
// takes the time to produce the bytes plus the time to write them all.
// With it the disk writes while the rest is produced.
//
// Writing the pages back is not all of it: on a disk with a volatile write
// cache (a virtual disk, most SSDs) the final fsync also has the device
// flush that cache, which costs about as much as the bytes written since
// the last flush (measured: the fsync of a 210 MB file whose pages were all
// written back still took 0.08-0.14 s, against 0.02-0.03 s when
// fdatasyncs had run along the way; BENCHMARKS.md, savesync). So besides
// starting each window's writeback, the Writer keeps one fdatasync running
// in a goroutine beside the writes.
//
// Invariants:
//   - Every Window bytes (counted from the file's offset at New), the window
//     just filled is handed to the kernel's writeback without waiting
//     (Linux: sync_file_range SYNC_FILE_RANGE_WRITE; elsewhere nothing).
//   - At each filled window, if no background fdatasync runs, one starts;
//     if one runs and the file has grown by Ahead bytes since it started,
//     the writer waits for it and starts the next: the writer runs at most
//     Ahead bytes past the disk's last flush point, which bounds the dirty
//     pages it leaves to about 2×Ahead.
//   - Finish waits for the running fdatasync; it must be called before
//     the file is closed (the goroutine uses its descriptor). A failed
//     write or fdatasync fails every later Write and Finish.
//   - The Writer does not make the file durable: the caller still fsyncs
//     it before renaming it, and the fdatasync it ends covers everything.
package wbsync

import (
	"io"
	"os"
)

// DefaultWindow is how often writeback is started.
const DefaultWindow = 8 << 20

// DefaultAhead is how far past a running fdatasync's start the writer
// may go before it waits for it.
const DefaultAhead = 4 * DefaultWindow

// Writer writes to a file, starting its writeback every window. Its
// methods are not safe for concurrent use.
type Writer struct {
	f      *os.File
	window int64
	ahead  int64
	off    int64 // file offset: bytes written since New, plus the start
	next   int64 // end of the next window to start
	err    error // sticky

	flush     chan error // non-nil while a background fdatasync runs; gets its result
	flushFrom int64      // off when it started

	// start and sync are startWriteback and fdatasync (fields so that
	// tests can watch them).
	start func(f *os.File, off, n int64) error
	sync  func(f *os.File) error
}

// New returns a Writer appending to f, which is empty or positioned at
// its end, starting writeback every window bytes and letting the writes
// run ahead bytes past a running fdatasync (DefaultWindow, DefaultAhead
// if <= 0).
func New(f *os.File, window, ahead int64) *Writer {
	if window <= 0 {
		window = DefaultWindow
	}
	if ahead <= 0 {
		ahead = DefaultAhead
	}
	base, err := f.Seek(0, io.SeekCurrent)
	if err != nil {
		base = 0 // not seekable: windows from here on
	}
	return &Writer{f: f, window: window, ahead: ahead, off: base, next: base + window,
		start: startWriteback, sync: fdatasync}
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
		if err := w.filled(w.next-w.window, w.window); err != nil {
			w.err = err
			return n, err
		}
		w.next += w.window
	}
	return n, nil
}

// filled starts the writeback of the window [off, off+n) and keeps an
// fdatasync running.
func (w *Writer) filled(off, n int64) error {
	if err := w.start(w.f, off, n); err != nil {
		return err
	}
	if w.flush != nil {
		var err error
		select {
		case err = <-w.flush:
		default:
			if w.off-w.flushFrom < w.ahead {
				return nil // the running one is not far behind
			}
			err = <-w.flush // the disk is behind: wait for it
		}
		w.flush = nil
		if err != nil {
			return err
		}
	}
	w.flush, w.flushFrom = make(chan error, 1), w.off
	go func(f *os.File, done chan<- error) { done <- w.sync(f) }(w.f, w.flush)
	return nil
}

// Finish waits for the running fdatasync and returns the first error of
// the Writer. The caller fsyncs and closes the file after it.
func (w *Writer) Finish() error {
	if w.flush != nil {
		err := <-w.flush
		w.flush = nil
		if w.err == nil {
			w.err = err
		}
	}
	return w.err
}
