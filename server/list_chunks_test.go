package server

import (
	"bytes"
	"strconv"
	"strings"
	"testing"
)

// TestBigListAgainstRedis drives a list past 8 MiB of nodes, where its
// quicklist nodes come from huge-page chunks (types.nodeMem), through
// every list command that reads, adds or removes elements, and compares
// the replies with redis-server's byte for byte: pushes at both ends,
// ranges across chunk and node borders, pops by count, LSET, LINSERT,
// LREM and an LTRIM that leaves it sparse (copied out of its chunks), then
// growth into chunks again.
func TestBigListAgainstRedis(t *testing.T) {
	redisAddr := startRedis(t)
	s := startServer(t, func(c *Config) { c.Save = "" })
	var b strings.Builder
	val := func(i int) string { return strconv.Itoa(i) + ":" + strings.Repeat("v", 200+i%97) }
	push := func(cmd string, from, to int) {
		args := []string{cmd, "l"}
		for i := from; i < to; i++ {
			args = append(args, val(i))
			if len(args) == 502 || i == to-1 {
				b.WriteString(encode(args...))
				args = args[:2]
			}
		}
	}
	probe := func() {
		b.WriteString(encode("LLEN", "l"))
		for _, r := range [][2]string{{"0", "9"}, {"-10", "-1"}, {"20000", "20040"}, {"12345", "12345"}, {"-30001", "-29950"}} {
			b.WriteString(encode("LRANGE", "l", r[0], r[1]))
		}
		for _, i := range []string{"0", "-1", "777", "31337", "-20000"} {
			b.WriteString(encode("LINDEX", "l", i))
		}
	}
	push("LPUSH", 0, 25000) // about 6 MiB of elements, 9 MiB of nodes
	push("RPUSH", 25000, 40000)
	probe()
	b.WriteString(encode("LPOP", "l", "3000"))
	b.WriteString(encode("RPOP", "l", "2500"))
	b.WriteString(encode("LPOP", "l"))
	b.WriteString(encode("RPOP", "l"))
	b.WriteString(encode("LSET", "l", "6000", "set-6000"))
	b.WriteString(encode("LSET", "l", "-1000", strings.Repeat("S", 9000))) // a node of its own
	b.WriteString(encode("LINSERT", "l", "BEFORE", val(30001), "ins-before"))
	b.WriteString(encode("LINSERT", "l", "AFTER", val(15000), "ins-after"))
	b.WriteString(encode("LREM", "l", "0", val(20001)))
	b.WriteString(encode("LPOS", "l", val(33333)))
	probe()
	b.WriteString(encode("LTRIM", "l", "5000", "8999")) // keeps 4000 of 34000
	probe()
	push("RPUSH", 40000, 80000) // into chunks again
	b.WriteString(encode("LREM", "l", "-2", val(40002)))
	for i := 0; i < 13; i++ { // back under 4 MiB (one RPOP of 39000 takes longer than the harness waits)
		b.WriteString(encode("RPOP", "l", "3000"))
	}
	probe()
	b.WriteString(encode("LRANGE", "l", "0", "-1"))
	want := sameRepliesAsRedis(t, redisAddr, s.Addr(), b.String(), 1<<20)
	final := want[bytes.LastIndex(want, []byte("\r\n*")):] // the last LRANGE
	if !bytes.Contains(final, []byte("set-6000")) || !bytes.Contains(final, []byte("ins-after")) {
		t.Fatal("the script's edits are not in the final list")
	}
}
