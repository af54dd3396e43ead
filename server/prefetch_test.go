package server

import (
	"bytes"
	"io"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"
)

// pipelineReplies writes reqs on a new connection in parts (each one write,
// so the server reads batches that end mid-request too) and returns all the
// bytes received until the connection stays quiet.
func pipelineReplies(t *testing.T, addr string, parts []string) []byte {
	t.Helper()
	nc, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	var got bytes.Buffer
	buf := make([]byte, 64<<10)
	for _, p := range parts {
		if _, err := io.WriteString(nc, p); err != nil {
			t.Fatal(err)
		}
		for {
			_ = nc.SetReadDeadline(time.Now().Add(300 * time.Millisecond))
			n, err := nc.Read(buf)
			got.Write(buf[:n])
			if err != nil {
				break
			}
		}
	}
	return got.Bytes()
}

// Prefetching the keys of pipelined requests (prefetch.go) is a hint: a
// pipeline mixing keyed commands, SELECT, MULTI/EXEC, an inline request,
// a many-argument MSET, unknown commands and requests split across reads
// gets, byte for byte, Redis 7.0's replies.
func TestPrefetchPipelineAgainstRedis(t *testing.T) {
	redisAddr := startRedis(t)
	s := startServer(t, func(c *Config) { c.Save = "" })
	var b strings.Builder
	for i := 0; i < 40; i++ {
		k := "k" + strconv.Itoa(i%13)
		b.WriteString(encode("SET", k, strings.Repeat("v", i)))
		b.WriteString(encode("GET", k))
		b.WriteString(encode("INCR", "n"+strconv.Itoa(i%5)))
		b.WriteString(encode("LPUSH", "l", k))
		b.WriteString(encode("HSET", "h", k, "x"))
		switch i % 10 {
		case 3:
			b.WriteString(encode("SELECT", "1"))
			b.WriteString(encode("GET", k))
			b.WriteString(encode("SET", k, "db1"))
			b.WriteString(encode("SELECT", "0"))
		case 5:
			b.WriteString(encode("MULTI"))
			b.WriteString(encode("INCR", k))
			b.WriteString(encode("GET", "n1"))
			b.WriteString(encode("EXEC"))
		case 7:
			b.WriteString("GET " + k + "\r\n")
			b.WriteString(encode("NOSUCH", k))
			mset := []string{"MSET"}
			for j := 0; j < 12; j++ {
				mset = append(mset, "m"+strconv.Itoa(j), k)
			}
			b.WriteString(encode(mset...))
			b.WriteString(encode("GET", "m11"))
		case 9:
			b.WriteString(encode("GET"))
			b.WriteString(encode("DEL", k, "n1"))
		}
	}
	all := b.String()
	// Cut the stream at odd places so that batches end inside requests.
	var parts []string
	for len(all) > 0 {
		n := min(len(all), 997)
		parts = append(parts, all[:n])
		all = all[n:]
	}
	want := pipelineReplies(t, redisAddr, parts)
	got := pipelineReplies(t, s.Addr(), parts)
	if !bytes.Equal(got, want) {
		t.Fatalf("replies differ from Redis's:\n got %q\nwant %q", got, want)
	}
	if len(want) < 1000 {
		t.Fatalf("only %d bytes of replies", len(want))
	}
}
