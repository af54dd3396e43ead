package resp

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"
	"testing/iotest"
)

// render spells a Value as one line per RESP line, a bulk's payload on a
// line of its own (as the server's testdata scripts do).
func render(v Value) string {
	var b strings.Builder
	var walk func(v Value)
	walk = func(v Value) {
		switch v.Type {
		case '$', '=', '!':
			fmt.Fprintf(&b, "%c%d\n", v.Type, v.Int)
			if v.Int >= 0 {
				fmt.Fprintf(&b, "%s\n", v.Str)
			}
		case '*', '%', '~', '>', '|':
			fmt.Fprintf(&b, "%c%d\n", v.Type, v.Int)
			for _, e := range v.Elems {
				walk(e)
			}
		default:
			fmt.Fprintf(&b, "%c%s\n", v.Type, v.Str)
		}
	}
	walk(v)
	return b.String()
}

const replies = "+OK\r\n-ERR x y\r\n:-42\r\n$5\r\nhe\r\no\r\n$-1\r\n*-1\r\n*0\r\n" +
	"*2\r\n$1\r\na\r\n*1\r\n:1\r\n_\r\n,3.5\r\n#t\r\n(123456789012345678901234567890\r\n" +
	"=8\r\ntxt:abcd\r\n!3\r\nERR\r\n%2\r\n+a\r\n:1\r\n+b\r\n~1\r\n$0\r\n\r\n" +
	">2\r\n+message\r\n$1\r\nx\r\n|1\r\n+ttl\r\n:3\r\n:7\r\n"

func readAll(t *testing.T, r *Reader) []string {
	t.Helper()
	var out []string
	for {
		v, err := r.ReadValue()
		if err == io.EOF {
			return out
		}
		if err != nil {
			t.Fatalf("after %q: %v", out, err)
		}
		out = append(out, render(v))
	}
}

func TestReadValue(t *testing.T) {
	want := []string{"+OK\n", "-ERR x y\n", ":-42\n", "$5\nhe\r\no\n", "$-1\n", "*-1\n", "*0\n",
		"*2\n$1\na\n*1\n:1\n", "_\n", ",3.5\n", "#t\n", "(123456789012345678901234567890\n",
		"=8\ntxt:abcd\n", "!3\nERR\n", "%2\n+a\n:1\n+b\n~1\n$0\n\n",
		">2\n+message\n$1\nx\n", "|1\n+ttl\n:3\n", ":7\n"}
	// Whole, and one byte per Read (a value split everywhere); a Reader
	// must give the same values either way.
	for name, r := range map[string]*Reader{
		"bytes":   NewBytesReader([]byte(replies)),
		"stream":  NewReader(strings.NewReader(replies)),
		"onebyte": NewReader(iotest.OneByteReader(strings.NewReader(replies))),
	} {
		got := readAll(t, r)
		if strings.Join(got, "|") != strings.Join(want, "|") {
			t.Errorf("%s:\n got %q\nwant %q", name, got, want)
		}
	}
}

func TestReadValueErrors(t *testing.T) {
	for _, in := range []string{"?x\r\n", "\r\n", ":1x\r\n", "$-2\r\n", "$01\r\na\r\n", "=-1\r\n",
		"%-1\r\n", "*+1\r\n", ":" + strings.Repeat("9", 30) + "\r\n"} {
		_, err := NewBytesReader([]byte(in)).ReadValue()
		if !errors.Is(err, ErrProtocol) {
			t.Errorf("%q: got %v, want a protocol error", in, err)
		}
	}
	for _, in := range []string{"$5\r\nab", "*2\r\n:1\r\n", "+OK"} {
		_, err := NewReader(strings.NewReader(in)).ReadValue()
		if err != io.ErrUnexpectedEOF {
			t.Errorf("%q: got %v, want unexpected EOF", in, err)
		}
	}
	// Limits: a long line, a bulk above MaxBulk, deep nesting.
	r := NewReader(strings.NewReader("+" + strings.Repeat("a", MaxInline+10) + "\r\n"))
	if _, err := r.ReadValue(); !errors.Is(err, ErrProtocol) {
		t.Errorf("long line: %v", err)
	}
	r = NewBytesReader([]byte("$11\r\nhello world\r\n"))
	r.MaxBulk = 10
	if _, err := r.ReadValue(); !errors.Is(err, ErrProtocol) {
		t.Errorf("bulk over MaxBulk: %v", err)
	}
	if _, err := NewBytesReader([]byte(strings.Repeat("*1\r\n", MaxDepth+1) + ":1\r\n")).ReadValue(); !errors.Is(err, ErrProtocol) {
		t.Errorf("deep nesting: %v", err)
	}
	// A huge announced count does not allocate it up front.
	if _, err := NewBytesReader([]byte("*2147483647\r\n:1\r\n")).ReadValue(); err != io.ErrUnexpectedEOF {
		t.Errorf("huge count: %v", err)
	}
}

