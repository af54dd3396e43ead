package resp

import (
	"bytes"
	"errors"
	"io"
)

// Value is one RESP2 or RESP3 reply.
//
// Type is the leading byte: '+' simple string, '-' error, ':' integer,
// '$' bulk string, '*' array, and RESP3's '_' null, ',' double, '#'
// boolean, '(' big number, '=' verbatim string, '!' bulk error, '%' map,
// '~' set, '>' push and '|' attribute. An attribute is returned as a value
// of its own, before the value it annotates (the caller reads that next).
type Value struct {
	Type byte
	// Str is the text of a line type ('+', '-', ',', '#', '(', and ':'
	// as written) or the payload of a bulk type ('$', '=', '!'). It
	// aliases the Reader's buffer: see the package doc.
	Str []byte
	// Int is the integer of ':', the length of a bulk type, or the
	// element count of an aggregate (pairs for '%' and '|'); -1 for a
	// RESP2 null ("$-1", "*-1").
	Int int64
	// Elems holds an aggregate's elements (a map's keys and values
	// alternate).
	Elems []Value
}

// IsNull reports a RESP2 null bulk or array, or RESP3's '_'.
func (v Value) IsNull() bool {
	return v.Type == '_' || (v.Int < 0 && (v.Type == '$' || v.Type == '*'))
}

// IsAggregate reports a value with elements.
func (v Value) IsAggregate() bool {
	switch v.Type {
	case '*', '%', '~', '>', '|':
		return true
	}
	return false
}

// MaxDepth bounds the nesting of aggregates a Reader accepts.
const MaxDepth = 512

// ErrProtocol wraps every malformed-reply error of a Reader.
var ErrProtocol = errors.New("resp: protocol error")

func protoErr(msg string) error { return &readError{msg} }

type readError struct{ msg string }

func (e *readError) Error() string { return "resp: protocol error: " + e.msg }
func (e *readError) Unwrap() error { return ErrProtocol }

// Reader reads commands and replies from a byte stream (an io.Reader, or
// a fixed byte slice) through its own buffer. It is a pull reader for the
// client side of a connection (a replica's link to its primary, a
// primary's reader of REPLCONF ACKs, MIGRATE, tests): a call blocks in the
// source until a whole command or value is buffered. The server's event
// loops, which must not block, use RequestReader directly.
type Reader struct {
	src  io.Reader // nil for a fixed slice
	buf  []byte
	r, w int // unconsumed bytes are buf[r:w]
	req  *RequestReader

	// MaxBulk bounds a bulk's announced length (default DefaultMaxBulkLen).
	MaxBulk int
}

// NewReader returns a Reader over src.
func NewReader(src io.Reader) *Reader {
	return &Reader{src: src, buf: make([]byte, 16<<10), MaxBulk: DefaultMaxBulkLen}
}

// NewBytesReader returns a Reader over b, without copying it.
func NewBytesReader(b []byte) *Reader {
	return &Reader{buf: b, w: len(b), MaxBulk: DefaultMaxBulkLen}
}

// Buffered is the number of bytes read from the source and not yet
// consumed.
func (r *Reader) Buffered() int { return r.w - r.r }

// Read reads raw bytes, the buffered ones first (an RDB payload after its
// "$<len>" header, for instance).
func (r *Reader) Read(p []byte) (int, error) {
	if r.r < r.w {
		n := copy(p, r.buf[r.r:r.w])
		r.r += n
		return n, nil
	}
	if r.src == nil {
		return 0, io.EOF
	}
	return r.src.Read(p)
}

// compact moves the unconsumed bytes to the front of the buffer. Only at
// the start of a call: slices returned by the previous call die here.
func (r *Reader) compact() {
	if r.src == nil {
		return
	}
	if len(r.buf) > 1<<20 && r.w-r.r <= 16<<10 {
		// A large command or value grew the buffer: give it back.
		nb := make([]byte, 16<<10)
		r.w = copy(nb, r.buf[r.r:r.w])
		r.buf, r.r = nb, 0
		return
	}
	if r.r == 0 {
		return
	}
	r.w = copy(r.buf, r.buf[r.r:r.w])
	r.r = 0
}

