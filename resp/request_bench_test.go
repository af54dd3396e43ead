package resp

import (
	"strconv"
	"strings"
	"testing"
)

// Request reader benchmarks (moved with the reader from server/): a
// pipeline of small SETs, one 1000-argument MSET fed in 64-byte chunks
// (resumability), and inline requests.
func benchParse(b *testing.B, data []byte, step int) {
	p := NewRequestReader()
	p.Authed = true
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		start, end := 0, 0
		for start < len(data) {
			end = min(end+step, len(data))
			for start < end {
				_, n, err := p.Next(data[start:end])
				if err == ErrNeedMore {
					break
				}
				if err != nil {
					b.Fatal(err)
				}
				start += n
			}
		}
	}
}

func BenchmarkParserPipeline(b *testing.B) {
	var data []byte
	for i := 0; i < 100; i++ {
		data = AppendCommandStrings(data, "SET", "key:"+strconv.Itoa(i), "value-0123456789")
	}
	benchParse(b, data, 1<<20)
}

func BenchmarkParserChunkedMSET(b *testing.B) {
	args := []string{"MSET"}
	for i := 0; i < 500; i++ {
		args = append(args, "k"+strconv.Itoa(i), "v"+strconv.Itoa(i))
	}
	benchParse(b, AppendCommandStrings(nil, args...), 64)
}

func BenchmarkParserInline(b *testing.B) {
	benchParse(b, []byte(strings.Repeat("SET key \"a value\\n\" x\r\n", 100)), 1<<20)
}

// BenchmarkReadValue reads a 100-element array reply through a Reader.
func BenchmarkReadValue(b *testing.B) {
	var data []byte
	data = append(data, "*100\r\n"...)
	for i := 0; i < 100; i++ {
		data = append(data, "$16\r\nvalue-0123456789\r\n"...)
	}
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		if _, err := NewBytesReader(data).ReadValue(); err != nil {
			b.Fatal(err)
		}
	}
}
