package aof

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
)

// Loader is what loading needs from the server.
type Loader struct {
	// LoadRDB loads an RDB stream (a base file, or the preamble of an old
	// single-file AOF) into the empty dataset and returns how many bytes of
	// r it used, up to and including the checksum.
	LoadRDB func(r io.Reader, name string) (int64, error)
	// Exec applies one command. It returns an error only for a command
	// the server does not know (the file is then refused, as Redis does);
	// a command that fails is ignored, as in Redis.
	Exec func(args [][]byte) error
	// BeginFile, when set, is called before each file's commands: every
	// file starts in database 0, as with Redis's fresh loading client.
	BeginFile func()
	// Truncated is aof-load-truncated: a last file that ends in the middle
	// of a command (or of a MULTI block) is cut back to its last complete
	// command, with a warning, instead of refusing to start.
	Truncated bool
	Log       *slog.Logger
}

// LoadStats describe a load.
type LoadStats struct {
	Files     int
	Commands  int64
	BaseSize  int64 // size of the base file (aof_rewrite_base_size)
	TotalSize int64
	Truncated bool // the last file was cut back
}

// CorruptError is a file that cannot be loaded: its name, the offset of
// the command (or RDB record) where the problem is, and what is wrong.
type CorruptError struct {
	File   string
	Offset int64
	Msg    string
}

func (e *CorruptError) Error() string {
	return fmt.Sprintf("%s: offset %d: %s", e.File, e.Offset, e.Msg)
}

// errTruncated is an input that ends inside a command.
var errTruncated = errors.New("unexpected end of file")

// Exists reports whether there is an AOF to load: a manifest naming files
// in dir/dirname, or an old single-file AOF dir/filename.
func Exists(dir, dirname, filename string) (bool, error) {
	m, err := ReadManifest(filepath.Join(dir, dirname), filename)
	if err != nil {
		return false, err
	}
	if m != nil && !m.Empty() {
		return true, nil
	}
	_, err = os.Stat(filepath.Join(dir, filename))
	return err == nil, nil
}

// Load reads the AOF of dir (appenddirname dirname, appendfilename
// filename): the base, then every incr file in order, per the manifest.
// Without a manifest, an old single-file AOF dir/filename (with or without
// an RDB preamble) is loaded and then moved into dirname under a new
// manifest naming it as the base, as Redis 7 upgrades it. ok is false when
// there is no AOF at all.
func Load(dir, dirname, filename string, l Loader) (st LoadStats, ok bool, err error) {
	if l.Log == nil {
		l.Log = slog.Default()
	}
	adir := filepath.Join(dir, dirname)
	m, err := ReadManifest(adir, filename)
	if err != nil {
		return st, false, err
	}
	if m == nil || m.Empty() {
		old := filepath.Join(dir, filename)
		if _, serr := os.Stat(old); serr != nil {
			return st, false, nil
		}
		l.Log.Info("loading an old single-file AOF; it will be moved into the AOF directory", "file", old)
		n, cmds, trunc, err := loadFile(old, filename, true, l)
		if err != nil {
			return st, false, err
		}
		st = LoadStats{Files: 1, Commands: cmds, BaseSize: n, TotalSize: n, Truncated: trunc}
		if err := upgrade(dir, adir, filename); err != nil {
			return st, true, fmt.Errorf("moving the old AOF into %s: %w", adir, err)
		}
		return st, true, nil
	}
	files := []FileInfo{}
	if m.Base != nil {
		files = append(files, *m.Base)
	}
	files = append(files, m.Incrs...)
	for _, fi := range files {
		if _, serr := os.Stat(filepath.Join(adir, fi.Name)); serr != nil {
			return st, false, fmt.Errorf("the AOF file %s named in the manifest cannot be read: %w", fi.Name, serr)
		}
	}
	for i, fi := range files {
		last := i == len(files)-1
		n, cmds, trunc, err := loadFile(filepath.Join(adir, fi.Name), fi.Name, last, l)
		if err != nil {
			return st, false, err
		}
		st.Files++
		st.Commands += cmds
		st.TotalSize += n
		if fi.Type == TypeBase {
			st.BaseSize = n
		}
		st.Truncated = st.Truncated || trunc
		l.Log.Info("DB loaded from AOF file", "file", fi.Name, "bytes", n, "commands", cmds)
	}
	return st, true, nil
}

