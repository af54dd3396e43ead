package snapshot

import (
	"context"
	"fmt"
	"io"
	"testing"

	"github.com/damselflydb/damselfly/shard"
	"github.com/damselflydb/damselfly/snapshot/block"
)

// stringStore is a 2-shard store (GOMAXPROCS on this machine) of n keys
// with 100-byte values, the dataset of issue 14's save figures.
func stringStore(n int) *shard.Store {
	st := shard.NewStore(2, 1)
	val := make([]byte, 100)
	for i := range val {
		val[i] = byte('a' + i%26)
	}
	for i := range n {
		put(st, 0, fmt.Sprintf("key:%d", i), shard.Value{Type: shard.TypeString, Str: val})
	}
	return st
}

// BenchmarkSaveStrings is a foreground save (no pacing, no writers) of
// 200,000 keys x 100 B, per key: the traversal, the encoding and the
// output (to io.Discard), RDB (LZF off and on) and native S2.
func BenchmarkSaveStrings(b *testing.B) {
	const n = 200000
	st := stringStore(n)
	b.Run("rdb", func(b *testing.B) {
		for b.Loop() {
			if _, err := Write(context.Background(), st, io.Discard, Options{}); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/key")
	})
	b.Run("rdb-lzf", func(b *testing.B) {
		for b.Loop() {
			if _, err := Write(context.Background(), st, io.Discard, Options{Compress: true}); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/key")
	})
	b.Run("native-s2", func(b *testing.B) {
		ws := []io.Writer{io.Discard, io.Discard}
		for b.Loop() {
			if _, _, err := writeNative(context.Background(), st, ws, NativeOptions{Codec: block.S2}); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/key")
	})
}

// BenchmarkSaveBigStrings is a foreground RDB save to io.Discard of about
// 200 MB in 10 MB and in 100 KB values (zero-padded, like DEBUG POPULATE),
// so the figure is the CPU side of a warm SAVE of big values: the CRC64,
// the copy into the output chunks and the traversal. With -tags purego the
// CRC is the table one, for comparison.
func BenchmarkSaveBigStrings(b *testing.B) {
	for _, size := range []int{10 << 20, 100 << 10} {
		n := 200 << 20 / size
		st := shard.NewStore(2, 1)
		for i := range n {
			val := make([]byte, size)
			copy(val, fmt.Sprintf("value:%d", i))
			put(st, 0, fmt.Sprintf("key:%d", i), shard.Value{Type: shard.TypeString, Str: val})
		}
		b.Run(fmt.Sprintf("%dKB", size>>10), func(b *testing.B) {
			b.SetBytes(int64(n * size))
			for b.Loop() {
				if _, err := Write(context.Background(), st, io.Discard, Options{}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
