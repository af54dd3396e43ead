package server

import (
	"math"
	"strconv"

	"github.com/tidwall/redcon"
)

// Replies are appended to the client's output buffer; the connection loop
// writes the buffer once per batch of requests. RESP2 forms come from
// redcon's Append helpers; RESP3-only types are written here.

func (c *Client) ok()                 { c.out = append(c.out, "+OK\r\n"...) }
func (c *Client) simple(s string)     { c.out = redcon.AppendString(c.out, s) }
func (c *Client) err(s string)        { c.noteError(s); c.out = redcon.AppendError(c.out, s) }
func (c *Client) int(n int64)         { c.out = redcon.AppendInt(c.out, n) }
func (c *Client) bulk(b []byte)       { c.reserve(len(b) + 32); c.out = redcon.AppendBulk(c.out, b) }
func (c *Client) bulkString(s string) { c.out = redcon.AppendBulkString(c.out, s) }
func (c *Client) bulkInt(n int64)     { c.out = redcon.AppendBulkInt(c.out, n) }
func (c *Client) array(n int)         { c.out = redcon.AppendArray(c.out, n) }
func (c *Client) raw(b []byte)        { c.reserve(len(b)); c.out = append(c.out, b...) }
func (c *Client) errWrongType()       { c.noteError("WRONGTYPE "); c.out = append(c.out, wrongTypeReply...) }
func (c *Client) errSyntax()          { c.noteError("ERR "); c.out = append(c.out, "-ERR syntax error\r\n"...) }
func (c *Client) errNotInteger()      { c.noteError("ERR "); c.out = append(c.out, notIntegerReply...) }
func (c *Client) errNotFloat() {
	c.noteError("ERR ")
	c.out = append(c.out, "-ERR value is not a valid float\r\n"...)
}

const (
	wrongTypeReply  = "-WRONGTYPE Operation against a key holding the wrong kind of value\r\n"
	notIntegerReply = "-ERR value is not an integer or out of range\r\n"
)

// null is RESP2's null bulk or RESP3's null.
func (c *Client) null() {
	if c.proto == 3 {
		c.out = append(c.out, "_\r\n"...)
	} else {
		c.out = append(c.out, "$-1\r\n"...)
	}
}

// nullArray is RESP2's null multi-bulk or RESP3's null.
func (c *Client) nullArray() {
	if c.proto == 3 {
		c.out = append(c.out, "_\r\n"...)
	} else {
		c.out = append(c.out, "*-1\r\n"...)
	}
}

// mapHeader starts a map of n pairs (a flat array of 2n in RESP2).
func (c *Client) mapHeader(n int) {
	if c.proto == 3 {
		c.out = append(c.out, '%')
		c.out = strconv.AppendInt(c.out, int64(n), 10)
		c.out = append(c.out, '\r', '\n')
	} else {
		c.array(2 * n)
	}
}

// setHeader starts a set of n elements (an array in RESP2).
func (c *Client) setHeader(n int) {
	if c.proto == 3 {
		c.out = append(c.out, '~')
		c.out = strconv.AppendInt(c.out, int64(n), 10)
		c.out = append(c.out, '\r', '\n')
	} else {
		c.array(n)
	}
}

// pushHeader starts an out-of-band push of n elements (an array in RESP2).
func (c *Client) pushHeader(n int) {
	if c.proto == 3 {
		c.out = append(c.out, '>')
		c.out = strconv.AppendInt(c.out, int64(n), 10)
		c.out = append(c.out, '\r', '\n')
	} else {
		c.array(n)
	}
}

// double replies a float: a bulk string in RESP2, a double in RESP3.
func (c *Client) double(f float64) {
	if c.proto == 3 {
		c.out = append(c.out, ',')
		c.out = appendDouble(c.out, f)
		c.out = append(c.out, '\r', '\n')
		return
	}
	var tmp [32]byte
	c.bulk(appendDouble(tmp[:0], f))
}

// boolean replies a RESP3 boolean, or 1/0 in RESP2.
func (c *Client) boolean(b bool) {
	if c.proto == 3 {
		if b {
			c.out = append(c.out, "#t\r\n"...)
		} else {
			c.out = append(c.out, "#f\r\n"...)
		}
		return
	}
	if b {
		c.int(1)
	} else {
		c.int(0)
	}
}

// verbatim replies a RESP3 verbatim string (txt), or a bulk in RESP2.
func (c *Client) verbatim(s string) {
	if c.proto == 3 {
		c.out = append(c.out, '=')
		c.out = strconv.AppendInt(c.out, int64(len(s)+4), 10)
		c.out = append(c.out, "\r\ntxt:"...)
		c.out = append(c.out, s...)
		c.out = append(c.out, '\r', '\n')
		return
	}
	c.bulkString(s)
}

// appendDouble formats f as Redis does for replies: integers without a
// fraction, inf/-inf, otherwise the shortest representation that reads back
// exactly (%.17g in Redis, equivalent round-trip here).
func appendDouble(b []byte, f float64) []byte {
	switch {
	case math.IsInf(f, 1):
		return append(b, "inf"...)
	case math.IsInf(f, -1):
		return append(b, "-inf"...)
	case math.IsNaN(f):
		return append(b, "nan"...)
	}
	return strconv.AppendFloat(b, f, 'g', 17, 64)
}

// appendHumanFloat formats like Redis's INCRBYFLOAT: plain decimal, no
// exponent, no trailing zeros (Redis computes in long double; the shortest
// float64 form reads the same for the values clients send).
func appendHumanFloat(b []byte, f float64) []byte {
	return strconv.AppendFloat(b, f, 'f', -1, 64)
}
