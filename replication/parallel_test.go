package replication_test

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"net"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/damselflydb/damselfly/server"
	"github.com/damselflydb/damselfly/snapshot"
)

var syncFormatLine = regexp.MustCompile(`msg="full sync sent to replica".* format=([\w-]+) .*keys=(\d+) bytes=(\d+)`)

// TestParallelFullSyncUnderWrites: Damselfly replicas with fewer and more
// shards than their primary get the parallel native format while clients
// write, and end with the primary's DEBUG DIGEST; the payload is smaller
// than the plain RDB would be.
func TestParallelFullSyncUnderWrites(t *testing.T) {
	var log syncLog
	p := startServer(t, func(c *server.Config) {
		c.Shards = 4
		c.Logger = slog.New(slog.NewTextHandler(&log, nil))
	})
	pc := client(t, p.Addr())
	populate(t, pc, 30000)
	// Stretch the save so that the writes overlap it.
	if err := pc.ConfigSet(context.Background(), "rdb-key-save-delay", "20").Err(); err != nil {
		t.Fatal(err)
	}
	w := startWriter(t, p.Addr(), 4)
	var rcs []*redis.Client
	for _, shards := range []int{3, 7} {
		r := startServer(t, func(c *server.Config) { c.Shards = shards })
		rc := client(t, r.Addr())
		replicaOf(t, rc, p.Addr())
		rcs = append(rcs, rc)
	}
	waitFor(t, 60*time.Second, "both full syncs", func() bool { return len(syncFormatLine.FindAllString(log.String(), -1)) == 2 })
	time.Sleep(200 * time.Millisecond)
	w.halt()
	if w.count.Load() == 0 {
		t.Fatal("no writes ran")
	}
	pc.ConfigSet(context.Background(), "rdb-key-save-delay", "0")
	waitConverged(t, pc, rcs...)
	for _, m := range syncFormatLine.FindAllStringSubmatch(log.String(), -1) {
		if m[1] != "native-parallel" {
			t.Errorf("a Damselfly replica got format %s", m[1])
		}
		keys, _ := strconv.Atoi(m[2])
		sent, _ := strconv.Atoi(m[3])
		if keys < 30000 || sent <= 0 || sent > keys*64/2 {
			t.Errorf("parallel full sync of %d keys took %d bytes", keys, sent)
		}
	}
}

// tamperProxy forwards connections to target; on the first it flips one
// byte of the parallel sync payload, on the second it cuts the payload
// short, and it passes the third and later ones untouched.
type tamperProxy struct {
	ln      net.Listener
	accepts atomic.Int32
	mu      sync.Mutex
	conns   []net.Conn
}

func newTamperProxy(t *testing.T, target string, flipAt, cutAt int) *tamperProxy {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	tp := &tamperProxy{ln: ln}
	t.Cleanup(func() {
		ln.Close()
		tp.mu.Lock()
		for _, c := range tp.conns {
			c.Close()
		}
		tp.mu.Unlock()
	})
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			u, err := net.Dial("tcp", target)
			if err != nil {
				c.Close()
				continue
			}
			tp.mu.Lock()
			tp.conns = append(tp.conns, c, u)
			tp.mu.Unlock()
			n := tp.accepts.Add(1)
			go func() { io.Copy(u, c); u.Close() }()
			go func() {
				defer c.Close()
				defer u.Close()
				if n > 2 {
					io.Copy(c, u)
					return
				}
				// Find the payload's magic, then count from it.
				var seen []byte
				start := -1
				buf := make([]byte, 32<<10)
				for {
					k, err := u.Read(buf)
					chunk := buf[:k]
					base := len(seen)
					seen = append(seen, chunk...)
					if start < 0 {
						start = bytes.Index(seen, []byte(snapshot.SyncMagic))
					}
					if start >= 0 {
						if n == 1 && flipAt+start >= base && flipAt+start < len(seen) {
							chunk[flipAt+start-base] ^= 0x04
						}
						if n == 2 && cutAt+start < len(seen) {
							c.Write(chunk[:max(0, cutAt+start-base)])
							time.Sleep(100 * time.Millisecond)
							return
						}
					}
					if _, werr := c.Write(chunk); werr != nil || err != nil {
						return
					}
				}
			}()
		}
	}()
	return tp
}

// TestParallelSyncCorruptRetries: a corrupt block and a truncated payload
// are refused with an error naming the stream and offset (the replica
// keeps its previous dataset), and the replica retries until a clean
// transfer loads.
func TestParallelSyncCorruptRetries(t *testing.T) {
	p := startServer(t)
	pc := client(t, p.Addr())
	populate(t, pc, 20000)
	tp := newTamperProxy(t, p.Addr(), 120000, 150000)
	var log syncLog
	r := startServer(t, func(c *server.Config) { c.Shards = 2; c.Logger = slog.New(slog.NewTextHandler(&log, nil)) })
	rc := client(t, r.Addr())
	if err := rc.Set(context.Background(), "before", "kept", 0).Err(); err != nil {
		t.Fatal(err)
	}
	replicaOf(t, rc, tp.ln.Addr().String())
	waitConverged(t, pc, rc)
	if n := tp.accepts.Load(); n < 3 {
		t.Fatalf("the replica connected %d times, want a retry after each bad transfer", n)
	}
	out := log.String()
	t.Log(grepLines(out, "link to primary down"))
	for _, want := range []string{"primary's parallel sync, shard", "corrupt block stream", "previous dataset kept", "unexpected EOF"} {
		if !strings.Contains(out, want) {
			t.Errorf("the replica's log does not say %q:\n%s", want, grepLines(out, "link to primary down"))
		}
	}
}

func grepLines(s, sub string) string {
	var b strings.Builder
	for _, ln := range strings.Split(s, "\n") {
		if strings.Contains(ln, sub) {
			b.WriteString(ln + "\n")
		}
	}
	return b.String()
}
