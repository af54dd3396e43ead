package rdb

import (
	"bytes"
	"testing"
)

// TestRawDirectSameBytes: RawDirect (flush, then write past the buffer)
// gives the very file Raw gives, checksum included, whatever the buffer
// holds before each slice.
func TestRawDirectSameBytes(t *testing.T) {
	val := make([]byte, 300<<10)
	for i := range val {
		val[i] = byte(i * 7)
	}
	for _, head := range []int{0, 1, 20, 64<<10 - 1, 64 << 10, 70 << 10} {
		var a, b bytes.Buffer
		wa, wb := NewWriter(&a, 0), NewWriter(&b, 0)
		for _, w := range []*Writer{wa, wb} {
			if err := w.Header(nil); err != nil {
				t.Fatal(err)
			}
		}
		wa.Raw(val[:head])
		wb.Raw(val[:head])
		for p := val[head:]; len(p) > 0; {
			n := min(len(p), 128<<10)
			if err := wa.Raw(p[:n]); err != nil {
				t.Fatal(err)
			}
			if err := wb.RawDirect(p[:n]); err != nil {
				t.Fatal(err)
			}
			p = p[n:]
		}
		if err := wa.Close(); err != nil {
			t.Fatal(err)
		}
		if err := wb.Close(); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(a.Bytes(), b.Bytes()) {
			t.Fatalf("head %d: RawDirect wrote %d bytes unlike Raw's %d", head, b.Len(), a.Len())
		}
	}
}
