package replication

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"strconv"
)

// appendCommand encodes args as a RESP array of bulk strings, the form in
// which commands travel in the replication stream.
func appendCommand(b []byte, args ...[]byte) []byte {
	b = append(b, '*')
	b = strconv.AppendInt(b, int64(len(args)), 10)
	b = append(b, '\r', '\n')
	for _, a := range args {
		b = append(b, '$')
		b = strconv.AppendInt(b, int64(len(a)), 10)
		b = append(b, '\r', '\n')
		b = append(b, a...)
		b = append(b, '\r', '\n')
	}
	return b
}

func appendCommandStrings(b []byte, args ...string) []byte {
	bs := make([][]byte, len(args))
	for i, a := range args {
		bs[i] = []byte(a)
	}
	return appendCommand(b, bs...)
}

// Limits that protect a reader from a peer announcing absurd sizes.
const (
	maxArgs    = 1 << 20
	maxBulkLen = 512 << 20
	maxLineLen = 64 << 10
)

var errProtocol = errors.New("replication: protocol error")

// cmdReader reads RESP commands (arrays of bulk strings, or inline lines)
// from a stream and counts the bytes consumed, which is what replication
// offsets are made of.
type cmdReader struct {
	r   *bufio.Reader
	n   int64  // bytes consumed so far
	rec bool   // keep the raw bytes of what is read in raw
	raw []byte // raw bytes read since the last reset (when rec)
}

func newCmdReader(r io.Reader) *cmdReader {
	return &cmdReader{r: bufio.NewReaderSize(r, 64<<10)}
}

// line reads one CRLF- (or LF-) terminated line without its terminator.
func (cr *cmdReader) line() ([]byte, error) {
	var buf []byte
	for {
		frag, err := cr.r.ReadSlice('\n')
		cr.n += int64(len(frag))
		if cr.rec {
			cr.raw = append(cr.raw, frag...)
		}
		if err == nil {
			buf = append(buf, frag...)
			break
		}
		if err != bufio.ErrBufferFull {
			return nil, err
		}
		buf = append(buf, frag...)
		if len(buf) > maxLineLen {
			return nil, fmt.Errorf("%w: line too long", errProtocol)
		}
	}
	buf = buf[:len(buf)-1]
	if len(buf) > 0 && buf[len(buf)-1] == '\r' {
		buf = buf[:len(buf)-1]
	}
	return buf, nil
}

// next reads one command. An empty line gives a nil command (a keepalive
// newline, which still counts towards the offset).
func (cr *cmdReader) next() ([][]byte, error) {
	ln, err := cr.line()
	if err != nil {
		return nil, err
	}
	if len(ln) == 0 {
		return nil, nil
	}
	if ln[0] != '*' {
		return splitInline(ln), nil
	}
	n, err := strconv.Atoi(string(ln[1:]))
	if err != nil || n > maxArgs {
		return nil, fmt.Errorf("%w: bad array header %q", errProtocol, ln)
	}
	if n <= 0 {
		return nil, nil
	}
	args := make([][]byte, n)
	for i := range args {
		h, err := cr.line()
		if err != nil {
			return nil, err
		}
		if len(h) < 2 || h[0] != '$' {
			return nil, fmt.Errorf("%w: expected bulk, got %q", errProtocol, h)
		}
		l, err := strconv.Atoi(string(h[1:]))
		if err != nil || l < 0 || l > maxBulkLen {
			return nil, fmt.Errorf("%w: bad bulk length %q", errProtocol, h)
		}
		a := make([]byte, l+2)
		if _, err := io.ReadFull(cr.r, a); err != nil {
			return nil, err
		}
		cr.n += int64(l + 2)
		if cr.rec {
			cr.raw = append(cr.raw, a...)
		}
		args[i] = a[:l]
	}
	return args, nil
}

func splitInline(ln []byte) [][]byte {
	var out [][]byte
	start := -1
	for i, ch := range ln {
		if ch == ' ' || ch == '\t' {
			if start >= 0 {
				out = append(out, ln[start:i])
				start = -1
			}
		} else if start < 0 {
			start = i
		}
	}
	if start >= 0 {
		out = append(out, ln[start:])
	}
	return out
}
