package rdb

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
)

// TestAppendStringMatchesWriter: AppendString writes the very bytes of
// Writer.String, for every form a key or value can take (integers at each
// width's bounds, non-canonical numbers, short and long, compressible and
// random strings), with and without an expiry and LZF.
func TestAppendStringMatchesWriter(t *testing.T) {
	strs := []string{"", "0", "-0", "7", "-128", "127", "128", "-129", "32767", "-32768", "32768",
		"2147483647", "-2147483648", "2147483648", "-2147483649", "007", "+5", " 5", "12345678901",
		"key:1", strings.Repeat("a", 20), strings.Repeat("a", 21), strings.Repeat("ab", 100),
		"\x00\xff\x10 random bytes 1234567890 qwertyuiop", strings.Repeat("x", 70000)}
	var lzfs LZF
	for _, compress := range []bool{false, true} {
		for _, exp := range []int64{0, -5, 1700000000123} {
			for _, k := range strs {
				for _, v := range strs {
					var buf bytes.Buffer
					w := NewRecordWriter(&buf, 10)
					w.SetLimits(Limits{NoCompression: !compress})
					if err := w.String([]byte(k), []byte(v), exp); err != nil {
						t.Fatal(err)
					}
					w.Flush()
					var z *LZF
					if compress {
						z = &lzfs // one compressor for every record, as a serializer
					}
					got := AppendString([]byte("prefix"), []byte(k), []byte(v), exp, z)
					if !bytes.Equal(got[len("prefix"):], buf.Bytes()) {
						t.Fatalf("compress=%v exp=%d key %q value %q:\n got %x\nwant %x", compress, exp, k, v, got[6:], buf.Bytes())
					}
				}
			}
		}
	}
}

// TestAppendStringHead: the head plus the raw value is Writer.String's
// record, uncompressed, for values over 11 bytes (keys of any form).
func TestAppendStringHead(t *testing.T) {
	vals := []string{"123456789012", strings.Repeat("a", 63), strings.Repeat("b", 64), strings.Repeat("c", 16383),
		strings.Repeat("d", 16384), strings.Repeat("e", 70000)}
	for _, exp := range []int64{0, 1700000000123} {
		for _, k := range []string{"", "7", "-32768", "key:1", strings.Repeat("k", 300)} {
			for _, v := range vals {
				var buf bytes.Buffer
				w := NewRecordWriter(&buf, 10)
				w.SetLimits(Limits{NoCompression: true})
				if err := w.String([]byte(k), []byte(v), exp); err != nil {
					t.Fatal(err)
				}
				w.Flush()
				got := append(AppendStringHead(nil, []byte(k), len(v), exp), v...)
				if !bytes.Equal(got, buf.Bytes()) {
					t.Fatalf("exp=%d key %q value of %d bytes:\n got %x\nwant %x", exp, k, len(v), got[:min(len(got), 40)], buf.Bytes()[:min(buf.Len(), 40)])
				}
			}
		}
	}
}

// BenchmarkStringRecord encodes one 100-byte string record, per key:
// through the record Writer (a bufio write per field) against one append.
func BenchmarkStringRecord(b *testing.B) {
	val := bytes.Repeat([]byte("v"), 100)
	keys := make([][]byte, 1024)
	for i := range keys {
		keys[i] = fmt.Appendf(nil, "key:%d", i*7919)
	}
	b.Run("writer", func(b *testing.B) {
		var buf bytes.Buffer
		w := NewRecordWriter(&buf, 10)
		w.SetLimits(Limits{NoCompression: true})
		i := 0
		for b.Loop() {
			w.String(keys[i&1023], val, 0)
			if i++; i&1023 == 0 {
				w.Flush()
				buf.Reset()
			}
		}
	})
	b.Run("append", func(b *testing.B) {
		dst := make([]byte, 0, 128<<10)
		i := 0
		for b.Loop() {
			dst = AppendString(dst, keys[i&1023], val, 0, nil)
			if i++; i&1023 == 0 {
				dst = dst[:0]
			}
		}
	})
}