// upgrade moves dir/filename into adir and writes a manifest naming it as
// the base (seq 1). A crash half-way is harmless: the next start finds the
// old file again, or the manifest.
func upgrade(dir, adir, filename string) error {
	if err := os.MkdirAll(adir, 0o755); err != nil {
		return err
	}
	m := &Manifest{Base: &FileInfo{Name: filename, Seq: 1, Type: TypeBase}, BaseSeq: 1}
	if err := WriteManifest(adir, filename, m); err != nil {
		return err
	}
	if err := os.Rename(filepath.Join(dir, filename), filepath.Join(adir, filename)); err != nil {
		return err
	}
	if err := SyncDir(adir); err != nil {
		return err
	}
	return SyncDir(dir)
}

// loadFile loads one file: an RDB part when it starts with "REDIS", then
// commands. last: a truncated tail may be cut off (aof-load-truncated).
// It returns the file's size after loading (after any cut).
func loadFile(path, name string, last bool, l Loader) (size int64, cmds int64, truncated bool, err error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, 0, false, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return 0, 0, false, err
	}
	size = fi.Size()
	if size == 0 {
		return 0, 0, false, nil
	}
	var start int64
	sig := make([]byte, 5)
	if n, _ := io.ReadFull(f, sig); n == 5 && string(sig) == "REDIS" {
		if _, err := f.Seek(0, io.SeekStart); err != nil {
			return 0, 0, false, err
		}
		used, err := l.LoadRDB(f, name)
		if err != nil {
			return 0, 0, false, fmt.Errorf("AOF file %s: RDB part: %w", name, err)
		}
		start = used
	}
	if _, err := f.Seek(start, io.SeekStart); err != nil {
		return 0, 0, false, err
	}
	if l.BeginFile != nil {
		l.BeginFile()
	}
	valid, cmds, perr := replay(bufio.NewReaderSize(f, 256<<10), start, name, l)
	if perr == nil {
		return size, cmds, false, nil
	}
	if !errors.Is(perr, errTruncated) {
		return 0, 0, false, perr
	}
	if !last {
		return 0, 0, false, &CorruptError{File: name, Offset: valid, Msg: "unexpected end of file, and this is not the last AOF file"}
	}
	if !l.Truncated {
		return 0, 0, false, &CorruptError{File: name, Offset: valid,
			Msg: "unexpected end of file (truncated command after the last complete one); set aof-load-truncated yes to load it without the tail, or fix it with redis-check-aof --fix"}
	}
	l.Log.Warn("!!! short read while loading the AOF file: truncating it at the last complete command !!!",
		"file", name, "offset", valid, "dropped_bytes", size-valid)
	if err := os.Truncate(path, valid); err != nil {
		return 0, 0, false, fmt.Errorf("truncating %s at %d: %w", name, valid, err)
	}
	return valid, cmds, true, nil
}

