// Command codecspeed measures what the native format's block codecs can
// sustain on this machine: it builds an RDB record stream of -keys string
// keys of -size bytes (values like DEBUG POPULATE's, or random printable
// bytes with -random) and compresses it with each codec through
// snapshot/block, on -par goroutines at once (one per shard in a native
// save), reporting input MB/s over all of them and the compressed size.
//
//	go run ./bench/codecspeed -keys 1000000 -size 100 -par 2
package main

import (
	"bytes"
	"flag"
	"fmt"
	"io"
	"log"
	"math/rand/v2"
	"os"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/damselflydb/damselfly/snapshot/block"
	"github.com/damselflydb/damselfly/snapshot/rdb"
)

type countW struct{ n int64 }

func (c *countW) Write(p []byte) (int, error) { c.n += int64(len(p)); return len(p), nil }

func main() {
	keys := flag.Int("keys", 1000000, "keys")
	size := flag.Int("size", 100, "value bytes")
	par := flag.Int("par", 2, "goroutines compressing at once")
	random := flag.Bool("random", false, "random printable values instead of DEBUG POPULATE's")
	file := flag.String("file", "", "compress this file (e.g. an uncompressed RDB dump of the dataset) instead of generated records")
	flag.Parse()
	if *file != "" {
		data, err := os.ReadFile(*file)
		if err != nil {
			log.Fatal(err)
		}
		run(data, *par)
		return
	}
	var buf bytes.Buffer
	w := rdb.NewWriter(&buf, 0)
	if err := w.Header(nil); err != nil {
		log.Fatal(err)
	}
	w.SelectDB(0, uint64(*keys), 0)
	v := make([]byte, *size)
	for i := 0; i < *keys; i++ {
		if *random {
			for j := range v {
				v[j] = byte(33 + rand.IntN(94))
			}
		} else {
			clear(v)
			copy(v, "value:"+strconv.Itoa(i))
		}
		if err := w.String([]byte("key:"+strconv.Itoa(i)), v, 0); err != nil {
			log.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		log.Fatal(err)
	}
	run(buf.Bytes(), *par)
}

// run compresses data with every codec on par goroutines at once, then
// decompresses and checks it (block.Reader) the same way.
func run(data []byte, par int) {
	fmt.Printf("input %.1f MB per goroutine, %d goroutines\n", float64(len(data))/1e6, par)
	for _, c := range []struct {
		codec block.Codec
		level int
	}{{block.Raw, 0}, {block.S2, 1}, {block.S2, 2}, {block.Zstd, 1}, {block.Zstd, 2}} {
		var wg sync.WaitGroup
		sizes := make([]int64, par)
		start, cpu0 := time.Now(), cpuSeconds()
		for g := 0; g < par; g++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				var cw countW
				bw, err := block.NewWriter(&cw, c.codec, c.level)
				if err != nil {
					log.Fatal(err)
				}
				if _, err := io.Copy(bw, bytes.NewReader(data)); err != nil {
					log.Fatal(err)
				}
				if err := bw.Close(); err != nil {
					log.Fatal(err)
				}
				sizes[g] = cw.n
			}()
		}
		wg.Wait()
		d, ccpu := time.Since(start), cpuSeconds()-cpu0
		var one bytes.Buffer
		bw, _ := block.NewWriter(&one, c.codec, c.level)
		bw.Write(data)
		bw.Close()
		dstart, dcpu0 := time.Now(), cpuSeconds()
		for g := 0; g < par; g++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				br := block.NewReader(bytes.NewReader(one.Bytes()), "bench")
				defer br.Close()
				if n, err := io.Copy(io.Discard, br); err != nil || n != int64(len(data)) {
					log.Fatalf("decode: %d bytes, %v", n, err)
				}
			}()
		}
		wg.Wait()
		dd, dcpu := time.Since(dstart), cpuSeconds()-dcpu0
		fmt.Printf("%-5s level %d: compress %7.0f MB/s, decompress %7.0f MB/s of raw input over %d goroutines, %.1f MB -> %.1f MB (%.1fx)\n",
			c.codec, c.level, float64(len(data))*float64(par)/1e6/d.Seconds(), float64(len(data))*float64(par)/1e6/dd.Seconds(), par,
			float64(len(data))/1e6, float64(sizes[0])/1e6, float64(len(data))/float64(sizes[0]))
		// Per CPU second: what one core sustains, whatever the neighbours
		// take (the wall-time rates above shrink on a shared machine).
		fmt.Printf("      per CPU second: compress %7.0f MB, decompress %7.0f MB\n",
			float64(len(data))*float64(par)/1e6/ccpu, float64(len(data))*float64(par)/1e6/dcpu)
	}
}

// cpuSeconds is this process's user+system CPU time.
func cpuSeconds() float64 {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return float64(ru.Utime.Nano()+ru.Stime.Nano()) / 1e9
}
