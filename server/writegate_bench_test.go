package server

import (
	"strconv"
	"testing"
)

// Benchmarks of the write paths issue 12 put behind the write gate (the
// snapshot invariant made structural): in-place string edits and stream
// changes. Run before and after a change to the gate with
//
//	go test -run '^$' -bench 'ExecuteGate' -benchmem -count 5 ./server/
//
// (BENCHMARKS.md, "Issue 12").

// benchGate runs setup once, then req(i) for every iteration, without I/O.
func benchGate(b *testing.B, setup [][]string, req func(i int) []byte) {
	c := benchClient(b)
	for _, a := range setup {
		args := make([][]byte, len(a))
		for i := range a {
			args[i] = []byte(a[i])
		}
		c.execute(args)
	}
	c.out = c.out[:0]
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		r := req(i)
		c.r, c.w = 0, copy(c.in, r)
		if err := c.processInput(); err != nil {
			b.Fatal(err)
		}
		c.out = c.out[:0]
	}
}

// gateReqs pre-encodes n requests built by f.
func gateReqs(n int, f func(i int) []string) func(i int) []byte {
	reqs := make([][]byte, n)
	for i := range reqs {
		reqs[i] = []byte(encode(f(i)...))
	}
	return func(i int) []byte { return reqs[i%n] }
}

func BenchmarkExecuteGateSetBit(b *testing.B) {
	big := string(make([]byte, 64<<10))
	benchGate(b, [][]string{{"SET", "bm", big}}, gateReqs(1024, func(i int) []string {
		return []string{"SETBIT", "bm", strconv.Itoa(i * 97 % (64 << 13)), strconv.Itoa(i & 1)}
	}))
}

func BenchmarkExecuteGateSetRange(b *testing.B) {
	big := string(make([]byte, 64<<10))
	benchGate(b, [][]string{{"SET", "sr", big}}, gateReqs(1024, func(i int) []string {
		return []string{"SETRANGE", "sr", strconv.Itoa(i * 61 % (60 << 10)), "abcdefgh"}
	}))
}

func BenchmarkExecuteGateBitField(b *testing.B) {
	big := string(make([]byte, 64<<10))
	benchGate(b, [][]string{{"SET", "bf", big}}, gateReqs(1024, func(i int) []string {
		return []string{"BITFIELD", "bf", "INCRBY", "u8", strconv.Itoa(i * 8 * 61 % (60 << 13)), "1"}
	}))
}

func BenchmarkExecuteGateAppend(b *testing.B) {
	benchGate(b, [][]string{{"SET", "ap", string(make([]byte, 32<<10))}}, gateReqs(1, func(int) []string {
		return []string{"APPEND", "ap", "x"}
	}))
}

func BenchmarkExecuteGatePFAdd(b *testing.B) {
	// A dense HyperLogLog (PFDEBUG TODENSE), updated in place.
	benchGate(b, [][]string{{"PFADD", "h", "a"}, {"PFDEBUG", "TODENSE", "h"}}, gateReqs(4096, func(i int) []string {
		return []string{"PFADD", "h", "e" + strconv.Itoa(i)}
	}))
}

func BenchmarkExecuteGateIncr(b *testing.B) {
	benchGate(b, [][]string{{"SET", "n", "0"}}, gateReqs(1, func(int) []string { return []string{"INCR", "n"} }))
}

// BenchmarkExecuteGateXReadGroupAck is XADD, XREADGROUP of that entry and
// XACK of it: a stream write and two consumer group changes per iteration.
func BenchmarkExecuteGateXReadGroupAck(b *testing.B) {
	benchGate(b, [][]string{{"XGROUP", "CREATE", "xs", "g", "$", "MKSTREAM"}}, func(i int) []byte {
		id := strconv.Itoa(i+1) + "-1"
		return []byte(encode("XADD", "xs", id, "f", "v") + encode("XREADGROUP", "GROUP", "g", "c", "COUNT", "1", "STREAMS", "xs", ">") + encode("XACK", "xs", "g", id))
	})
}
