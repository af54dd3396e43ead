package server

// Load generators for comparing Damselfly with redis-server on the same
// machine. They run only when LOAD_ADDR names a server, e.g.
//
//	LOAD_ADDR=127.0.0.1:7401 LOAD_PID=<server pid> taskset -c 1 go test ./server -run TestLoad -v
//
// and report throughput and the server's CPU time per operation (from
// /proc/<LOAD_PID>/stat when given).

import (
	"bufio"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

func loadAddr(t *testing.T) string {
	addr := os.Getenv("LOAD_ADDR")
	if addr == "" {
		t.Skip("LOAD_ADDR not set: load generator for manual benchmarks")
	}
	return addr
}

// serverCPU is the server process's user+system CPU time.
func serverCPU() time.Duration {
	pid := os.Getenv("LOAD_PID")
	if pid == "" {
		return 0
	}
	b, err := os.ReadFile("/proc/" + pid + "/stat")
	if err != nil {
		return 0
	}
	f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+2:]))
	ut, _ := strconv.ParseInt(f[11], 10, 64)
	st, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(ut+st) * 10 * time.Millisecond // USER_HZ = 100
}

func encodeCmd(args ...string) []byte {
	var b strings.Builder
	fmt.Fprintf(&b, "*%d\r\n", len(args))
	for _, a := range args {
		fmt.Fprintf(&b, "$%d\r\n%s\r\n", len(a), a)
	}
	return []byte(b.String())
}

// 1 publisher, 100 subscribers (RESP2, one channel), 64-byte messages,
// publisher pipelines 100 PUBLISHes per round trip.
func TestLoadPubSubFanout(t *testing.T) {
	addr := loadAddr(t)
	const subs, msgs, batch = 100, 20000, 100
	payload := strings.Repeat("m", 64)
	frame := len(fmt.Sprintf("*3\r\n$7\r\nmessage\r\n$5\r\nbench\r\n$%d\r\n%s\r\n", len(payload), payload))
	var wg sync.WaitGroup
	ready := make(chan struct{}, subs)
	for i := 0; i < subs; i++ {
		nc, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer nc.Close()
		nc.Write(encodeCmd("SUBSCRIBE", "bench"))
		wg.Add(1)
		go func(nc net.Conn) {
			defer wg.Done()
			rd := bufio.NewReaderSize(nc, 64<<10)
			confirm := len("*3\r\n$9\r\nsubscribe\r\n$5\r\nbench\r\n:1\r\n")
			buf := make([]byte, 64<<10)
			if _, err := io_ReadFull(rd, buf[:confirm]); err != nil {
				t.Error(err)
				return
			}
			ready <- struct{}{}
			want := msgs * frame
			for got := 0; got < want; {
				n, err := rd.Read(buf)
				if err != nil {
					t.Error(err)
					return
				}
				got += n
			}
		}(nc)
	}
	for i := 0; i < subs; i++ {
		<-ready
	}
	pub, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer pub.Close()
	prd := bufio.NewReader(pub)
	var req []byte
	for i := 0; i < batch; i++ {
		req = append(req, encodeCmd("PUBLISH", "bench", payload)...)
	}
	cpu0, start := serverCPU(), time.Now()
	for sent := 0; sent < msgs; sent += batch {
		pub.Write(req)
		for i := 0; i < batch; i++ {
			line, err := prd.ReadString('\n')
			if err != nil || line != ":100\r\n" {
				t.Fatalf("PUBLISH reply %q %v", line, err)
			}
		}
	}
	wg.Wait()
	el, cpu := time.Since(start), serverCPU()-cpu0
	deliveries := float64(msgs * subs)
	t.Logf("PUBLISH fan-out: %d msgs x %d subs in %v: %.0f publishes/s, %.0f deliveries/s, server CPU %.2f µs/publish, %.3f µs/delivery",
		msgs, subs, el.Round(time.Millisecond), msgs/el.Seconds(), deliveries/el.Seconds(),
		float64(cpu.Microseconds())/msgs, float64(cpu.Microseconds())/deliveries)
}

func io_ReadFull(rd *bufio.Reader, b []byte) (int, error) {
	n := 0
	for n < len(b) {
		m, err := rd.Read(b[n:])
		n += m
		if err != nil {
			return n, err
		}
	}
	return n, nil
}

// 50 clients, each sending MULTI + 10 INCRs on keys spread over shards +
// EXEC in one write and waiting for the 12 replies.
func TestLoadMultiExec(t *testing.T) {
	addr := loadAddr(t)
	const clients, perClient = 50, 2000
	var req []byte
	req = append(req, encodeCmd("MULTI")...)
	for k := 0; k < 10; k++ {
		req = append(req, encodeCmd("INCR", fmt.Sprintf("counter:%d", k))...)
	}
	req = append(req, encodeCmd("EXEC")...)
	var wg sync.WaitGroup
	cpu0, start := serverCPU(), time.Now()
	for c := 0; c < clients; c++ {
		nc, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer nc.Close()
		wg.Add(1)
		go func() {
			defer wg.Done()
			rd := bufio.NewReader(nc)
			for i := 0; i < perClient; i++ {
				nc.Write(req)
				// +OK, 10 x +QUEUED, *10 and 10 integers
				for l := 0; l < 1+10+1+10; l++ {
					if _, err := rd.ReadString('\n'); err != nil {
						t.Error(err)
						return
					}
				}
			}
		}()
	}
	wg.Wait()
	el, cpu := time.Since(start), serverCPU()-cpu0
	n := float64(clients * perClient)
	t.Logf("MULTI/EXEC of 10 INCRs: %d transactions in %v: %.0f tx/s, server CPU %.2f µs/tx",
		clients*perClient, el.Round(time.Millisecond), n/el.Seconds(), float64(cpu.Microseconds())/n)
}
