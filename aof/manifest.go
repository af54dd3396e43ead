package aof

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// File types of a manifest line: the base, an incremental file, and a
// history file (a former base or incr file, deleted once the manifest that
// no longer needs it is durable).
const (
	TypeBase    = 'b'
	TypeIncr    = 'i'
	TypeHistory = 'h'
)

// FileInfo is one line of the manifest.
type FileInfo struct {
	Name string
	Seq  int64
	Type byte
}

// Manifest lists the files of an append-only directory, in Redis 7's
// syntax: "file <name> seq <n> type <b|i|h>" per line, the base first,
// then history files, then incremental files in increasing seq order.
type Manifest struct {
	Base    *FileInfo
	History []FileInfo
	Incrs   []FileInfo
	// BaseSeq and IncrSeq are the highest sequence numbers used so far
	// (the next base or incr file takes the next one).
	BaseSeq, IncrSeq int64
}

// Empty reports whether the manifest names no base and no incr file.
func (m *Manifest) Empty() bool { return m.Base == nil && len(m.Incrs) == 0 }

// Clone returns a deep copy.
func (m *Manifest) Clone() *Manifest {
	c := *m
	if m.Base != nil {
		b := *m.Base
		c.Base = &b
	}
	c.History = append([]FileInfo(nil), m.History...)
	c.Incrs = append([]FileInfo(nil), m.Incrs...)
	return &c
}

// ManifestName is the manifest's file name for appendfilename name.
func ManifestName(name string) string { return name + ".manifest" }

// BaseName is the name of the base file with sequence seq.
func BaseName(name string, seq int64, rdb bool) string {
	if rdb {
		return name + "." + strconv.FormatInt(seq, 10) + ".base.rdb"
	}
	return name + "." + strconv.FormatInt(seq, 10) + ".base.aof"
}

// IncrName is the name of the incremental file with sequence seq.
func IncrName(name string, seq int64) string {
	return name + "." + strconv.FormatInt(seq, 10) + ".incr.aof"
}

// NextIncr adds a new incremental file and returns it.
func (m *Manifest) NextIncr(name string) FileInfo {
	m.IncrSeq++
	fi := FileInfo{Name: IncrName(name, m.IncrSeq), Seq: m.IncrSeq, Type: TypeIncr}
	m.Incrs = append(m.Incrs, fi)
	return fi
}

// maxManifestLine is the longest line Redis's parser accepts.
const maxManifestLine = 1024

// ParseManifest reads a manifest. Errors name the line; the rules are
// Redis's: '#' lines are comments, every other line has key/value pairs
// (at least file, seq and type; unknown keys are ignored), one base at
// most, incr sequence numbers strictly increasing, file names without a
// directory.
func ParseManifest(r io.Reader) (*Manifest, error) {
	m := &Manifest{}
	br := bufio.NewReaderSize(r, maxManifestLine+1)
	lineno := 0
	for {
		line, err := br.ReadSlice('\n')
		if err == bufio.ErrBufferFull {
			return nil, fmt.Errorf("manifest line %d: line too long", lineno+1)
		}
		if err != nil && err != io.EOF {
			return nil, err
		}
		if len(line) == 0 && err == io.EOF {
			break
		}
		lineno++
		if line[0] == '#' {
			if err == io.EOF {
				break
			}
			continue
		}
		if err == io.EOF {
			// Redis requires every line to end with a newline.
			return nil, fmt.Errorf("manifest line %d: line too long or not terminated", lineno)
		}
		text := strings.Trim(string(line), " \t\r\n")
		fi, perr := parseManifestLine(text)
		if perr != nil {
			return nil, fmt.Errorf("manifest line %d (%q): %v", lineno, text, perr)
		}
		switch fi.Type {
		case TypeBase:
			if m.Base != nil {
				return nil, fmt.Errorf("manifest line %d: found duplicate base file information", lineno)
			}
			b := fi
			m.Base = &b
			m.BaseSeq = fi.Seq
		case TypeHistory:
			m.History = append(m.History, fi)
		case TypeIncr:
			if fi.Seq <= m.IncrSeq {
				return nil, fmt.Errorf("manifest line %d: found a non-monotonic sequence number", lineno)
			}
			m.Incrs = append(m.Incrs, fi)
			m.IncrSeq = fi.Seq
		default:
			return nil, fmt.Errorf("manifest line %d: unknown AOF file type %q", lineno, fi.Type)
		}
	}
	if lineno == 0 {
		return nil, errors.New("found an empty AOF manifest")
	}
	return m, nil
}

func parseManifestLine(text string) (FileInfo, error) {
	var fi FileInfo
	if text == "" {
		return fi, errors.New("invalid AOF manifest file format")
	}
	args, err := splitArgs(text)
	if err != nil || len(args) < 6 || len(args)%2 != 0 {
		return fi, errors.New("invalid AOF manifest file format")
	}
	for i := 0; i < len(args); i += 2 {
		switch strings.ToLower(args[i]) {
		case "file":
			fi.Name = args[i+1]
			if fi.Name != filepath.Base(fi.Name) || strings.ContainsRune(fi.Name, '/') {
				return fi, errors.New("file can't be a path, just a filename")
			}
		case "seq":
			fi.Seq, _ = strconv.ParseInt(args[i+1], 10, 64)
		case "type":
			if args[i+1] != "" {
				fi.Type = args[i+1][0]
			}
		}
	}
	if fi.Name == "" || fi.Seq == 0 || fi.Type == 0 {
		return fi, errors.New("invalid AOF manifest file format")
	}
	return fi, nil
}

