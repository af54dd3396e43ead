package resp

import (
	"bytes"
	"errors"
	"strconv"
)

// Limits from Redis 7 (networking.c).
const (
	MaxInline          = 64 << 10 // bytes of an inline request or a count line
	MaxMultibulk       = 1<<31 - 1
	UnauthMaxMultibulk = 10
	UnauthMaxBulk      = 16 << 10
	DefaultMaxBulkLen  = 512 << 20 // proto-max-bulk-len
)

// ProtocolError is answered with "-ERR Protocol error: ..." and closes the
// connection, as Redis does.
type ProtocolError string

func (e ProtocolError) Error() string { return "Protocol error: " + string(e) }

var (
	errTooBigMbulk = ProtocolError("too big mbulk count string")
	errMbulkLen    = ProtocolError("invalid multibulk length")
	errTooBigBulk  = ProtocolError("too big bulk count string")
	errBulkLen     = ProtocolError("invalid bulk length")
	// Before AUTH (when a password is set) Redis names the limit it applied.
	errUnauthMbulkLen = ProtocolError("unauthenticated multibulk length")
	errUnauthBulkLen  = ProtocolError("unauthenticated bulk length")
	errTooBigInline   = ProtocolError("too big inline request")
	errUnbalanced     = ProtocolError("unbalanced quotes in request")
	ErrNeedMore       = errors.New("need more data")
	ErrEmptyMultibulk = errors.New("empty multibulk")
)

// RequestReader reads one request at a time from a connection's input
// buffer. It is resumable: a partly received command is not rescanned from its start
// when more bytes arrive, so a request with a million arguments costs linear
// time. Arguments are recorded as offsets, so the caller may move the
// unconsumed bytes (compact or grow its buffer) between calls.
type RequestReader struct {
	started   bool
	remaining int   // arguments still to read
	bulk      int   // length of the bulk being read, -1 before its header
	pos       int   // next byte to look at, relative to the command start
	marks     []int // start,end offsets of arguments read so far
	args      [][]byte
	inline    [][]byte // owned copies for inline requests

	// Authed relaxes the unauthenticated limits (UnauthMaxMultibulk,
	// UnauthMaxBulk); a server sets it once the connection has
	// authenticated, or when no password is required.
	Authed bool
	// MaxBulk is proto-max-bulk-len: the longest bulk argument accepted.
	MaxBulk int
}

func NewRequestReader() *RequestReader {
	return &RequestReader{bulk: -1, MaxBulk: DefaultMaxBulkLen}
}

// Need is the number of bytes (counted from the command start) that must be
// buffered before the next call can make progress; 0 when unknown.
func (p *RequestReader) Need() int {
	if p.started && p.bulk >= 0 {
		return p.pos + p.bulk + 2
	}
	return 0
}

// Next parses one command from buf (the unconsumed input, starting at a
// command start or where the previous ErrNeedMore call left it, after the
// caller appended bytes). It returns the arguments (views into buf, or
// copies owned by the reader for inline requests, valid until the next
// call) and the number of bytes consumed. ErrEmptyMultibulk ("*0", "*-1" or
// a blank inline line) consumes n bytes and yields no command. ErrNeedMore
// means buf holds no complete command yet; a ProtocolError is fatal to the
// connection.
func (p *RequestReader) Next(buf []byte) ([][]byte, int, error) {
	if !p.started {
		if len(buf) == 0 {
			return nil, 0, ErrNeedMore
		}
		if buf[0] != '*' {
			return p.nextInline(buf)
		}
		nl := bytes.IndexByte(buf, '\n')
		if nl < 0 {
			if len(buf) > MaxInline {
				return nil, 0, errTooBigMbulk
			}
			return nil, 0, ErrNeedMore
		}
		line := buf[1:nl]
		if len(line) > 0 && line[len(line)-1] == '\r' {
			line = line[:len(line)-1]
		}
		n, ok := ParseInt(line)
		if !ok || n > MaxMultibulk {
			return nil, 0, errMbulkLen
		}
		if !p.Authed && n > UnauthMaxMultibulk {
			return nil, 0, errUnauthMbulkLen
		}
		if n <= 0 {
			return nil, nl + 1, ErrEmptyMultibulk
		}
		p.started = true
		p.remaining = int(n)
		p.bulk = -1
		p.pos = nl + 1
		p.marks = p.marks[:0]
	}
	for p.remaining > 0 {
		if p.bulk < 0 {
			rest := buf[p.pos:]
			nl := bytes.IndexByte(rest, '\n')
			if nl < 0 {
				if len(rest) > MaxInline {
					return nil, 0, errTooBigBulk
				}
				return nil, 0, ErrNeedMore
			}
			if rest[0] != '$' {
				return nil, 0, ProtocolError("expected '$', got '" + string(rest[0]) + "'")
			}
			line := rest[1:nl]
			if len(line) > 0 && line[len(line)-1] == '\r' {
				line = line[:len(line)-1]
			}
			n, ok := ParseInt(line)
			if !ok || n < 0 || n > int64(p.MaxBulk) {
				return nil, 0, errBulkLen
			}
			if !p.Authed && n > UnauthMaxBulk {
				return nil, 0, errUnauthBulkLen
			}
			p.bulk = int(n)
			p.pos += nl + 1
		}
		if len(buf)-p.pos < p.bulk+2 {
			return nil, 0, ErrNeedMore
		}
		p.marks = append(p.marks, p.pos, p.pos+p.bulk)
		p.pos += p.bulk + 2 // like Redis, the two bytes after a bulk are skipped unchecked
		p.bulk = -1
		p.remaining--
	}
	p.args = p.args[:0]
	for i := 0; i < len(p.marks); i += 2 {
		p.args = append(p.args, buf[p.marks[i]:p.marks[i+1]:p.marks[i+1]])
	}
	n := p.pos
	p.started = false
	p.pos = 0
	return p.args, n, nil
}