// ReadCommand reads requests with RequestReader's rules and returns their
// exact bytes (what a replica adds to its own stream and offset).
func TestReadCommand(t *testing.T) {
	big := strings.Repeat("x", 100<<10)
	in := "*2\r\n$4\r\nPING\r\n$1\r\na\r\n\n" + "SET k \"a b\"\r\n" + "*0\r\n" +
		string(AppendCommandStrings(nil, "SET", "big", big))
	r := NewReader(iotest.HalfReader(strings.NewReader(in)))
	var raws, cmds []string
	for {
		args, raw, err := r.ReadCommand()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		raws = append(raws, string(raw))
		cmds = append(cmds, string(bytes.Join(args, []byte(" "))))
	}
	if strings.Join(raws, "") != in {
		t.Errorf("raw bytes do not add up to the input")
	}
	want := []string{"PING a", "", "SET k a b", "", "SET big " + big}
	if strings.Join(cmds, "|") != strings.Join(want, "|") {
		t.Errorf("got %.80q", cmds)
	}
	if len(r.buf) > 1<<20 {
		t.Errorf("buffer %d bytes", len(r.buf))
	}
	_, _, err := NewReader(strings.NewReader("*1\r\n$3\r\nab")).ReadCommand()
	if err != io.ErrUnexpectedEOF {
		t.Errorf("truncated command: %v", err)
	}
	_, _, err = NewReader(strings.NewReader("*1\r\n+3\r\n")).ReadCommand()
	var pe ProtocolError
	if !errors.As(err, &pe) {
		t.Errorf("bad command: %v", err)
	}
}

// Read and ReadByte return buffered bytes first: an RDB payload after its
// header line, then the command stream again.
func TestReaderRawBytes(t *testing.T) {
	r := NewReader(iotest.OneByteReader(strings.NewReader("$3\r\nRDB*1\r\n$4\r\nPING\r\n")))
	ln, err := r.ReadLine()
	if err != nil || string(ln) != "$3" {
		t.Fatalf("%q %v", ln, err)
	}
	body, err := io.ReadAll(io.LimitReader(r, 3))
	if err != nil || string(body) != "RDB" {
		t.Fatalf("%q %v", body, err)
	}
	c, err := r.ReadByte()
	if err != nil || c != '*' {
		t.Fatalf("%q %v", c, err)
	}
	args, _, err := NewReader(io.MultiReader(strings.NewReader("*"), r)).ReadCommand()
	if err != nil || len(args) != 1 || string(args[0]) != "PING" {
		t.Fatalf("%q %v", args, err)
	}
}

func TestAppendCommand(t *testing.T) {
	got := string(AppendCommand([]byte("x"), []byte("SET"), []byte(""), []byte("a\r\nb")))
	if got != "x*3\r\n$3\r\nSET\r\n$0\r\n\r\n$4\r\na\r\nb\r\n" {
		t.Errorf("%q", got)
	}
	if AppendCommandStrings(nil, "SET", "", "a\r\nb") == nil || got[1:] != string(AppendCommandStrings(nil, "SET", "", "a\r\nb")) {
		t.Errorf("strings form differs")
	}
}

// FuzzReadValue: a Reader never panics, and reading from a slice, a stream
// and a stream of one byte per Read gives the same values and errors.
func FuzzReadValue(f *testing.F) {
	f.Add([]byte(replies))
	f.Add([]byte("*3\r\n$3\r\nSET\r\n$1\r\nk\r\n%1\r\n_\r\n#f\r\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		run := func(r *Reader) string {
			var b strings.Builder
			for {
				v, err := r.ReadValue()
				if err != nil {
					fmt.Fprintf(&b, "error %v", err)
					return b.String()
				}
				b.WriteString(render(v))
			}
		}
		a := run(NewBytesReader(data))
		if s := run(NewReader(bytes.NewReader(data))); s != a {
			t.Fatalf("stream %q\nbytes %q", s, a)
		}
		if s := run(NewReader(iotest.OneByteReader(bytes.NewReader(data)))); s != a {
			t.Fatalf("one byte %q\nbytes %q", s, a)
		}
	})
}

// A source error in the middle of a value (a read deadline) consumes
// nothing: the next call returns the whole value.
func TestReadValueRetry(t *testing.T) {
	in := "*2\r\n$5\r\nhello\r\n:1\r\n"
	r := NewReader(iotest.TimeoutReader(iotest.OneByteReader(strings.NewReader(in))))
	if _, err := r.ReadValue(); err != iotest.ErrTimeout {
		t.Fatalf("got %v, want the timeout", err)
	}
	v, raw, err := r.ReadValueRaw()
	if err != nil || string(raw) != in || render(v) != "*2\n$5\nhello\n:1\n" {
		t.Fatalf("%q %q %v", render(v), raw, err)
	}
}

func TestReadString(t *testing.T) {
	r := NewReader(iotest.OneByteReader(strings.NewReader("+OK\r\n:1\r\npartial")))
	for _, want := range []string{"+OK\r\n", ":1\r\n"} {
		if s, err := r.ReadString('\n'); s != want || err != nil {
			t.Fatalf("%q %v, want %q", s, err, want)
		}
	}
	if s, err := r.ReadString('\n'); s != "partial" || err != io.EOF {
		t.Fatalf("%q %v", s, err)
	}
}
