package server

import (
	"context"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

// clientRbs is the input buffer size CLIENT LIST reports for the client
// named name.
func clientRbs(t *testing.T, s *Server, name string) int {
	t.Helper()
	list, err := newClient(t, s).ClientList(context.Background()).Result()
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`name=` + name + ` .* rbs=(\d+) `).FindStringSubmatch(list)
	if m == nil {
		t.Fatalf("no client %s in CLIENT LIST:\n%s", name, list)
	}
	n, _ := strconv.Atoi(m[1])
	return n
}

// waitRbs polls until the named client's input buffer is want bytes.
func waitRbs(t *testing.T, s *Server, name string, ok func(int) bool) int {
	t.Helper()
	var n int
	for i := 0; i < 200; i++ {
		if n = clientRbs(t, s, name); ok(n) {
			return n
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("client %s: rbs stayed %d", name, n)
	return n
}

// TestBigBulkBufferExact: once a big bulk's header has arrived, the input
// buffer is allocated once at exactly the request's size (no doubling, no
// slack), the value arrives intact, and the buffer is kept for the next
// big request until a small one comes, each step charged to its budget.
func TestBigBulkBufferExact(t *testing.T) {
	s := startServer(t)
	r := dialRaw(t, s)
	r.do("CLIENT", "SETNAME", "big")
	if got := r.reply(); got[0] != "+OK" {
		t.Fatalf("SETNAME: %q", got)
	}
	const size = 5_000_000
	head := "*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$" + strconv.Itoa(size) + "\r\n"
	val := strings.Repeat("0123456789", size/10)
	r.send(head + val[:100_000])
	need := len(head) + size + 2
	waitRbs(t, s, "big", func(n int) bool { return n == need })
	if got := s.inAhead.Load(); got != int64(need) {
		t.Fatalf("inAhead = %d during the request, want %d", got, need)
	}
	r.send(val[100_000:] + "\r\n")
	if got := r.reply(); got[0] != "+OK" {
		t.Fatalf("SET: %q", got)
	}
	if got, err := newClient(t, s).Get(context.Background(), "k").Result(); err != nil || got != val {
		t.Fatalf("GET k: %d bytes, err %v; want the %d bytes sent", len(got), err, size)
	}
	// Kept for the next big request, charged to the retention budget.
	if n := clientRbs(t, s, "big"); n != need {
		t.Fatalf("rbs = %d after the request, want %d (kept)", n, need)
	}
	if a, h := s.inAhead.Load(), s.inRetained.Load(); a != 0 || h != int64(need) {
		t.Fatalf("after the request: inAhead = %d, inRetained = %d; want 0, %d", a, h, need)
	}
	// A small request gives it back.
	r.do("PING")
	if got := r.reply(); got[0] != "+PONG" {
		t.Fatalf("PING: %q", got)
	}
	waitRbs(t, s, "big", func(n int) bool { return n == readBufSize })
	if a, h := s.inAhead.Load(), s.inRetained.Load(); a != 0 || h != 0 {
		t.Fatalf("after a small request: inAhead = %d, inRetained = %d; want 0, 0", a, h)
	}
}

// TestBigBulkBufferBudget: an announced bulk that does not fit the
// server-wide budget for exact buffers grows the buffer by doubling, never
// past twice what was received; closing the connection frees its charge.
func TestBigBulkBufferBudget(t *testing.T) {
	s := startServer(t)
	hog := dialRaw(t, s)
	hog.do("CLIENT", "SETNAME", "hog")
	hog.reply()
	head := "*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$" + strconv.Itoa(aheadInBudget-1000) + "\r\n"
	hog.send(head + strings.Repeat("x", 40_000))
	waitRbs(t, s, "hog", func(n int) bool { return n > 1<<20 }) // exact: the whole budget
	r := dialRaw(t, s)
	r.do("CLIENT", "SETNAME", "late")
	r.reply()
	r.send("*3\r\n$3\r\nSET\r\n$1\r\nj\r\n$10000000\r\n" + strings.Repeat("y", 100_000))
	time.Sleep(100 * time.Millisecond)
	if n := clientRbs(t, s, "late"); n > 2*(100_000+64) {
		t.Fatalf("rbs = %d with the budget spent: more than twice what was received", n)
	}
	hog.nc.Close()
	for i := 0; s.inAhead.Load() != 0; i++ {
		if i == 200 {
			t.Fatalf("inAhead = %d after the client closed, want 0", s.inAhead.Load())
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// BenchmarkBigSet sends SETs of big values over one connection, one at a
// time, to the same few keys; B/op is what the whole process allocated per
// SET (the client side sends a prepared request and allocates nothing per
// value): input buffers and value chunks.
func BenchmarkBigSet(b *testing.B) {
	for _, size := range []int{100_000, 10_000_000} {
		b.Run(strconv.Itoa(size), func(b *testing.B) {
			s := startServer(b)
			r := dialRaw(b, s)
			val := strings.Repeat("v", size)
			var reqs [][]byte
			for k := 0; k < 4; k++ {
				reqs = append(reqs, []byte("*3\r\n$3\r\nSET\r\n$1\r\n"+strconv.Itoa(k)+"\r\n$"+strconv.Itoa(size)+"\r\n"+val+"\r\n"))
			}
			b.SetBytes(int64(size))
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if _, err := r.nc.Write(reqs[i%len(reqs)]); err != nil {
					b.Fatal(err)
				}
				if got := r.reply(); got[0] != "+OK" {
					b.Fatalf("SET: %q", got)
				}
			}
		})
	}
}
