package wbsync

import (
	"os"

	"golang.org/x/sys/unix"
)

// writeback starts writing [off, off+n) to disk and waits for the window
// before it, [off-n, off), to be written. A file system without
// sync_file_range gets an fdatasync instead.
func writeback(f *os.File, off, n int64) error {
	fd := int(f.Fd())
	err := syncRange(fd, off, n, unix.SYNC_FILE_RANGE_WRITE)
	if err == unix.ENOSYS || err == unix.EOPNOTSUPP {
		err = unix.Fdatasync(fd)
		if err != nil {
			return &os.PathError{Op: "fdatasync", Path: f.Name(), Err: err}
		}
		return nil
	}
	if err != nil {
		return &os.PathError{Op: "sync_file_range", Path: f.Name(), Err: err}
	}
	if off < n {
		return nil
	}
	err = syncRange(fd, off-n, n, unix.SYNC_FILE_RANGE_WAIT_BEFORE|unix.SYNC_FILE_RANGE_WRITE|unix.SYNC_FILE_RANGE_WAIT_AFTER)
	if err != nil {
		return &os.PathError{Op: "sync_file_range", Path: f.Name(), Err: err}
	}
	return nil
}

func syncRange(fd int, off, n int64, flags int) error {
	for {
		err := unix.SyncFileRange(fd, off, n, flags)
		if err != unix.EINTR {
			return err
		}
	}
}