// fill reads more bytes from the source, growing the buffer when it is full
// (never moving bytes within it, so slices taken during the current call
// stay valid); need, when known, is how many bytes past r.r the caller
// waits for, which caps the growth.
//
// Errors of the source are not sticky: after a read deadline passes, a
// later call reads again (with what was already buffered kept).
func (r *Reader) fill(need int) error {
	if r.src == nil {
		return io.EOF
	}
	if r.w == len(r.buf) {
		// Grow by doubling at most, even for a large announced bulk, so
		// a peer's length costs memory only as its bytes arrive.
		size := 2 * len(r.buf)
		if need > 0 && r.r+need < size {
			size = max(r.r+need, r.w+1)
		}
		nb := make([]byte, size)
		copy(nb, r.buf[:r.w])
		r.buf = nb
	}
	n, err := r.src.Read(r.buf[r.w:])
	r.w += n
	if err != nil && n == 0 {
		return err
	}
	return nil
}

// unexpected turns io.EOF met inside a command or value into
// io.ErrUnexpectedEOF.
func unexpected(err error, started bool) error {
	if err == io.EOF && started {
		return io.ErrUnexpectedEOF
	}
	return err
}

// ReadCommand reads one request with RequestReader's rules (authenticated
// limits, MaxBulk). It returns the arguments and the raw bytes of the
// request, both valid until the next call; a blank line or an empty array
// gives no arguments but its raw bytes (a replication keepalive counts
// towards the offset). io.EOF means the stream ended between commands.
func (r *Reader) ReadCommand() (args [][]byte, raw []byte, err error) {
	if r.req == nil {
		r.req = NewRequestReader()
		r.req.Authed = true
	}
	r.req.MaxBulk = r.MaxBulk
	r.compact()
	for {
		args, n, err := r.req.Next(r.buf[r.r:r.w])
		switch err {
		case nil, ErrEmptyMultibulk:
			raw = r.buf[r.r : r.r+n : r.r+n]
			r.r += n
			return args, raw, nil
		case ErrNeedMore:
			if ferr := r.fill(r.req.Need()); ferr != nil {
				return nil, nil, unexpected(ferr, r.w > r.r)
			}
		default:
			return nil, nil, err
		}
	}
}

// line returns the next line (without CR LF) starting at r.r, consuming it.
func (r *Reader) line(started bool) ([]byte, error) {
	scan := r.r
	for {
		for i := scan; i < r.w; i++ {
			if r.buf[i] == '\n' {
				if i-r.r > MaxInline+1 {
					return nil, protoErr("line too long")
				}
				ln := r.buf[r.r:i]
				r.r = i + 1
				if len(ln) > 0 && ln[len(ln)-1] == '\r' {
					ln = ln[:len(ln)-1]
				}
				return ln, nil
			}
		}
		if r.w-r.r > MaxInline {
			return nil, protoErr("line too long")
		}
		scan = r.w
		if err := r.fill(0); err != nil {
			return nil, unexpected(err, started || r.w > r.r)
		}
	}
}

// ReadLine reads one line, without its CR LF, valid until the next call.
func (r *Reader) ReadLine() ([]byte, error) {
	r.compact()
	return r.line(false)
}

// ReadValue reads one whole reply. Its strings alias the Reader's buffer
// and stay valid until the next call. On an error nothing is consumed: after
// a read deadline passed, a later call reads the same value again.
func (r *Reader) ReadValue() (Value, error) {
	v, _, err := r.ReadValueRaw()
	return v, err
}

