package server

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"

	"github.com/damselflydb/damselfly/snapshot"
	"github.com/damselflydb/damselfly/snapshot/block"
)

// Dump formats (--dbformat). Saves write the configured one; loading
// detects the format from the dump's first bytes, so switching the flag
// never strands a dump.

type dbFormat struct {
	native bool
	codec  block.Codec
	level  int
	// maxExtra is --snapshot-max-extra-memory (0: the snapshot package's
	// default), for every save, RDB or native, and full syncs.
	maxExtra int64
}

// ParseDBFormat checks --dbformat and --dbcompression.
func ParseDBFormat(format, compression string) error {
	switch format {
	case "", "rdb", "native":
	default:
		return fmt.Errorf("unknown dump format %q (want rdb or native)", format)
	}
	if compression != "" {
		_, err := block.ParseCodec(compression)
		return err
	}
	return nil
}

func (s *Server) initDBFormat(cfg Config) {
	f := dbFormat{native: cfg.DBFormat == "native", codec: block.S2, level: cfg.DBCompressionLevel, maxExtra: cfg.SnapshotMaxExtraMemory}
	if c, err := block.ParseCodec(cfg.DBCompression); err == nil && cfg.DBCompression != "" {
		f.codec = c
	}
	s.persist.format = f
	s.initDBDirs(cfg) // dbdirs.go
}

// saveNative writes a native snapshot whose summary is path (its own
// files, fsyncs and atomic rename: see snapshot.SaveNative).
func (s *Server) saveNative(ctx context.Context, path string, prog *snapshot.Progress, pace int, onCut func(), cut *cutInCommand) (snapshot.Stats, error) {
	f := s.persist.format
	return snapshot.SaveNative(ctx, s.store, path, snapshot.NativeOptions{
		Options: snapshot.Options{OnCut: onCut, Progress: prog, Pace: pace, Busy: s.snapshotBusy(), Wanted: s.snapshotWanted(), MaxExtraMemory: f.maxExtra, Gate: s.saveGate(), Functions: s.functionCodes,
			KeyDelay: s.keySaveDelay, RunCut: cut.runner(), SlotHeld: cut != nil, NoReserve: cut.locked()},
		Codec: f.codec, Level: f.level, Dirs: s.stripeDirs(),
		SyncWindow: s.saveSyncWindow(),
	})
}

// saveSyncWindow is the writeback window of a dump's files (0: none, the
// final fsync writes them).
func (s *Server) saveSyncWindow() int64 {
	if s.cfg.rdbIncFsync.Load() {
		return saveSyncWindow
	}
	return 0
}

// loadDumpFile loads the open dump f at path, RDB or native.
func (s *Server) loadDumpFile(f *os.File, path string) (snapshot.Stats, error) {
	var magic [len(snapshot.NativeMagic)]byte
	n, _ := io.ReadFull(f, magic[:])
	if string(magic[:n]) == snapshot.NativeMagic {
		if sum, err := snapshot.ReadSummary(path); err == nil {
			var total int64
			for _, nf := range sum.Files {
				total += nf.Bytes
			}
			s.persist.loadTotal.Store(total)
		}
		s.log.Info("the dump is a native snapshot", "file", path)
		return snapshot.LoadNative(s.store, path, snapshot.LoadOptions{Read: &s.persist.loadRead, Limits: s.limits.Load()})
	}
	lo := snapshot.LoadOptions{Read: &s.persist.loadRead, Limits: s.limits.Load()}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		// Not seekable (a pipe): put the bytes read back in front.
		s.persist.loadRead.Add(int64(n))
		return snapshot.LoadWith(s.store, io.MultiReader(bytes.NewReader(magic[:n]), f), path, lo)
	}
	return snapshot.LoadWith(s.store, f, path, lo)
}
