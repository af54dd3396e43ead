package snapshot

import (
	"fmt"
	"hash/crc32"
	"os"
	"path/filepath"
	"strings"
)

// Striping (NativeOptions.Dirs, the server's --dbdirs): a native save may
// spread its shard files round-robin over several directories (several
// disks), shard i in Dirs[i % len(Dirs)]. The summary stays at the dump's
// path and names, per shard file, its directory (absolute; omitted when it
// is the summary's own), its length and its CRC-32C, so a load finds every
// file wherever it lives and refuses, naming the path, one that is missing
// or differs.
//
// Invariants:
//   - Striped files are named "<dump>.<owner>.<id>.<shard>.dfs", where
//     owner is a hash of the summary's absolute path: several servers may
//     share a stripe directory, and each removes only its own older files.
//   - Every stripe directory is fsynced, after its files, before the
//     summary that names them is renamed into place.

// stripeLayout returns the directory and name of each of n shard files of
// the snapshot id whose summary is dir/base.
func stripeLayout(dir, base, id string, n int, dirs []string) (fdirs, names []string) {
	fdirs, names = make([]string, n), make([]string, n)
	owner := stripeOwner(dir, base)
	for i := range n {
		fdirs[i] = dir
		names[i] = fmt.Sprintf("%s.%s.%d.dfs", base, id, i)
		if len(dirs) > 0 {
			fdirs[i] = dirs[i%len(dirs)]
			names[i] = fmt.Sprintf("%s.%s.%s.%d.dfs", base, owner, id, i)
		}
	}
	return fdirs, names
}

// stripeOwner tags the striped files of the summary dir/base.
func stripeOwner(dir, base string) string {
	p := filepath.Join(dir, base)
	if abs, err := filepath.Abs(p); err == nil {
		p = abs
	}
	return fmt.Sprintf("%08x", crc32.Checksum([]byte(p), castagnoli))
}

// CheckStripeDirs validates a --dbdirs list: absolute or relative paths of
// existing directories, each once.
func CheckStripeDirs(dirs []string) ([]string, error) {
	out := make([]string, 0, len(dirs))
	seen := map[string]bool{}
	for _, d := range dirs {
		if d = strings.TrimSpace(d); d == "" {
			continue
		}
		abs, err := filepath.Abs(d)
		if err != nil {
			return nil, err
		}
		fi, err := os.Stat(abs)
		if err != nil {
			return nil, fmt.Errorf("stripe directory: %w", err)
		}
		if !fi.IsDir() {
			return nil, fmt.Errorf("stripe directory %s is not a directory", abs)
		}
		if seen[abs] {
			return nil, fmt.Errorf("stripe directory %s is listed twice", abs)
		}
		seen[abs] = true
		out = append(out, abs)
	}
	return out, nil
}

// syncStripeDirs fsyncs every stripe directory but the summary's (which
// is synced after the rename).
func syncStripeDirs(dir string, fdirs []string) error {
	done := map[string]bool{dir: true}
	for _, d := range fdirs {
		if !done[d] {
			done[d] = true
			if err := syncDir(d); err != nil {
				return fmt.Errorf("fsync of stripe directory %s: %w", d, err)
			}
		}
	}
	return nil
}

// removeOldStripes removes this summary's striped files of snapshots other
// than id from the stripe directories.
func removeOldStripes(dir, base, id string, dirs []string) {
	owner := stripeOwner(dir, base)
	keep := base + "." + owner + "." + id + "."
	for _, d := range dirs {
		old, err := filepath.Glob(filepath.Join(d, globEscape(base+"."+owner+".")+"*.dfs"))
		if err != nil {
			continue
		}
		for _, o := range old {
			if !strings.HasPrefix(filepath.Base(o), keep) {
				os.Remove(o)
			}
		}
	}
}

// filePath is where the shard file nf of the summary in dir lives.
func (nf NativeFile) filePath(dir string) string {
	if nf.Dir != "" {
		return filepath.Join(nf.Dir, nf.Name)
	}
	return filepath.Join(dir, nf.Name)
}

// checkStripeDir validates a summary's file directory.
func checkStripeDir(d string) error {
	if d != "" && (!filepath.IsAbs(d) || filepath.Clean(d) != d) {
		return fmt.Errorf("bad stripe directory %q (want a clean absolute path)", d)
	}
	return nil
}
