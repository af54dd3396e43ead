package rdb

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/hdt3213/rdb/lzf"
)

// lzfInputs are the shapes a compressor meets: runs, repeats at every
// distance, text, random bytes, and mixes of them, at sizes around the
// literal run (32), the window (8 KiB), the longest match (264) and the
// table sizes.
func lzfInputs(r *rand.Rand) [][]byte {
	var ins [][]byte
	for _, n := range []int{0, 1, 5, 6, 7, 20, 21, 31, 32, 33, 64, 100, 263, 264, 265, 300, 1000, 8191, 8192, 8193, 9000, 16384, 70000} {
		zeros := make([]byte, n)
		random := make([]byte, n)
		for i := range random {
			random[i] = byte(r.Uint32())
		}
		text := []byte(strings.Repeat("the quick brown fox jumps over the lazy dog ", n/44+1)[:n])
		mixed := make([]byte, n)
		for i := 0; i < n; {
			run := 1 + r.IntN(300)
			switch r.IntN(3) {
			case 0: // copy an earlier span, near or beyond the window
				if i > 0 {
					from := max(0, i-1-r.IntN(min(i, 9000)))
					for k := 0; k < run && i < n; k++ {
						mixed[i] = mixed[from+k]
						i++
					}
				}
			case 1:
				for k := 0; k < run && i < n; k++ {
					mixed[i] = byte(r.IntN(4))
					i++
				}
			default:
				for k := 0; k < run && i < n; k++ {
					mixed[i] = byte(r.Uint32())
					i++
				}
			}
		}
		populate := fmt.Appendf(nil, "value:%d", r.IntN(1e6))
		populate = append(populate, make([]byte, max(0, n-len(populate)))...)[:n]
		ins = append(ins, zeros, random, text, mixed, populate)
	}
	return ins
}

// TestLZFCompress: whatever it compresses decodes to the input by our
// decoder and by hdt3213's (another implementation of the format Redis
// reads), saves at least 4 bytes, and is the same bytes whatever the
// compressor did before (one compressor serves many values, its table
// never cleared between them); compressible inputs do compress.
func TestLZFCompress(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	ins := lzfInputs(r)
	var shared LZF
	for round := 0; round < 3; round++ {
		r.Shuffle(len(ins), func(i, j int) { ins[i], ins[j] = ins[j], ins[i] })
		for _, in := range ins {
			got, ok := shared.compress(in)
			var fresh LZF
			want, wok := fresh.compress(in)
			if ok != wok || !bytes.Equal(got, want) {
				t.Fatalf("%d bytes: output depends on earlier inputs", len(in))
			}
			if !ok {
				if len(in) >= 64 && bytes.Count(in, in[:1]) == len(in) {
					t.Fatalf("%d equal bytes not compressed", len(in))
				}
				continue
			}
			if len(got) > len(in)-4 {
				t.Fatalf("%d bytes compressed to %d", len(in), len(got))
			}
			out, err := lzfDecompress(nil, got, len(in))
			if err != nil || !bytes.Equal(out, in) {
				t.Fatalf("%d bytes: our decoder: %v", len(in), err)
			}
			theirs, err := lzf.Decompress(got, len(got), len(in))
			if err != nil || !bytes.Equal(theirs, in) {
				t.Fatalf("%d bytes: hdt3213's decoder: %v", len(in), err)
			}
		}
	}
}

// TestLZFBaseWrap: when base would pass 2^32 the table is cleared; the
// entries left from before must not be taken for this input's.
func TestLZFBaseWrap(t *testing.T) {
	in := []byte(strings.Repeat("abcdefghij", 50))
	var z LZF
	want, _ := z.compress(in)
	want = bytes.Clone(want)
	for _, base := range []uint32{1<<32 - 1 - uint32(len(in)), 1<<32 - 2, 1<<31 + 7} {
		z.base = base
		got, ok := z.compress(in)
		if !ok || !bytes.Equal(got, want) {
			t.Fatalf("base %d: got %x", base, got)
		}
		if z.base < 1 || uint64(z.base) > 1<<32-1 {
			t.Fatalf("base %d after", z.base)
		}
	}
}

// FuzzLZFCompress round-trips any input, compressed after another one on
// the same compressor.
func FuzzLZFCompress(f *testing.F) {
	f.Add([]byte("hello hello hello hello hello"), []byte("x"))
	f.Add(bytes.Repeat([]byte{0}, 300), []byte("value:1"))
	f.Fuzz(func(t *testing.T, in, before []byte) {
		var z LZF
		z.compress(before)
		c, ok := z.compress(in)
		if !ok {
			return
		}
		if len(c) > len(in)-4 {
			t.Fatalf("%d bytes compressed to %d", len(in), len(c))
		}
		out, err := lzfDecompress(nil, c, len(in))
		if err != nil || !bytes.Equal(out, in) {
			t.Fatalf("round trip of %q: %v %q", in, err, out)
		}
	})
}

// BenchmarkLZFCompress compresses values one after another on one
// compressor, against hdt3213's Compress (a table and an output allocated
// for each).
func BenchmarkLZFCompress(b *testing.B) {
	r := rand.New(rand.NewPCG(3, 4))
	random := make([]byte, 1000)
	for i := range random {
		random[i] = byte(r.Uint32())
	}
	for _, c := range []struct {
		name  string
		plain []byte
	}{
		{"populate100", append([]byte("value:123456"), make([]byte, 88)...)},
		{"text1k", []byte(strings.Repeat("the quick brown fox jumps over the lazy dog ", 23)[:1000])},
		{"random1k", random},
		{"text100k", []byte(strings.Repeat("lorem ipsum dolor sit amet, consectetur adipiscing elit ", 1800)[:100000])},
	} {
		b.Run(c.name+"/ours", func(b *testing.B) {
			b.SetBytes(int64(len(c.plain)))
			b.ReportAllocs()
			var z LZF
			for b.Loop() {
				z.compress(c.plain)
			}
		})
		b.Run(c.name+"/hdt3213", func(b *testing.B) {
			b.SetBytes(int64(len(c.plain)))
			b.ReportAllocs()
			for b.Loop() {
				lzf.Compress(c.plain)
			}
		})
	}
}
