package server

import (
	"io"
	"log/slog"
	"strconv"
	"testing"
)

// benchClient is a client with no connection, for measuring the request
// path (parse, dispatch, command, reply) without I/O.
func benchClient(b *testing.B) *Client {
	s := New(Config{Shards: 1, DBNum: 16, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	c := &Client{srv: s, id: 1, fd: -1, in: make([]byte, readBufSize), p: newParser(), proto: 2, authed: true}
	c.p.authed = true
	return c
}

func benchRequests(b *testing.B, cmd string, n int) { benchRequestsWith(b, cmd, n, nil) }

// benchRequestsWith is benchRequests with prepare run on the client first.
func benchRequestsWith(b *testing.B, cmd string, n int, prepare func(*Client)) {
	c := benchClient(b)
	if prepare != nil {
		prepare(c)
	}
	reqs := make([][]byte, n)
	val := string(make([]byte, 256))
	for i := range reqs {
		k := "key:" + strconv.Itoa(i)
		if cmd == "SET" {
			reqs[i] = []byte(encode("SET", k, val))
		} else {
			c.execute([][]byte{[]byte("SET"), []byte(k), []byte(val)})
			reqs[i] = []byte(encode("GET", k))
		}
	}
	c.out = c.out[:0]
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		req := reqs[i%n]
		c.r, c.w = 0, copy(c.in, req)
		if err := c.processInput(); err != nil {
			b.Fatal(err)
		}
		c.out = c.out[:0]
	}
}

// Run with -benchmem: the request path should not allocate.
func BenchmarkExecuteSet(b *testing.B) { benchRequests(b, "SET", 10000) }
func BenchmarkExecuteGet(b *testing.B) { benchRequests(b, "GET", 10000) }

// BenchmarkExecuteXAdd is XADD s * f 0123456789 into one growing stream.
func BenchmarkExecuteXAdd(b *testing.B) {
	c := benchClient(b)
	req := []byte(encode("XADD", "s", "*", "f", "0123456789"))
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		c.r, c.w = 0, copy(c.in, req)
		if err := c.processInput(); err != nil {
			b.Fatal(err)
		}
		c.out = c.out[:0]
	}
}
