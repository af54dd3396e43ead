package server

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// client-query-buffer-limit as Redis 7.0 has it: CONFIG SET's replies and
// errors byte for byte, a connection whose pending request passes the
// limit closed without a reply (its request not run), a request under it
// served, and other clients unaffected. Run against Damselfly and
// redis-server alike.
func TestQueryBufferLimitAgainstRedis(t *testing.T) {
	redisAddr := startRedis(t)
	s := startServer(t, func(c *Config) { c.Save = "" })
	got := queryLimitScenario(t, s.Addr())
	want := queryLimitScenario(t, redisAddr)
	if got != want {
		t.Fatalf("Damselfly:\n%s\nredis-server:\n%s", got, want)
	}
	if !strings.Contains(want, "big request: closed") {
		t.Fatalf("the scenario does not reach the limit:\n%s", want)
	}
}

// queryLimitScenario runs the scenario against addr and returns a
// transcript of what the server did.
func queryLimitScenario(t *testing.T, addr string) string {
	t.Helper()
	var out strings.Builder
	reply := func(conn net.Conn, r *bufio.Reader, cmd string) {
		if _, err := conn.Write([]byte(cmd)); err != nil {
			t.Fatal(err)
		}
		line, err := r.ReadString('\n')
		if err != nil {
			t.Fatal(err)
		}
		if strings.HasPrefix(line, "*") { // CONFIG GET: name and value
			for i := 0; i < 4; i++ {
				more, _ := r.ReadString('\n')
				line += more
			}
		}
		out.WriteString(line)
	}
	admin, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	ar := bufio.NewReader(admin)
	for _, v := range []string{"abc", "100", "-1", "1048575", "1mb"} {
		reply(admin, ar, encode("CONFIG", "SET", "client-query-buffer-limit", v))
	}
	reply(admin, ar, encode("CONFIG", "GET", "client-query-buffer-limit"))
	for _, v := range []string{"100", "abc"} {
		reply(admin, ar, encode("CONFIG", "SET", "proto-max-bulk-len", v))
	}

	// Under the limit: served.
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	cr := bufio.NewReader(c)
	reply(c, cr, encode("SET", "small", strings.Repeat("s", 900<<10)))

	// Past it: a 2 MB bulk announced, 1.5 MB of it sent.
	big, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer big.Close()
	head := "*3\r\n$3\r\nSET\r\n$3\r\nbig\r\n$2000000\r\n"
	if _, err := big.Write([]byte(head + strings.Repeat("b", 1500000))); err != nil {
		out.WriteString("big request: write failed\n")
	}
	big.SetReadDeadline(time.Now().Add(10 * time.Second))
	if _, err := big.Read(make([]byte, 64)); errors.Is(err, io.EOF) || isReset(err) {
		out.WriteString("big request: closed\n")
	} else {
		out.WriteString("big request: " + err.Error() + "\n")
	}
	reply(admin, ar, encode("EXISTS", "big"))
	reply(admin, ar, encode("STRLEN", "small"))
	reply(admin, ar, encode("CONFIG", "SET", "client-query-buffer-limit", "1gb"))
	return out.String()
}

func isReset(err error) bool {
	var op *net.OpError
	return errors.As(err, &op) && strings.Contains(op.Err.Error(), "reset")
}

// A real client sees the connection closed when its request passes the
// limit, and its next request (on a new connection) is served.
func TestQueryBufferLimitGoRedis(t *testing.T) {
	s := startServer(t, func(c *Config) { c.Save = "" })
	ctx := context.Background()
	rdb := redis.NewClient(&redis.Options{Addr: s.Addr(), MaxRetries: -1})
	defer rdb.Close()
	if err := rdb.ConfigSet(ctx, "client-query-buffer-limit", "1mb").Err(); err != nil {
		t.Fatal(err)
	}
	if err := rdb.Set(ctx, "k", strings.Repeat("v", 3<<20), 0).Err(); err == nil {
		t.Fatal("a 3 MB SET passed a 1 MB client-query-buffer-limit")
	}
	if err := rdb.Set(ctx, "k", strings.Repeat("v", 512<<10), 0).Err(); err != nil {
		t.Fatal(err)
	}
	if n, err := rdb.StrLen(ctx, "k").Result(); err != nil || n != 512<<10 {
		t.Fatalf("STRLEN k = %d, %v", n, err)
	}
}