// nextInline parses a telnet-style request line, with Redis's quoting rules.
func (p *RequestReader) nextInline(buf []byte) ([][]byte, int, error) {
	nl := bytes.IndexByte(buf, '\n')
	if nl < 0 {
		if len(buf) > MaxInline {
			return nil, 0, errTooBigInline
		}
		return nil, 0, ErrNeedMore
	}
	line := buf[:nl]
	if len(line) > 0 && line[len(line)-1] == '\r' {
		line = line[:len(line)-1]
	}
	args, ok := SplitArgs(line, p.inline[:0])
	if !ok {
		return nil, 0, errUnbalanced
	}
	p.inline = args
	if len(args) == 0 {
		return nil, nl + 1, ErrEmptyMultibulk
	}
	return args, nl + 1, nil
}

// SplitArgs splits an inline request like Redis's sdssplitargs: spaces
// separate arguments; "double quotes" allow \n \r \t \b \a \\ \" and \xHH
// escapes; 'single quotes' allow \'; a closing quote must be followed by a
// space or the end.
func SplitArgs(line []byte, out [][]byte) ([][]byte, bool) {
	i := 0
	for {
		for i < len(line) && IsSpace(line[i]) {
			i++
		}
		if i >= len(line) {
			return out, true
		}
		var cur []byte
		inDq, inSq := false, false
		done := false
		for !done {
			if inDq {
				if i >= len(line) {
					return nil, false
				}
				c := line[i]
				if c == '\\' && i+3 < len(line) && line[i+1] == 'x' && isHex(line[i+2]) && isHex(line[i+3]) {
					v, _ := strconv.ParseUint(string(line[i+2:i+4]), 16, 8)
					cur = append(cur, byte(v))
					i += 3
				} else if c == '\\' && i+1 < len(line) {
					i++
					switch line[i] {
					case 'n':
						cur = append(cur, '\n')
					case 'r':
						cur = append(cur, '\r')
					case 't':
						cur = append(cur, '\t')
					case 'b':
						cur = append(cur, '\b')
					case 'a':
						cur = append(cur, '\a')
					default:
						cur = append(cur, line[i])
					}
				} else if c == '"' {
					if i+1 < len(line) && !IsSpace(line[i+1]) {
						return nil, false
					}
					done = true
				} else {
					cur = append(cur, c)
				}
			} else if inSq {
				if i >= len(line) {
					return nil, false
				}
				c := line[i]
				if c == '\\' && i+1 < len(line) && line[i+1] == '\'' {
					i++
					cur = append(cur, '\'')
				} else if c == '\'' {
					if i+1 < len(line) && !IsSpace(line[i+1]) {
						return nil, false
					}
					done = true
				} else {
					cur = append(cur, c)
				}
			} else {
				if i >= len(line) {
					break
				}
				switch c := line[i]; c {
				case ' ', '\n', '\r', '\t', 0:
					done = true
				case '"':
					inDq = true
				case '\'':
					inSq = true
				default:
					cur = append(cur, c)
				}
			}
			if i < len(line) {
				i++
			}
		}
		if cur == nil {
			cur = []byte{}
		}
		out = append(out, cur)
	}
}

func IsSpace(c byte) bool {
	return c == ' ' || c == '\n' || c == '\r' || c == '\t' || c == '\v' || c == '\f'
}

func isHex(c byte) bool {
	return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F')
}

// ParseInt parses a decimal int64 the way Redis's string2ll does: optional
// '-', no '+', no leading zeros, no spaces.
func ParseInt(b []byte) (int64, bool) {
	if len(b) == 0 || len(b) > 20 {
		return 0, false
	}
	if len(b) == 1 && b[0] == '0' {
		return 0, true
	}
	neg := false
	i := 0
	if b[0] == '-' {
		neg = true
		i = 1
		if len(b) == 1 {
			return 0, false
		}
	}
	if b[i] < '1' || b[i] > '9' {
		return 0, false
	}
	var v uint64
	for ; i < len(b); i++ {
		c := b[i]
		if c < '0' || c > '9' {
			return 0, false
		}
		if v > (1<<64-1)/10 {
			return 0, false
		}
		v = v*10 + uint64(c-'0')
		if v < uint64(c-'0') {
			return 0, false
		}
	}
	if neg {
		if v > 1<<63 {
			return 0, false
		}
		return -int64(v), true
	}
	if v > 1<<63-1 {
		return 0, false
	}
	return int64(v), true
}
