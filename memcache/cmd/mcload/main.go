// Command mcload is a small memcached text-protocol load generator for
// benchmarks: C connections each send SET (or GET) requests with V-byte
// values over K keys, P requests per round trip, for a fixed duration, and
// it prints requests per second. It is not part of the server binary.
package main

import (
	"bufio"
	"flag"
	"fmt"
	"net"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:11211", "server address")
	conns := flag.Int("c", 50, "connections")
	pipe := flag.Int("P", 1, "requests per round trip")
	size := flag.Int("v", 256, "value size")
	keys := flag.Int("k", 10000, "key space")
	op := flag.String("op", "set", "set or get")
	dur := flag.Duration("d", 5*time.Second, "duration")
	flag.Parse()
	val := strings.Repeat("x", *size)
	var total atomic.Int64
	var wg sync.WaitGroup
	deadline := time.Now().Add(*dur)
	for i := 0; i < *conns; i++ {
		wg.Add(1)
		go func(id int) {
			defer wg.Done()
			nc, err := net.Dial("tcp", *addr)
			if err != nil {
				fmt.Fprintln(os.Stderr, err)
				os.Exit(1)
			}
			defer nc.Close()
			rd := bufio.NewReaderSize(nc, 64<<10)
			var buf []byte
			n := id * 7919
			for time.Now().Before(deadline) {
				buf = buf[:0]
				for j := 0; j < *pipe; j++ {
					n++
					key := fmt.Sprintf("key:%d", n%*keys)
					if *op == "set" {
						buf = fmt.Appendf(buf, "set %s 0 0 %d\r\n%s\r\n", key, *size, val)
					} else {
						buf = fmt.Appendf(buf, "get %s\r\n", key)
					}
				}
				if _, err := nc.Write(buf); err != nil {
					return
				}
				for j := 0; j < *pipe; j++ {
					for {
						line, err := rd.ReadSlice('\n')
						if err != nil {
							return
						}
						if *op == "set" || string(line) == "END\r\n" {
							break
						}
					}
				}
				total.Add(int64(*pipe))
			}
		}(i)
	}
	wg.Wait()
	fmt.Printf("%d\n", total.Load())
}
