package rdb

import (
	"bytes"
	"fmt"
	"testing"
)

// populateDump is an RDB of n DEBUG POPULATE-like strings ("key:N" ->
// "value:N" and zeros, 100 bytes), LZF-compressed or not.
func populateDump(b *testing.B, n int, compress bool) []byte {
	var buf bytes.Buffer
	w := NewWriter(&buf, 10)
	w.SetLimits(Limits{NoCompression: !compress})
	w.Header(nil)
	w.SelectDB(0, uint64(n), 0)
	val := make([]byte, 100)
	for i := range n {
		clear(val)
		copy(val, fmt.Sprintf("value:%d", i))
		if err := w.String(fmt.Appendf(nil, "key:%d", i), val, 0); err != nil {
			b.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		b.Fatal(err)
	}
	return buf.Bytes()
}

// BenchmarkLoadStrings measures the reader alone (fn does nothing) on 200k
// strings, per key.
func BenchmarkLoadStrings(b *testing.B) {
	for _, compress := range []bool{false, true} {
		data := populateDump(b, 200000, compress)
		b.Run(fmt.Sprintf("lzf=%v", compress), func(b *testing.B) {
			for b.Loop() {
				info, err := LoadWith(bytes.NewReader(data), "bench.rdb", Options{Reuse: true}, func(*Entry) error { return nil })
				if err != nil || info.Keys != 200000 {
					b.Fatal(err, info.Keys)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/200000, "ns/key")
		})
	}
}
