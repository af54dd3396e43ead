package resp

import (
	"bytes"
	"testing"
)

// FuzzRequestReader feeds arbitrary bytes, split at arbitrary points, to the
// request parser: it must never panic, never consume more than it was given,
// and parse the same commands whatever the split.
func FuzzRequestReader(f *testing.F) {
	f.Add([]byte("*2\r\n$3\r\nGET\r\n$1\r\nk\r\n"), uint8(3))
	f.Add([]byte("PING\r\nECHO \"a b\"\r\n"), uint8(1))
	f.Add([]byte("*1\r\n$-3\r\n"), uint8(0))
	f.Add([]byte("*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$5\r\nhello\r\n*0\r\n"), uint8(7))
	f.Fuzz(func(t *testing.T, data []byte, split uint8) {
		whole := parseAll(data, len(data))
		chunked := parseAll(data, int(split%16)+1)
		if len(whole) != len(chunked) {
			t.Fatalf("whole %d commands, chunked %d", len(whole), len(chunked))
		}
		for i := range whole {
			if !bytes.Equal(whole[i], chunked[i]) {
				t.Fatalf("command %d differs: %q vs %q", i, whole[i], chunked[i])
			}
		}
	})
}

// parseAll feeds data to a parser step bytes at a time and returns every
// parsed command joined with spaces, stopping at the first protocol error.
func parseAll(data []byte, step int) [][]byte {
	p := NewRequestReader()
	p.Authed = true
	var out [][]byte
	var buf []byte
	for off := 0; off < len(data) || len(buf) > 0; {
		if off < len(data) {
			end := min(off+step, len(data))
			buf = append(buf, data[off:end]...)
			off = end
		}
		progressed := false
		for len(buf) > 0 {
			args, n, err := p.Next(buf)
			if err == ErrNeedMore {
				break
			}
			if n > len(buf) {
				panic("consumed more than given")
			}
			if err == ErrEmptyMultibulk {
				buf = buf[n:]
				progressed = true
				continue
			}
			if err != nil {
				return append(out, []byte("ERR "+err.Error()))
			}
			out = append(out, bytes.Join(args, []byte(" ")))
			buf = buf[n:]
			progressed = true
		}
		if off >= len(data) && !progressed {
			break
		}
	}
	return out
}
