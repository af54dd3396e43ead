package rdb

import (
	"bytes"
	"strings"
	"testing"

	"github.com/hdt3213/rdb/lzf"
)

func TestLZFRoundTrip(t *testing.T) {
	for _, s := range []string{
		strings.Repeat("a", 100),
		strings.Repeat("abcdefgh", 50) + "tail",
		"value:" + strings.Repeat("x", 94),
		strings.Repeat("0123456789", 1000),
	} {
		c, err := lzf.Compress([]byte(s))
		if err != nil || len(c) == 0 {
			t.Fatalf("compress %q: %v", s[:10], err)
		}
		prefix := []byte("keep")
		out, err := lzfDecompress(prefix, c, len(s))
		if err != nil || string(out) != "keep"+s {
			t.Fatalf("decompress: %v %q", err, out)
		}
		if _, err := lzfDecompress(nil, c, len(s)+1); err == nil {
			t.Fatalf("length %d accepted for %d bytes", len(s)+1, len(s))
		}
		if _, err := lzfDecompress(nil, c, len(s)-1); err == nil {
			t.Fatalf("length %d accepted for %d bytes", len(s)-1, len(s))
		}
		if _, err := lzfDecompress(nil, c[:len(c)-1], len(s)); err == nil {
			t.Fatalf("truncated stream accepted")
		}
	}
}

// FuzzLZF checks lzfDecompress against github.com/hdt3213/rdb/lzf (which
// may return fewer bytes than asked for: that is an error for us) and round
// trips through its compressor.
func FuzzLZF(f *testing.F) {
	f.Add([]byte("\x02abc\xe0\x05\x02"), 20, []byte("hello hello hello hello"))
	f.Add([]byte{0x01, 'a', 'b', 0x20, 0x01}, 5, []byte{})
	f.Fuzz(func(t *testing.T, in []byte, n int, plain []byte) {
		if n >= 0 && n < 1<<16 {
			got, err := lzfDecompress([]byte("p"), in, n)
			want, werr := lzf.Decompress(in, len(in), n)
			switch {
			case err == nil && (werr != nil || !bytes.Equal(got[1:], want)):
				t.Fatalf("ours %q, theirs %q %v", got, want, werr)
			case err != nil && werr == nil && len(want) == n && len(in) > 0:
				t.Fatalf("ours failed (%v), theirs %q", err, want)
			case err != nil && string(got) != "p":
				t.Fatalf("dst changed on error: %q", got)
			}
		}
		if len(plain) > 3 { // hdt3213's compressor panics on tiny inputs
			c, err := lzf.Compress(plain)
			if err == nil && len(c) > 0 {
				out, err := lzfDecompress(nil, c, len(plain))
				if err != nil || !bytes.Equal(out, plain) {
					t.Fatalf("round trip of %q: %v %q", plain, err, out)
				}
			}
		}
	})
}

// BenchmarkLZF decompresses a DEBUG POPULATE value ("value:N" and zeros,
// 100 bytes) and a text-like one.
func BenchmarkLZF(b *testing.B) {
	for _, c := range []struct{ name, plain string }{
		{"populate", "value:123456" + strings.Repeat("\x00", 88)},
		{"text", strings.Repeat("the quick brown fox jumps over the lazy dog ", 3)[:100]},
	} {
		comp, err := lzf.Compress([]byte(c.plain))
		if err != nil {
			b.Fatal(err)
		}
		b.Run(c.name, func(b *testing.B) {
			b.SetBytes(int64(len(c.plain)))
			var buf []byte
			for b.Loop() {
				buf, _ = lzfDecompress(buf[:0], comp, len(c.plain))
			}
		})
	}
}
