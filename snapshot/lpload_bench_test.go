package snapshot

import (
	"bytes"
	"fmt"
	"os"
	"strconv"
	"testing"

	"github.com/damselflydb/damselfly/shard"
	"github.com/damselflydb/damselfly/snapshot/rdb"
)

// smallCollDump is an RDB 10 dump of n small listpack-encoded hashes (8
// fields) or sorted sets (8 members), as bench/lpgen writes them.
func smallCollDump(b *testing.B, typ string, n int) []byte {
	var buf bytes.Buffer
	w := rdb.NewWriter(&buf, 10)
	w.Header(nil)
	w.SelectDB(0, uint64(n), 0)
	elems := make([][]byte, 16)
	key := make([]byte, 0, 32)
	for i := range n {
		key = fmt.Appendf(key[:0], "%s:%d", typ, i)
		for j := range elems {
			if j%2 == 0 {
				elems[j] = fmt.Appendf(elems[j][:0], "%d", i%1000+j*1000)
			} else {
				elems[j] = fmt.Appendf(elems[j][:0], "member:%d:%d", j, i%97)
			}
		}
		var err error
		if typ == "hash" {
			err = w.Hash(key, 0, 8, func(yield func([]byte, []byte) bool) {
				for j := 0; j < 16; j += 2 {
					yield(elems[j+1], elems[j])
				}
			})
		} else {
			err = w.ZSet(key, 0, 8, func(yield func([]byte, float64) bool) {
				for j := 1; j < 16; j += 2 {
					yield(elems[j], float64(j)*1.25+float64(i%10))
				}
			})
		}
		if err != nil {
			b.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		b.Fatal(err)
	}
	return buf.Bytes()
}

// BenchmarkLoadSmallColls loads small hashes and sorted sets into a
// 2-shard store (the whole load: reader, routing, building the values),
// per key. LPLOAD_KEYS sets the number of keys (default 100,000).
func BenchmarkLoadSmallColls(b *testing.B) {
	n := 100000
	if v, err := strconv.Atoi(os.Getenv("LPLOAD_KEYS")); err == nil && v > 0 {
		n = v
	}
	for _, typ := range []string{"hash", "zset"} {
		data := smallCollDump(b, typ, n)
		b.Run(typ, func(b *testing.B) {
			for b.Loop() {
				st := shard.NewStore(2, 16)
				if _, err := Load(st, bytes.NewReader(data), "bench.rdb"); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(n), "ns/key")
		})
	}
}

// bigCollDump is an RDB 10 dump of n lists (QUICKLIST_2) or sorted sets
// (ZSET_2, skiplist-encoded: over zset-max-listpack-entries) of m elements.
func bigCollDump(b *testing.B, typ string, n, m int) []byte {
	var buf bytes.Buffer
	w := rdb.NewWriter(&buf, 10)
	w.Header(nil)
	w.SelectDB(0, uint64(n), 0)
	key := make([]byte, 0, 32)
	elem := make([]byte, 0, 32)
	for i := range n {
		key = fmt.Appendf(key[:0], "%s:%d", typ, i)
		var err error
		if typ == "list" {
			err = w.List(key, 0, m, func(yield func([]byte) bool) {
				for j := range m {
					if j%4 == 0 {
						elem = strconv.AppendInt(elem[:0], int64(i+j), 10)
					} else {
						elem = fmt.Appendf(elem[:0], "element:%d:%d", j, i%97)
					}
					if !yield(elem) {
						return
					}
				}
			})
		} else {
			err = w.ZSet(key, 0, m, func(yield func([]byte, float64) bool) {
				for j := range m {
					elem = fmt.Appendf(elem[:0], "member:%d:%d", j, i%97)
					if !yield(elem, float64(j)*1.25+float64(i%10)) {
						return
					}
				}
			})
		}
		if err != nil {
			b.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		b.Fatal(err)
	}
	return buf.Bytes()
}

// BenchmarkLoadBigColls loads 10,000 lists or skiplist sorted sets of 200
// elements into a 2-shard store (the whole load), per element.
func BenchmarkLoadBigColls(b *testing.B) {
	const n, m = 10000, 200
	for _, typ := range []string{"list", "zset"} {
		data := bigCollDump(b, typ, n, m)
		b.Run(typ, func(b *testing.B) {
			for b.Loop() {
				st := shard.NewStore(2, 16)
				if _, err := Load(st, bytes.NewReader(data), "bench.rdb"); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(n*m), "ns/elem")
		})
	}
}
