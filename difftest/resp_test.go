package difftest

import (
	"errors"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/damselflydb/damselfly/resp"
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
	nc net.Conn
	rd *resp.Reader
}

func dial(addr string) (*conn, error) {
	nc, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		return nil, err
	}
	return &conn{nc: nc, rd: resp.NewReader(nc)}, nil
}

func (c *conn) close() { c.nc.Close() }

// encode builds a RESP array of bulk strings.
func encode(args []string) []byte { return resp.AppendCommandStrings(nil, args...) }

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
	_, err := c.rd.Peek()
	return err == nil
}

// errTimeout is a reply that did not come in time: the server hangs.
var errTimeout = errors.New("no reply within the deadline")

// read reads one whole reply, returning it parsed and as raw bytes. An
// attribute is kept with the value it annotates as its last element.
func (c *conn) read(d time.Duration) (value, []byte, error) {
	c.nc.SetReadDeadline(time.Now().Add(d))
	var raw []byte
	var v value
	for {
		rv, b, err := c.rd.ReadValueRaw()
		if err != nil {
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() || errors.Is(err, os.ErrDeadlineExceeded) {
				err = errTimeout
			}
			return value{}, nil, err
		}
		raw = append(raw, b...)
		if v.kind == '|' {
			v.elems = append(v.elems, toValue(rv))
			return v, raw, nil
		}
		v = toValue(rv)
		if v.kind != '|' {
			return v, raw, nil
		}
	}
}

// toValue copies a resp.Value (whose strings alias the reader's buffer).
func toValue(rv resp.Value) value {
	v := value{kind: rv.Type, str: string(rv.Str), null: rv.Int < 0 && (rv.Type == '$' || rv.Type == '*')}
	for _, e := range rv.Elems {
		v.elems = append(v.elems, toValue(e))
	}
	return v
}
