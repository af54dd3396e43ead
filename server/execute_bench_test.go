package server

import (
	"io"
	"log/slog"
	"strconv"
	"syscall"
	"testing"
)

// benchClient is a client with no connection, for measuring the request
// path (parse, dispatch, command, reply) without I/O.
func benchClient(b *testing.B) *Client {
	s := New(Config{Shards: 1, DBNum: 16, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	c := &Client{srv: s, id: 1, fd: -1, in: make([]byte, readBufSize), p: newParser(), proto: 2, authed: true}
	c.p.Authed = true
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
	cpu0 := cpuTime()
	for i := 0; i < b.N; i++ {
		req := reqs[i%n]
		c.r, c.w = 0, copy(c.in, req)
		if err := c.processInput(); err != nil {
			b.Fatal(err)
		}
		c.out = c.out[:0]
	}
	b.ReportMetric(float64(cpuTime()-cpu0)/float64(b.N), "cpu-ns/op")
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

// benchPipelined runs batches of 16 pipelined requests (one processInput
// each, as an event loop does with one read) over keys keys in random
// order: with 1M keys of 256 bytes the keyspace is far bigger than the CPU
// caches, as in redis-benchmark -P 16 -r 1000000 (issue 20).
func benchPipelined(b *testing.B, cmd string, keys int) {
	c := benchClient(b)
	val := string(make([]byte, 256))
	rnd := uint64(1)
	next := func() string {
		rnd ^= rnd << 13
		rnd ^= rnd >> 7
		rnd ^= rnd << 17
		return "key:" + strconv.Itoa(int(rnd%uint64(keys)))
	}
	for i := 0; i < keys; i++ {
		c.execute([][]byte{[]byte("SET"), []byte("key:" + strconv.Itoa(i)), []byte(val)})
		c.out = c.out[:0]
	}
	const depth, batches = 16, 4096
	reqs := make([][]byte, batches)
	for i := range reqs {
		var buf []byte
		for j := 0; j < depth; j++ {
			switch cmd {
			case "SET":
				buf = append(buf, encode("SET", next(), val)...)
			case "INCR":
				buf = append(buf, encode("INCR", "n"+next())...)
			case "LPUSH": // as redis-benchmark: one list
				buf = append(buf, encode("LPUSH", "mylist", val)...)
			case "HSET": // as redis-benchmark: one hash, random fields
				buf = append(buf, encode("HSET", "myhash", "element:"+next(), val)...)
			case "SADD": // as redis-benchmark: one set, random members
				buf = append(buf, encode("SADD", "myset", "element:"+next())...)
			default:
				buf = append(buf, encode(cmd, next())...)
			}
		}
		reqs[i] = buf
	}
	b.ReportAllocs()
	b.ResetTimer()
	cpu0 := cpuTime()
	for i := 0; i < b.N; i += depth {
		req := reqs[(i/depth)%batches]
		c.r, c.w = 0, copy(c.in, req)
		if err := c.processInput(); err != nil {
			b.Fatal(err)
		}
		c.out = c.out[:0]
	}
	// On a shared machine wall time counts other programs' turns too.
	b.ReportMetric(float64(cpuTime()-cpu0)/float64(b.N), "cpu-ns/op")
}

// cpuTime is the process's user+system CPU time in ns.
func cpuTime() int64 {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return ru.Utime.Nano() + ru.Stime.Nano()
}

func BenchmarkExecutePipelinedGet(b *testing.B)  { benchPipelined(b, "GET", 1<<20) }
func BenchmarkExecutePipelinedSet(b *testing.B)  { benchPipelined(b, "SET", 1<<20) }
func BenchmarkExecutePipelinedIncr(b *testing.B) { benchPipelined(b, "INCR", 1<<20) }

// As redis-benchmark -t lpush,hset,sadd -r 100000: one list, one hash of
// up to 100k fields, one set of up to 100k members.
func BenchmarkExecutePipelinedLPush(b *testing.B) { benchPipelined(b, "LPUSH", 100000) }
func BenchmarkExecutePipelinedHSet(b *testing.B)  { benchPipelined(b, "HSET", 100000) }
func BenchmarkExecutePipelinedSAdd(b *testing.B)  { benchPipelined(b, "SADD", 100000) }

// BenchmarkExecuteBigReply is LRANGE of a 40000 × 256 B list (a 10 MB
// reply), the output buffer dropped after each reply as a loop does after
// writing it: the cost of building a big reply from nothing.
func BenchmarkExecuteBigReply(b *testing.B) {
	c := benchClient(b)
	val := []byte(string(make([]byte, 256)))
	for i := 0; i < 40000; i++ {
		c.execute([][]byte{[]byte("RPUSH"), []byte("biglist"), val})
	}
	req := []byte(encode("LRANGE", "biglist", "0", "-1"))
	c.out = c.out[:0]
	b.ReportAllocs()
	b.ResetTimer()
	cpu0 := cpuTime()
	for i := 0; i < b.N; i++ {
		c.r, c.w = 0, copy(c.in, req)
		if err := c.processInput(); err != nil {
			b.Fatal(err)
		}
		if len(c.out) < 40000*256 {
			b.Fatalf("reply of %d bytes", len(c.out))
		}
		c.resetOut()
	}
	b.ReportMetric(float64(cpuTime()-cpu0)/float64(b.N), "cpu-ns/op")
}