// replay parses and applies commands from r (which starts at file offset
// base). It returns the offset after the last command that may be kept:
// on errTruncated, the file should be cut there (before an unfinished
// MULTI block, whose queued commands were never applied).
func replay(r *bufio.Reader, base int64, name string, l Loader) (valid int64, cmds int64, err error) {
	off := base
	valid = base
	var beforeMulti int64
	inMulti := false
	var args [][]byte
	var arena []byte
	for {
		cmdStart := off
		line, err := readLine(r, &off)
		if err == io.EOF {
			break
		}
		if err == errBadLine {
			return valid, cmds, &CorruptError{File: name, Offset: cmdStart, Msg: "bad file format: malformed line"}
		}
		if err != nil {
			return valid, cmds, errTruncated
		}
		if line[0] == '#' { // annotation (#TS:...)
			if inMulti {
				continue
			}
			valid = off
			continue
		}
		if line[0] != '*' {
			return valid, cmds, &CorruptError{File: name, Offset: cmdStart, Msg: fmt.Sprintf("bad file format: expected '*', got %q", clip(line))}
		}
		argc, perr := strconv.Atoi(string(line[1:]))
		if perr != nil || argc < 1 || argc > 1<<20 {
			return valid, cmds, &CorruptError{File: name, Offset: cmdStart, Msg: fmt.Sprintf("bad file format: invalid argument count %q", clip(line))}
		}
		args = args[:0]
		arena = arena[:0]
		lens := make([]int, 0, argc)
		for range argc {
			hdrOff := off
			line, err := readLine(r, &off)
			if err == errBadLine {
				return valid, cmds, &CorruptError{File: name, Offset: hdrOff, Msg: "bad file format: malformed line"}
			}
			if err != nil {
				return valid, cmds, errTruncated
			}
			if line[0] != '$' {
				return valid, cmds, &CorruptError{File: name, Offset: hdrOff, Msg: fmt.Sprintf("bad file format: expected '$', got %q", clip(line))}
			}
			n, perr := strconv.Atoi(string(line[1:]))
			if perr != nil || n < 0 || n > 1<<29 {
				return valid, cmds, &CorruptError{File: name, Offset: hdrOff, Msg: fmt.Sprintf("bad file format: invalid bulk length %q", clip(line))}
			}
			at := len(arena)
			arena = append(arena, make([]byte, n+2)...)
			if _, err := io.ReadFull(r, arena[at:]); err != nil {
				return valid, cmds, errTruncated
			}
			off += int64(n + 2)
			if arena[at+n] != '\r' || arena[at+n+1] != '\n' {
				return valid, cmds, &CorruptError{File: name, Offset: off - 2, Msg: "bad file format: bulk string not followed by CRLF"}
			}
			arena = arena[:at+n]
			lens = append(lens, n)
		}
		p := 0
		for _, n := range lens {
			args = append(args, arena[p:p+n:p+n])
			p += n
		}
		name0 := string(bytes.ToLower(args[0]))
		if name0 == "multi" {
			beforeMulti = valid
			inMulti = true
		}
		if err := l.Exec(args); err != nil {
			return valid, cmds, &CorruptError{File: name, Offset: cmdStart, Msg: err.Error()}
		}
		cmds++
		if name0 == "exec" || name0 == "discard" {
			inMulti = false
		}
		if !inMulti {
			valid = off
		}
	}
	if inMulti {
		_ = l.Exec([][]byte{[]byte("DISCARD")})
		l.Log.Warn("reverting an incomplete MULTI/EXEC transaction at the end of the AOF file", "file", name)
		return beforeMulti, cmds, errTruncated
	}
	return off, cmds, nil
}

// errBadLine is a line without CRLF or longer than the reader's buffer.
var errBadLine = errors.New("bad line")

// readLine reads a CRLF-terminated line (without the CRLF), advancing off.
// io.EOF: nothing left; errTruncated: the input ends inside the line.
func readLine(r *bufio.Reader, off *int64) ([]byte, error) {
	line, err := r.ReadSlice('\n')
	if err == bufio.ErrBufferFull {
		return nil, errBadLine
	}
	if err == io.EOF && len(line) == 0 {
		return nil, io.EOF
	}
	if err != nil {
		return nil, errTruncated
	}
	*off += int64(len(line))
	if len(line) < 3 || line[len(line)-2] != '\r' {
		return nil, errBadLine
	}
	return line[:len(line)-2], nil
}

func clip(b []byte) []byte {
	if len(b) > 32 {
		return b[:32]
	}
	return b
}

// replayBytes replays b (tests).
func replayBytes(b []byte, l Loader) (int64, int64, error) {
	return replay(bufio.NewReader(bytes.NewReader(b)), 0, "fuzz", l)
}
