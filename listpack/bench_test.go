package listpack

import (
	"strconv"
	"testing"
)

func benchElems() [][]byte {
	var el [][]byte
	for i := range 64 {
		if i%2 == 0 {
			el = append(el, []byte(strconv.Itoa(i*1000)))
		} else {
			el = append(el, []byte("member:"+strconv.Itoa(i)))
		}
	}
	return el
}

// BenchmarkBuilder: encoding a 64-element listpack (half integers), per element.
func BenchmarkBuilder(b *testing.B) {
	el := benchElems()
	var lb Builder
	for b.Loop() {
		lb.Reset()
		for _, s := range el {
			lb.AppendString(s)
		}
		lb.Finish()
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/64, "ns/elem")
}

// BenchmarkPush: appending into a growing listpack in place, per element.
func BenchmarkPush(b *testing.B) {
	el := benchElems()
	empty := New(0)
	lp := New(1024)
	for b.Loop() {
		lp = append(lp[:0], empty...)
		for _, s := range el {
			lp = Push(lp, s)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/64, "ns/elem")
}

// BenchmarkDecode: Validate then a forward walk, per element.
func BenchmarkDecode(b *testing.B) {
	var lb Builder
	lb.Reset()
	for _, s := range benchElems() {
		lb.AppendString(s)
	}
	lp := lb.Finish()
	scratch := make([]byte, 0, 1024)
	for b.Loop() {
		if _, err := Validate(lp); err != nil {
			b.Fatal(err)
		}
		scratch = scratch[:0]
		for off := First; off < End(lp); {
			_, off = Bytes(lp, off, &scratch)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/64, "ns/elem")
}
