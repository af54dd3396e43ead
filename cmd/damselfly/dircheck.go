package main

import (
	"fmt"
	"os"
)

// checkWritableDir fails when dumps could not be written to dir: better to
// refuse to start with a clear message than to fail every save later (the
// common case is a bind-mounted host directory the container's user may
// not write to). It writes and removes a probe file.
func checkWritableDir(dir string) error {
	st, err := os.Stat(dir)
	if err != nil {
		return fmt.Errorf("--dir %q: %v", dir, err)
	}
	if !st.IsDir() {
		return fmt.Errorf("--dir %q: not a directory", dir)
	}
	f, err := os.CreateTemp(dir, ".damselfly-probe-*")
	if err != nil {
		return fmt.Errorf("--dir %q is not writable by this process (uid %d), so dumps could not be saved: %v; "+
			"make it writable (a bind-mounted host directory for the Docker image: chown 65532 DIR), "+
			"or run with --save \"\" to never save", dir, os.Getuid(), err)
	}
	name := f.Name()
	f.Close()
	return os.Remove(name)
}
