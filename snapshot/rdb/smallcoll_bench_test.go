package rdb

import (
	"bytes"
	"fmt"
	"testing"
)

// smallCollDump is an RDB of n keys each of a small hash (8 fields), a
// small set of strings (8), a small zset (8) and a small list (16), all in
// their listpack encodings: the RDB side of the listpack codec.
func smallCollDump(b *testing.B, n int) []byte {
	var buf bytes.Buffer
	w := NewWriter(&buf, 11)
	w.Header(nil)
	w.SelectDB(0, uint64(4*n), 0)
	writeSmallColls(b, w, n)
	if err := w.Close(); err != nil {
		b.Fatal(err)
	}
	return buf.Bytes()
}

func writeSmallColls(b *testing.B, w *Writer, n int) {
	fields := make([][2][]byte, 8)
	members := make([][]byte, 16)
	for i := range fields {
		fields[i] = [2][]byte{fmt.Appendf(nil, "field:%d", i), fmt.Appendf(nil, "%d", i*1000)}
	}
	for i := range members {
		if i%2 == 0 {
			members[i] = fmt.Appendf(nil, "%d", i*77)
		} else {
			members[i] = fmt.Appendf(nil, "member:%d", i)
		}
	}
	key := make([]byte, 0, 32)
	for i := range n {
		key = fmt.Appendf(key[:0], "h:%d", i)
		w.Hash(key, 0, len(fields), func(yield func([]byte, []byte) bool) {
			for _, fv := range fields {
				if !yield(fv[0], fv[1]) {
					return
				}
			}
		})
		key = fmt.Appendf(key[:0], "s:%d", i)
		w.Set(key, 0, 8, func(yield func([]byte) bool) {
			for j := 1; j < 16; j += 2 {
				if !yield(members[j]) {
					return
				}
			}
		})
		key = fmt.Appendf(key[:0], "z:%d", i)
		w.ZSet(key, 0, 8, func(yield func([]byte, float64) bool) {
			for j := 0; j < 8; j++ {
				if !yield(members[j], float64(j)*1.5) {
					return
				}
			}
		})
		key = fmt.Appendf(key[:0], "l:%d", i)
		if err := w.List(key, 0, len(members), func(yield func([]byte) bool) {
			for _, m := range members {
				if !yield(m) {
					return
				}
			}
		}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkSaveSmallColls measures writing small listpack-encoded
// collections (RDB 11), per key.
func BenchmarkSaveSmallColls(b *testing.B) {
	const n = 20000
	var buf bytes.Buffer
	for b.Loop() {
		buf.Reset()
		w := NewWriter(&buf, 11)
		w.Header(nil)
		w.SelectDB(0, 4*n, 0)
		writeSmallColls(b, w, n)
		if err := w.Close(); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/(4*n), "ns/key")
}

// BenchmarkLoadSmallColls measures reading them back (fn does nothing),
// per key.
func BenchmarkLoadSmallColls(b *testing.B) {
	const n = 20000
	data := smallCollDump(b, n)
	for b.Loop() {
		info, err := LoadWith(bytes.NewReader(data), "bench.rdb", Options{Reuse: true}, func(*Entry) error { return nil })
		if err != nil || info.Keys != 4*n {
			b.Fatal(err, info.Keys)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/(4*n), "ns/key")
}