// splitArgs splits a line into words the way Redis's sdssplitargs does:
// blanks separate words; "double quoted" words take \n \r \t \b \a \\ \"
// and \xHH escapes; 'single quoted' words take \' only.
func splitArgs(s string) ([]string, error) {
	var out []string
	i := 0
	for {
		for i < len(s) && (s[i] == ' ' || s[i] == '\t' || s[i] == '\r' || s[i] == '\n') {
			i++
		}
		if i >= len(s) {
			return out, nil
		}
		var w []byte
		switch s[i] {
		case '"':
			i++
			for {
				if i >= len(s) {
					return nil, errors.New("unbalanced quotes")
				}
				c := s[i]
				if c == '\\' && i+3 < len(s) && s[i+1] == 'x' && isHex(s[i+2]) && isHex(s[i+3]) {
					v, _ := strconv.ParseUint(s[i+2:i+4], 16, 8)
					w = append(w, byte(v))
					i += 4
					continue
				}
				if c == '\\' && i+1 < len(s) {
					i++
					switch s[i] {
					case 'n':
						w = append(w, '\n')
					case 'r':
						w = append(w, '\r')
					case 't':
						w = append(w, '\t')
					case 'b':
						w = append(w, '\b')
					case 'a':
						w = append(w, '\a')
					default:
						w = append(w, s[i])
					}
					i++
					continue
				}
				if c == '"' {
					i++
					if i < len(s) && s[i] != ' ' && s[i] != '\t' {
						return nil, errors.New("closing quote must be followed by a space")
					}
					break
				}
				w = append(w, c)
				i++
			}
		case '\'':
			i++
			for {
				if i >= len(s) {
					return nil, errors.New("unbalanced quotes")
				}
				c := s[i]
				if c == '\\' && i+1 < len(s) && s[i+1] == '\'' {
					w = append(w, '\'')
					i += 2
					continue
				}
				if c == '\'' {
					i++
					if i < len(s) && s[i] != ' ' && s[i] != '\t' {
						return nil, errors.New("closing quote must be followed by a space")
					}
					break
				}
				w = append(w, c)
				i++
			}
		default:
			for i < len(s) && s[i] != ' ' && s[i] != '\t' && s[i] != '\r' && s[i] != '\n' {
				w = append(w, s[i])
				i++
			}
		}
		out = append(out, string(w))
	}
}

func isHex(c byte) bool {
	return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F')
}

// Marshal returns the manifest's text: base, history, then incr files.
func (m *Manifest) Marshal() []byte {
	var b bytes.Buffer
	line := func(fi FileInfo) {
		fmt.Fprintf(&b, "file %s seq %d type %c\n", quoteName(fi.Name), fi.Seq, fi.Type)
	}
	if m.Base != nil {
		line(*m.Base)
	}
	for _, fi := range m.History {
		line(fi)
	}
	for _, fi := range m.Incrs {
		line(fi)
	}
	return b.Bytes()
}

// quoteName quotes a file name that the parser would otherwise split or
// unescape (as Redis does with sdscatrepr).
func quoteName(n string) string {
	plain := n != ""
	for i := 0; i < len(n) && plain; i++ {
		c := n[i]
		if c <= ' ' || c >= 0x7f || c == '"' || c == '\'' || c == '\\' {
			plain = false
		}
	}
	if plain {
		return n
	}
	var b strings.Builder
	b.WriteByte('"')
	for i := 0; i < len(n); i++ {
		switch c := n[i]; {
		case c == '\\' || c == '"':
			b.WriteByte('\\')
			b.WriteByte(c)
		case c == '\n':
			b.WriteString(`\n`)
		case c == '\r':
			b.WriteString(`\r`)
		case c == '\t':
			b.WriteString(`\t`)
		case c < ' ' || c >= 0x7f:
			fmt.Fprintf(&b, `\x%02x`, c)
		default:
			b.WriteByte(c)
		}
	}
	b.WriteByte('"')
	return b.String()
}

// ReadManifest reads dir/<name>.manifest; (nil, nil) when it does not exist.
func ReadManifest(dir, name string) (*Manifest, error) {
	path := filepath.Join(dir, ManifestName(name))
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	m, err := ParseManifest(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return m, nil
}

// WriteManifest replaces dir/<name>.manifest atomically: a temporary file
// (Redis's temp-<name>.manifest), fsync, rename, fsync of the directory.
func WriteManifest(dir, name string, m *Manifest) error {
	tmp := filepath.Join(dir, "temp-"+ManifestName(name))
	if err := writeFileSync(tmp, m.Marshal()); err != nil {
		_ = os.Remove(tmp)
		return err
	}
	if err := os.Rename(tmp, filepath.Join(dir, ManifestName(name))); err != nil {
		_ = os.Remove(tmp)
		return err
	}
	return SyncDir(dir)
}

func writeFileSync(path string, data []byte) error {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o644)
	if err != nil {
		return err
	}
	if _, err = f.Write(data); err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// SyncDir makes renames and creations in dir durable.
func SyncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}
