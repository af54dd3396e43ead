package rdb

import "errors"

var errLZF = errors.New("corrupt LZF data")

// lzfDecompress appends the n bytes that the LZF stream in decompresses to
// onto dst. Any stream that does not produce exactly n bytes, or refers
// outside what it has produced, is an error (as in Redis, which refuses a
// string whose decompressed length differs from the length it stores).
// Unlike github.com/hdt3213/rdb/lzf it writes into a caller's buffer, so
// loading compressed strings does not allocate per value.
func lzfDecompress(dst, in []byte, n int) ([]byte, error) {
	base := len(dst)
	if cap(dst)-base < n {
		grown := make([]byte, base, base+n)
		copy(grown, dst)
		dst = grown
	}
	out := dst[base : base+n]
	o := 0
	for i := 0; i < len(in); {
		ctrl := int(in[i])
		i++
		if ctrl < 1<<5 { // literal run of ctrl+1 bytes
			l := ctrl + 1
			if o+l > n || i+l > len(in) {
				return dst[:base], errLZF
			}
			copy(out[o:o+l], in[i:i+l])
			i += l
			o += l
			continue
		}
		// Back reference: length (ctrl>>5)+2, possibly extended by a byte,
		// distance ((ctrl&0x1f)<<8 | next byte) + 1.
		l := ctrl >> 5
		if l == 7 {
			if i >= len(in) {
				return dst[:base], errLZF
			}
			l += int(in[i])
			i++
		}
		if i >= len(in) {
			return dst[:base], errLZF
		}
		ref := o - ((ctrl&0x1f)<<8 | int(in[i])) - 1
		i++
		l += 2
		if ref < 0 || o+l > n {
			return dst[:base], errLZF
		}
		// out[o+k] = out[ref+k] for k < l. When the ranges overlap, that
		// repeats the o-ref bytes from ref: copying out[ref:o] forward
		// doubles the repeated span each time.
		for end := o + l; o < end; {
			o += copy(out[o:end], out[ref:o])
		}
	}
	if o != n {
		return dst[:base], errLZF
	}
	return dst[:base+n], nil
}
