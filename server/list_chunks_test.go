package server

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"
)

// TestBigListAgainstRedis drives a list past 8 MiB of nodes, where its
// quicklist nodes come from huge-page chunks (types.nodeMem), through
// every list command that reads, adds or removes elements, and compares
// the replies with redis-server's: pushes at both ends,
// ranges across chunk and node borders, pops by count, LSET, LINSERT,
// LREM and an LTRIM that leaves it sparse (copied out of its chunks), then
// growth into chunks again. Replies are compared one by one as go-redis
// reads them (values and errors).
func TestBigListAgainstRedis(t *testing.T) {
	redisAddr := startRedis(t)
	s := startServer(t, func(c *Config) { c.Save = "" })
	var cmds [][]any
	do := func(args ...string) {
		a := make([]any, len(args))
		for i, x := range args {
			a[i] = x
		}
		cmds = append(cmds, a)
	}
	val := func(i int) string { return strconv.Itoa(i) + ":" + strings.Repeat("v", 200+i%97) }
	push := func(cmd string, from, to int) {
		args := []string{cmd, "l"}
		for i := from; i < to; i++ {
			args = append(args, val(i))
			if len(args) == 502 || i == to-1 {
				do(args...)
				args = args[:2]
			}
		}
	}
	probe := func() {
		do("LLEN", "l")
		for _, r := range [][2]string{{"0", "9"}, {"-10", "-1"}, {"20000", "20040"}, {"12345", "12345"}, {"-30001", "-29950"}} {
			do("LRANGE", "l", r[0], r[1])
		}
		for _, i := range []string{"0", "-1", "777", "31337", "-20000"} {
			do("LINDEX", "l", i)
		}
	}
	push("LPUSH", 0, 25000) // about 6 MiB of elements, 9 MiB of nodes
	push("RPUSH", 25000, 40000)
	probe()
	do("LPOP", "l", "3000")
	do("RPOP", "l", "2500")
	do("LPOP", "l")
	do("RPOP", "l")
	do("LSET", "l", "6000", "set-6000")
	do("LSET", "l", "-1000", strings.Repeat("S", 9000)) // a node of its own
	do("LINSERT", "l", "BEFORE", val(30001), "ins-before")
	do("LINSERT", "l", "AFTER", val(15000), "ins-after")
	do("LREM", "l", "0", val(20001))
	do("LPOS", "l", val(33333))
	probe()
	do("LTRIM", "l", "5000", "8999") // keeps 4000 of 34000
	probe()
	push("RPUSH", 40000, 80000) // into chunks again
	do("LREM", "l", "-2", val(40002))
	for i := 0; i < 13; i++ { // back under 4 MiB (one RPOP of 39000 takes longer than the harness waits)
		do("RPOP", "l", "3000")
	}
	probe()
	do("LRANGE", "l", "0", "-1")
	// one reply per command (not the timing-based pipeline harness: under
	// -race a 10 MB reply takes longer than its pauses)
	replies := func(addr string) []string {
		rdb := redis.NewClient(&redis.Options{Addr: addr, Protocol: 2, ReadTimeout: -1})
		defer rdb.Close()
		ctx := context.Background()
		var out []string
		for i := 0; i < len(cmds); i += 64 {
			p := rdb.Pipeline()
			var rs []*redis.Cmd
			for _, c := range cmds[i:min(i+64, len(cmds))] {
				rs = append(rs, p.Do(ctx, c...))
			}
			_, _ = p.Exec(ctx)
			for _, r := range rs {
				v, err := r.Result()
				out = append(out, fmt.Sprintf("%v %v", v, err))
			}
		}
		return out
	}
	want, got := replies(redisAddr), replies(s.Addr())
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("command %d %.80v: got %.300s, want %.300s", i, cmds[i], got[i], want[i])
		}
	}
	final := want[len(want)-1] // the last LRANGE
	if !strings.Contains(final, "set-6000") || !strings.Contains(final, "ins-after") {
		t.Fatal("the script's edits are not in the final list")
	}
}
