package wbsync

import (
	"os"

	"golang.org/x/sys/unix"
)

// startWriteback starts writing [off, off+n) to disk without waiting for
// it. A file system without sync_file_range is left to the fdatasyncs.
func startWriteback(f *os.File, off, n int64) error {
	for {
		err := unix.SyncFileRange(int(f.Fd()), off, n, unix.SYNC_FILE_RANGE_WRITE)
		switch err {
		case unix.EINTR:
			continue
		case nil, unix.ENOSYS, unix.EOPNOTSUPP:
			return nil
		}
		return &os.PathError{Op: "sync_file_range", Path: f.Name(), Err: err}
	}
}

// fdatasync flushes f's data and the metadata needed to read it back.
func fdatasync(f *os.File) error {
	for {
		err := unix.Fdatasync(int(f.Fd()))
		if err != unix.EINTR {
			if err != nil {
				return &os.PathError{Op: "fdatasync", Path: f.Name(), Err: err}
			}
			return nil
		}
	}
}
