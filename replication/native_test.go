package replication_test

import (
	"bytes"
	"context"
	"log/slog"
	"regexp"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/damselflydb/damselfly/server"
)

// syncLog is a slog handler's output shared with the test.
type syncLog struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *syncLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *syncLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

var fullSyncLine = regexp.MustCompile(`msg="full sync sent to replica".* compressed=(\w+) .*keys=(\d+) bytes=(\d+)`)

// TestNativeFullSync: a Damselfly replica announces REPLCONF capa
// damselfly-native and gets its full sync compressed, with every key; a
// redis-server replica of the same primary gets the plain RDB and the same
// data.
func TestNativeFullSync(t *testing.T) {
	var log syncLog
	p := startServer(t, func(c *server.Config) { c.Logger = slog.New(slog.NewTextHandler(&log, nil)) })
	pc := client(t, p.Addr())
	populate(t, pc, 20000)
	r := startServer(t)
	rc := client(t, r.Addr())
	replicaOf(t, rc, p.Addr())
	waitConverged(t, pc, rc)
	if d1, d2 := digest(t, pc), digest(t, rc); d1 != d2 {
		t.Fatalf("digests differ: primary %s, replica %s", d1, d2)
	}
	m := fullSyncLine.FindStringSubmatch(log.String())
	if m == nil || m[1] != "true" {
		t.Fatalf("no compressed full sync in the primary's log:\n%s", log.String())
	}
	sent, _ := strconv.Atoi(m[3])
	if sent <= 0 || sent > 20000*64/2 { // 64-byte values: at least 2x smaller than the RDB
		t.Errorf("compressed full sync of %s keys took %d bytes", m[2], sent)
	}

	raddr := redisServer(t)
	rs := client(t, raddr)
	h, port := hostPort(t, p.Addr())
	if err := rs.Do(context.Background(), "REPLICAOF", h, port).Err(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 20*time.Second, "redis-server replica in sync", func() bool {
		return info(rs, "replication")["master_link_status"] == "up" && digest(t, rs) == digest(t, pc)
	})
	all := fullSyncLine.FindAllStringSubmatch(log.String(), -1)
	if len(all) != 2 || all[1][1] != "false" {
		t.Fatalf("redis-server's full sync: %q", all)
	}
	// The Damselfly replica got the parallel native format, redis-server
	// plain RDB (parallel_test.go).
	if f := syncFormatLine.FindAllStringSubmatch(log.String(), -1); len(f) != 2 || f[0][1] != "native-parallel" || f[1][1] != "rdb" {
		t.Fatalf("full sync formats: %q", f)
	}
}
