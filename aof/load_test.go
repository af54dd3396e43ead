package aof

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// recorder is a Loader that keeps the commands it is given.
type recorder struct {
	cmds []string
	rdb  int
}

func (r *recorder) loader(truncated bool) Loader {
	return Loader{
		LoadRDB: func(rd io.Reader, name string) (int64, error) {
			r.rdb++
			return 0, errors.New("no RDB in these tests")
		},
		Exec: func(args [][]byte) error {
			if strings.EqualFold(string(args[0]), "nosuchcommand") {
				return errors.New("unknown command")
			}
			r.cmds = append(r.cmds, string(bytes.Join(args, []byte(" "))))
			return nil
		},
		Truncated: truncated,
		Log:       slog.New(slog.NewTextHandler(io.Discard, nil)),
	}
}

func cmds(n int) []byte {
	var b []byte
	for i := 0; i < n; i++ {
		b = AppendCommand(b, [][]byte{[]byte("SET"), []byte(fmt.Sprint("k", i)), []byte(strings.Repeat("v", i%7))})
	}
	return b
}

// writeAOF makes dir/appendonlydir with an empty base-less manifest and
// one incr file holding data.
func writeAOF(t *testing.T, dir string, data []byte) string {
	t.Helper()
	adir := filepath.Join(dir, "appendonlydir")
	os.MkdirAll(adir, 0o755)
	m := &Manifest{}
	fi := m.NextIncr("appendonly.aof")
	if err := os.WriteFile(filepath.Join(adir, fi.Name), data, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := WriteManifest(adir, "appendonly.aof", m); err != nil {
		t.Fatal(err)
	}
	return filepath.Join(adir, fi.Name)
}

// TestTruncatedAtEveryOffset cuts a file at random offsets: with
// aof-load-truncated every complete command loads and the file is cut
// after the last one; without it, loading fails naming file and offset.
func TestTruncatedAtEveryOffset(t *testing.T) {
	full := cmds(40)
	// Offsets at which a command ends.
	var ends []int
	for off, i := 0, 0; i < 40; i++ {
		one := AppendCommand(nil, [][]byte{[]byte("SET"), []byte(fmt.Sprint("k", i)), []byte(strings.Repeat("v", i%7))})
		off += len(one)
		ends = append(ends, off)
	}
	rnd := rand.New(rand.NewSource(1))
	for round := 0; round < 40; round++ {
		cut := rnd.Intn(len(full))
		complete := 0
		for complete < len(ends) && ends[complete] <= cut {
			complete++
		}
		dir := t.TempDir()
		path := writeAOF(t, dir, full[:cut])
		var r recorder
		_, ok, err := Load(dir, "appendonlydir", "appendonly.aof", r.loader(true))
		if err != nil || !ok {
			t.Fatalf("cut %d: %v %v", cut, ok, err)
		}
		if len(r.cmds) != complete {
			t.Fatalf("cut %d: %d commands loaded, want %d", cut, len(r.cmds), complete)
		}
		want := 0
		if complete > 0 {
			want = ends[complete-1]
		}
		if st, _ := os.Stat(path); st.Size() != int64(want) {
			t.Fatalf("cut %d: file is %d bytes after loading, want %d", cut, st.Size(), want)
		}
		if cut == want {
			continue
		}
		path = writeAOF(t, dir, full[:cut])
		r = recorder{}
		_, _, err = Load(dir, "appendonlydir", "appendonly.aof", r.loader(false))
		var ce *CorruptError
		if !errors.As(err, &ce) || ce.File != filepath.Base(path) || ce.Offset != int64(want) {
			t.Fatalf("cut %d without aof-load-truncated: %v (want an error at offset %d)", cut, err, want)
		}
	}
}

// TestCorruptionNamesFileAndOffset: damage in the middle is never cut
// off, whatever aof-load-truncated says.
func TestCorruptionNamesFileAndOffset(t *testing.T) {
	full := cmds(10)
	first := len(AppendCommand(nil, [][]byte{[]byte("SET"), []byte("k0"), nil}))
	bad := append([]byte(nil), full...)
	bad[first] = '+' // the second command starts with '+' instead of '*'
	dir := t.TempDir()
	writeAOF(t, dir, bad)
	var r recorder
	_, _, err := Load(dir, "appendonlydir", "appendonly.aof", r.loader(true))
	var ce *CorruptError
	if !errors.As(err, &ce) || ce.Offset != int64(first) || ce.File != "appendonly.aof.1.incr.aof" {
		t.Fatalf("got %v, want a CorruptError at offset %d", err, first)
	}
	// Unknown command: refused.
	dir = t.TempDir()
	writeAOF(t, dir, append(cmds(2), AppendCommand(nil, [][]byte{[]byte("NOSUCHCOMMAND")})...))
	if _, _, err := Load(dir, "appendonlydir", "appendonly.aof", r.loader(true)); err == nil ||
		!strings.Contains(err.Error(), "unknown command") {
		t.Fatalf("unknown command: %v", err)
	}
	// A file named in the manifest but missing.
	dir = t.TempDir()
	path := writeAOF(t, dir, cmds(1))
	os.Remove(path)
	if _, _, err := Load(dir, "appendonlydir", "appendonly.aof", r.loader(true)); err == nil {
		t.Fatal("missing incr file accepted")
	}
}

// TestUnfinishedMulti: a file ending inside MULTI is cut before it.
func TestUnfinishedMulti(t *testing.T) {
	data := cmds(3)
	keep := len(data)
	data = AppendCommand(data, [][]byte{[]byte("MULTI")})
	data = AppendCommand(data, [][]byte{[]byte("SET"), []byte("x"), []byte("y")})
	dir := t.TempDir()
	path := writeAOF(t, dir, data)
	var r recorder
	if _, _, err := Load(dir, "appendonlydir", "appendonly.aof", r.loader(true)); err != nil {
		t.Fatal(err)
	}
	if st, _ := os.Stat(path); st.Size() != int64(keep) {
		t.Fatalf("file %d bytes, want %d", st.Size(), keep)
	}
	if last := r.cmds[len(r.cmds)-1]; last != "DISCARD" {
		t.Fatalf("the open transaction was not discarded: %q", r.cmds)
	}
}

// TestOldSingleFile: appendonly.aof in dir (Redis < 7) is loaded, then
// moved into the directory under a manifest naming it as the base.
func TestOldSingleFile(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "appendonly.aof"), cmds(5), 0o644)
	var r recorder
	st, ok, err := Load(dir, "appendonlydir", "appendonly.aof", r.loader(true))
	if err != nil || !ok || len(r.cmds) != 5 || st.BaseSize != int64(len(cmds(5))) {
		t.Fatalf("%+v %v %v %d", st, ok, err, len(r.cmds))
	}
	m, err := ReadManifest(filepath.Join(dir, "appendonlydir"), "appendonly.aof")
	if err != nil || m.Base == nil || m.Base.Name != "appendonly.aof" {
		t.Fatalf("manifest %+v %v", m, err)
	}
	if _, err := os.Stat(filepath.Join(dir, "appendonlydir", "appendonly.aof")); err != nil {
		t.Fatal(err)
	}
	r = recorder{}
	if _, ok, err := Load(dir, "appendonlydir", "appendonly.aof", r.loader(true)); err != nil || !ok || len(r.cmds) != 5 {
		t.Fatalf("second load: %v %v %d", ok, err, len(r.cmds))
	}
}

func FuzzReplay(f *testing.F) {
	f.Add(cmds(3))
	f.Add([]byte("#TS:1\r\n*1\r\n$5\r\nMULTI\r\n"))
	f.Add([]byte("*2\r\n$3\r\nGET\r\n$-1\r\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		var r recorder
		l := r.loader(true)
		valid, _, err := replayBytes(b, l)
		if valid < 0 || valid > int64(len(b)) {
			t.Fatalf("valid offset %d outside 0..%d", valid, len(b))
		}
		_ = err
	})
}
