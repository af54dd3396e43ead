package difftest

import (
	"bufio"
	"errors"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"time"
)

// value is one RESP2/RESP3 reply: its kind (the type byte), its text for
// simple types and bulks, and its elements for aggregates (a map's keys and
// values alternate; an attribute is kept as a map before the value it
// annotates).
type value struct {
	kind  byte
	null  bool // RESP2's $-1 and *-1
	str   string
	elems []value
}

// isNull tells RESP2's null bulk/array and RESP3's null apart from the rest.
func (v value) isNull() bool { return v.kind == '_' || v.null }

// render prints a reply in the harness's one-line-per-RESP-line form.
func (v value) render() string {
	var sb strings.Builder
	v.renderTo(&sb, "")
	return strings.TrimSuffix(sb.String(), "\n")
}

func (v value) renderTo(sb *strings.Builder, indent string) {
	switch v.kind {
	case '$', '=', '!':
		if v.null {
			fmt.Fprintf(sb, "%s%c-1\n", indent, v.kind)
			return
		}
		fmt.Fprintf(sb, "%s%c%d %s\n", indent, v.kind, len(v.str), strconv.Quote(v.str))
	case '*', '~', '>', '%', '|':
		if v.null {
			fmt.Fprintf(sb, "%s%c-1\n", indent, v.kind)
			return
		}
		n := len(v.elems)
		if v.kind == '%' || v.kind == '|' {
			n /= 2
		}
		fmt.Fprintf(sb, "%s%c%d\n", indent, v.kind, n)
		for _, e := range v.elems {
			e.renderTo(sb, indent+"  ")
		}
	default:
		fmt.Fprintf(sb, "%s%c%s\n", indent, v.kind, v.str)
	}
}

// conn is one client connection speaking raw RESP, keeping each reply's
// exact bytes.
type conn struct {
	nc  net.Conn
	rd  *bufio.Reader
	raw []byte // the bytes of the reply being read
}

func dial(addr string) (*conn, error) {
	nc, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		return nil, err
	}
	return &conn{nc: nc, rd: bufio.NewReaderSize(nc, 64<<10)}, nil
}

func (c *conn) close() { c.nc.Close() }

// encode builds a RESP array of bulk strings.
func encode(args []string) []byte {
	b := make([]byte, 0, 64)
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

func (c *conn) send(args []string) error {
	c.nc.SetWriteDeadline(time.Now().Add(5 * time.Second))
	_, err := c.nc.Write(encode(args))
	return err
}

// ready tells whether a reply starts arriving within d.
func (c *conn) ready(d time.Duration) bool { // d > 0: Go does not read past a deadline
	if c.rd.Buffered() > 0 {
		return true
	}
	c.nc.SetReadDeadline(time.Now().Add(d))
	_, err := c.rd.Peek(1)
	return err == nil
}

// errTimeout is a reply that did not come in time: the server hangs.
var errTimeout = errors.New("no reply within the deadline")

// read reads one whole reply, returning it parsed and as raw bytes.
func (c *conn) read(d time.Duration) (value, []byte, error) {
	c.nc.SetReadDeadline(time.Now().Add(d))
	c.raw = c.raw[:0]
	v, err := c.readValue()
	if err != nil {
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() || errors.Is(err, os.ErrDeadlineExceeded) {
			err = errTimeout
		}
		return value{}, nil, err
	}
	return v, append([]byte(nil), c.raw...), nil
}

func (c *conn) line() (string, error) {
	s, err := c.rd.ReadString('\n')
	c.raw = append(c.raw, s...)
	if err != nil {
		return "", err
	}
	if !strings.HasSuffix(s, "\r\n") {
		return "", fmt.Errorf("line without CRLF: %q", s)
	}
	return s[:len(s)-2], nil
}

func (c *conn) readValue() (value, error) {
	l, err := c.line()
	if err != nil {
		return value{}, err
	}
	if l == "" {
		return value{}, errors.New("empty reply line")
	}
	v := value{kind: l[0], str: l[1:]}
	switch v.kind {
	case '+', '-', ':', '_', '#', ',', '(':
		return v, nil
	case '$', '=', '!':
		n, err := strconv.Atoi(v.str)
		if err != nil {
			return v, fmt.Errorf("bad bulk length %q", l)
		}
		if n < 0 {
			v.null, v.str = true, ""
			return v, nil
		}
		buf := make([]byte, n+2)
		if _, err := ioReadFull(c, buf); err != nil {
			return v, err
		}
		c.raw = append(c.raw, buf...)
		v.str = string(buf[:n])
		return v, nil
	case '*', '~', '>', '%', '|':
		n, err := strconv.Atoi(v.str)
		if err != nil {
			return v, fmt.Errorf("bad aggregate length %q", l)
		}
		v.str = ""
		if n < 0 {
			v.null = true
			return v, nil
		}
		if v.kind == '%' || v.kind == '|' {
			n *= 2
		}
		v.elems = make([]value, 0, n)
		for i := 0; i < n; i++ {
			e, err := c.readValue()
			if err != nil {
				return v, err
			}
			v.elems = append(v.elems, e)
		}
		if v.kind == '|' { // an attribute: the value it annotates follows
			e, err := c.readValue()
			if err != nil {
				return v, err
			}
			v.elems = append(v.elems, e)
		}
		return v, nil
	}
	return v, fmt.Errorf("unknown reply type %q", l)
}

func ioReadFull(c *conn, buf []byte) (int, error) {
	n := 0
	for n < len(buf) {
		m, err := c.rd.Read(buf[n:])
		n += m
		if err != nil {
			return n, err
		}
	}
	return n, nil
}
