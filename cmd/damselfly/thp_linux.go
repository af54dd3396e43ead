//go:build linux

package main

import (
	"bytes"
	"log/slog"
	"os"

	"golang.org/x/sys/unix"
)

// disableTHP turns transparent huge pages off for the process when the
// system gives them to every mapping (mode "always"), as redis-server does
// with disable-thp yes. In "madvise" mode (most distributions) nothing is
// needed: the server then advises huge pages nowhere.
func disableTHP(log *slog.Logger) {
	mode, err := os.ReadFile("/sys/kernel/mm/transparent_hugepage/enabled")
	if err != nil || !bytes.Contains(mode, []byte("[always]")) {
		return
	}
	if err := unix.Prctl(unix.PR_SET_THP_DISABLE, 1, 0, 0, 0); err != nil {
		log.Warn("disable-thp: could not turn transparent huge pages off", "err", err)
	}
}
