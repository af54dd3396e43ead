package replication_test

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"strings"
	"testing"
	"time"
)

// TestSlowReplicaDoesNotStallWriters: a diskless full sync to a replica that
// stops reading must not hold the primary's writers back. The snapshot goes
// into a spool (memory, then a temporary file) instead of waiting for the
// socket; once the replica reads again it gets the complete payload.
func TestSlowReplicaDoesNotStallWriters(t *testing.T) {
	if testing.Short() {
		t.Skip("short mode")
	}
	s := startServer(t)
	c := client(t, s.Addr())
	ctx := context.Background()
	const keys = 300000 // ~40 MB of RDB: far more than socket buffers and the snapshot queue
	if err := c.Do(ctx, "DEBUG", "POPULATE", keys, "k", 100).Err(); err != nil {
		t.Fatal(err)
	}
	// POPULATE's values are mostly zeros: without this LZF would make
	// the payload smaller than the socket buffers.
	if err := c.ConfigSet(ctx, "rdbcompression", "no").Err(); err != nil {
		t.Fatal(err)
	}
	nc, err := net.Dial("tcp", s.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	rd := bufio.NewReaderSize(nc, 1<<20)
	fmt.Fprintf(nc, "REPLCONF capa eof capa psync2\r\n")
	if line, _ := rd.ReadString('\n'); line != "+OK\r\n" {
		t.Fatalf("REPLCONF: %q", line)
	}
	fmt.Fprintf(nc, "PSYNC ? -1\r\n")
	// Now the replica reads nothing for a while; writers overwrite keys
	// all over the keyspace, so most writes hit buckets not serialized yet.
	var worst time.Duration
	deadline := time.Now().Add(3 * time.Second)
	for i := 0; time.Now().Before(deadline); i++ {
		t0 := time.Now()
		if err := c.Set(ctx, fmt.Sprintf("k:%d", (i*7919)%keys), "new", 0).Err(); err != nil {
			t.Fatal(err)
		}
		worst = max(worst, time.Since(t0))
	}
	if worst > time.Second {
		t.Errorf("a write waited %v while the replica was not reading", worst)
	}
	// The replica reads again: +FULLRESYNC, $EOF:<mark>, the RDB, the mark.
	nc.SetReadDeadline(time.Now().Add(60 * time.Second))
	line, _ := rd.ReadString('\n')
	if !strings.HasPrefix(line, "+FULLRESYNC ") {
		t.Fatalf("got %q, want +FULLRESYNC", line)
	}
	line, _ = rd.ReadString('\n')
	if !strings.HasPrefix(line, "$EOF:") || len(line) != 5+40+2 {
		t.Fatalf("got %q, want $EOF:<40 bytes>", line)
	}
	mark := []byte(line[5:45])
	var tail []byte
	var total int64
	buf := make([]byte, 1<<20)
	for !bytes.HasSuffix(tail, mark) {
		n, err := rd.Read(buf)
		if err != nil && err != io.EOF {
			t.Fatalf("after %d bytes: %v", total, err)
		}
		total += int64(n)
		tail = append(tail, buf[:n]...)
		if len(tail) > 4096 {
			tail = tail[len(tail)-4096:]
		}
		if err == io.EOF {
			t.Fatalf("connection closed after %d bytes without the end mark", total)
		}
	}
	if total < keys*100 {
		t.Fatalf("payload of %d bytes for %d keys of 100 bytes", total, keys)
	}
	t.Logf("worst write latency %v while the replica stalled; payload %d bytes", worst, total)
}
