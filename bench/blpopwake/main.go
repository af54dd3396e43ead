// Command blpopwake measures how long a client blocked in BLPOP waits for
// its reply after another client's LPUSH, on any Redis-protocol server.
//
//	go run ./bench/blpopwake -addr 127.0.0.1:6379 -n 300
//
// One connection sends BLPOP blpopwake 0; 3 ms later a second one sends
// LPUSH blpopwake x and the time from that send to the BLPOP reply is
// recorded. On Damselfly the BLPOP client is served on a goroutine of its
// own (detached from its event loop), which Go's poller must wake for each
// BLPOP: beside a busy loop that does not let the scheduler poll the
// network, that wait shows here. Reports p50, p90, p99 and max.
package main

import (
	"bufio"
	"flag"
	"fmt"
	"log"
	"net"
	"slices"
	"time"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:6379", "server address")
	n := flag.Int("n", 300, "wake-ups to measure")
	flag.Parse()
	a, err := net.Dial("tcp", *addr)
	if err != nil {
		log.Fatal(err)
	}
	b, err := net.Dial("tcp", *addr)
	if err != nil {
		log.Fatal(err)
	}
	ar, br := bufio.NewReader(a), bufio.NewReader(b)
	delays := make([]time.Duration, 0, *n)
	for range *n {
		got := make(chan time.Time, 1)
		go func() {
			fmt.Fprint(a, "*3\r\n$5\r\nBLPOP\r\n$9\r\nblpopwake\r\n$1\r\n0\r\n")
			for range 5 { // *2, $9, blpopwake, $1, x
				if _, err := ar.ReadString('\n'); err != nil {
					log.Fatal(err)
				}
			}
			got <- time.Now()
		}()
		time.Sleep(3 * time.Millisecond)
		sent := time.Now()
		fmt.Fprint(b, "*3\r\n$5\r\nLPUSH\r\n$9\r\nblpopwake\r\n$1\r\nx\r\n")
		if _, err := br.ReadString('\n'); err != nil {
			log.Fatal(err)
		}
		delays = append(delays, (<-got).Sub(sent))
	}
	slices.Sort(delays)
	q := func(f float64) time.Duration { return delays[int(f*float64(len(delays)-1))] }
	fmt.Printf("blpop wake-up: p50 %v p90 %v p99 %v max %v\n", q(0.5), q(0.9), q(0.99), delays[len(delays)-1])
}