// ReadValueRaw is ReadValue that also returns the value's exact bytes,
// valid until the next call.
func (r *Reader) ReadValueRaw() (Value, []byte, error) {
	r.compact()
	start := r.r
	v, err := r.value(0)
	if err != nil {
		r.r = start
		return Value{}, nil, err
	}
	return v, r.buf[start:r.r:r.r], nil
}

func (r *Reader) value(depth int) (Value, error) {
	ln, err := r.line(depth > 0)
	if err != nil {
		return Value{}, err
	}
	if len(ln) == 0 {
		return Value{}, protoErr("empty line")
	}
	v := Value{Type: ln[0], Str: ln[1:]}
	switch v.Type {
	case '+', '-', ',', '#', '(':
		return v, nil
	case '_':
		v.Str = nil
		return v, nil
	case ':':
		n, ok := ParseInt(v.Str)
		if !ok {
			return Value{}, protoErr("bad integer " + quote(ln))
		}
		v.Int = n
		return v, nil
	case '$', '=', '!':
		n, ok := ParseInt(v.Str)
		if !ok || n < -1 || n > int64(r.MaxBulk) || (n == -1 && v.Type != '$') {
			return Value{}, protoErr("bad bulk length " + quote(ln))
		}
		v.Int, v.Str = n, nil
		if n < 0 {
			return v, nil
		}
		for r.w-r.r < int(n)+2 {
			if err := r.fill(int(n) + 2); err != nil {
				return Value{}, unexpected(err, true)
			}
		}
		v.Str = r.buf[r.r : r.r+int(n) : r.r+int(n)]
		r.r += int(n) + 2
		return v, nil
	case '*', '%', '~', '>', '|':
		n, ok := ParseInt(v.Str)
		if !ok || n < -1 || n > MaxMultibulk || (n == -1 && v.Type != '*') {
			return Value{}, protoErr("bad aggregate length " + quote(ln))
		}
		v.Int, v.Str = n, nil
		if n <= 0 {
			return v, nil
		}
		if depth >= MaxDepth {
			return Value{}, protoErr("nesting too deep")
		}
		count := n
		if v.Type == '%' || v.Type == '|' {
			count *= 2
		}
		// A peer's announced count preallocates only a little.
		v.Elems = make([]Value, 0, min(count, 1024))
		for i := int64(0); i < count; i++ {
			e, err := r.value(depth + 1)
			if err != nil {
				return Value{}, unexpected(err, true)
			}
			v.Elems = append(v.Elems, e)
		}
		return v, nil
	}
	return Value{}, protoErr("unknown type " + quote(ln))
}

func quote(b []byte) string {
	if len(b) > 32 {
		b = b[:32]
	}
	return "\"" + string(b) + "\""
}

// Peek returns the next byte without consuming it, reading from the source
// if nothing is buffered.
func (r *Reader) Peek() (byte, error) {
	for r.r == r.w {
		r.compact()
		if err := r.fill(0); err != nil {
			return 0, err
		}
	}
	return r.buf[r.r], nil
}

// ReadByte reads one raw byte.
func (r *Reader) ReadByte() (byte, error) {
	for r.r == r.w {
		r.compact()
		if err := r.fill(0); err != nil {
			return 0, err
		}
	}
	c := r.buf[r.r]
	r.r++
	return c, nil
}

// ReadString reads up to and including delim, as bufio.Reader's does (tests
// written against a bufio.Reader keep working). On an error it returns the
// bytes read before it.
func (r *Reader) ReadString(delim byte) (string, error) {
	r.compact()
	scan := r.r
	for {
		if i := bytes.IndexByte(r.buf[scan:r.w], delim); i >= 0 {
			s := string(r.buf[r.r : scan+i+1])
			r.r = scan + i + 1
			return s, nil
		}
		scan = r.w
		if err := r.fill(0); err != nil {
			s := string(r.buf[r.r:r.w])
			r.r = r.w
			return s, err
		}
	}
}
