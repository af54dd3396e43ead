// Command lpgen writes an RDB dump of many small listpack-encoded
// collections, for timing how fast a server loads them (bench/lpload.sh):
// DEBUG POPULATE makes only strings.
//
//	lpgen -n 1000000 -type hash -o /tmp/lp/dump.rdb
//
// Each key is a hash of 8 fields (short names, half integer values), a
// sorted set of 8 members (integer and fractional scores), a set of 8
// strings or a list of 16 mixed elements, written by snapshot/rdb's Writer
// in RDB 10 (readable by redis-server 7.0) with LZF compression as Redis
// does by default.
package main

import (
	"bufio"
	"flag"
	"fmt"
	"log"
	"os"
	"path/filepath"

	"github.com/damselflydb/damselfly/snapshot/rdb"
)

func main() {
	n := flag.Int("n", 1000000, "number of keys")
	typ := flag.String("type", "hash", "hash, zset, set or list")
	out := flag.String("o", "dump.rdb", "output file")
	flag.Parse()
	tmp := *out + ".tmp"
	f, err := os.Create(tmp)
	if err != nil {
		log.Fatal(err)
	}
	bw := bufio.NewWriterSize(f, 1<<20)
	w := rdb.NewWriter(bw, 10)
	w.Header(nil)
	w.SelectDB(0, uint64(*n), 0)
	key := make([]byte, 0, 32)
	elems := make([][]byte, 16)
	for i := range *n {
		key = fmt.Appendf(key[:0], "%s:%d", *typ, i)
		for j := range elems {
			if j%2 == 0 {
				elems[j] = fmt.Appendf(elems[j][:0], "%d", i%1000+j*1000)
			} else {
				elems[j] = fmt.Appendf(elems[j][:0], "member:%d:%d", j, i%97)
			}
		}
		switch *typ {
		case "hash":
			err = w.Hash(key, 0, 8, func(yield func([]byte, []byte) bool) {
				for j := 0; j < 16; j += 2 {
					if !yield(elems[j+1], elems[j]) {
						return
					}
				}
			})
		case "zset":
			err = w.ZSet(key, 0, 8, func(yield func([]byte, float64) bool) {
				for j := 1; j < 16; j += 2 {
					if !yield(elems[j], float64(j)*1.25+float64(i%10)) {
						return
					}
				}
			})
		case "set":
			err = w.Set(key, 0, 8, func(yield func([]byte) bool) {
				for j := 1; j < 16; j += 2 {
					if !yield(elems[j]) {
						return
					}
				}
			})
		case "list":
			err = w.List(key, 0, len(elems), func(yield func([]byte) bool) {
				for _, e := range elems {
					if !yield(e) {
						return
					}
				}
			})
		default:
			log.Fatalf("unknown -type %q", *typ)
		}
		if err != nil {
			log.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		log.Fatal(err)
	}
	if err := bw.Flush(); err != nil {
		log.Fatal(err)
	}
	if err := f.Sync(); err != nil {
		log.Fatal(err)
	}
	if err := f.Close(); err != nil {
		log.Fatal(err)
	}
	if err := os.Rename(tmp, *out); err != nil {
		log.Fatal(err)
	}
	if d, err := os.Open(filepath.Dir(*out)); err == nil {
		_ = d.Sync()
		_ = d.Close()
	}
}
