package rdb

import (
	"math/rand/v2"
	"testing"

	"github.com/hdt3213/rdb/crc64jones"
)

// TestCRCMatchesJones checks our CRC64 against the published check value
// and against crc64jones over random inputs split at random points.
func TestCRCMatchesJones(t *testing.T) {
	if got := crcUpdate(0, []byte("123456789")); got != 0xe9c6d914c4b8d9ca {
		t.Fatalf("check value %#x", got)
	}
	rng := rand.New(rand.NewPCG(3, 4))
	for i := 0; i < 200; i++ {
		p := make([]byte, rng.IntN(5000))
		for j := range p {
			p[j] = byte(rng.Uint32())
		}
		want := crc64jones.New()
		want.Write(p)
		d := &jonesDigest{}
		for rest := p; len(rest) > 0; {
			n := min(len(rest), 1+rng.IntN(100))
			d.Write(rest[:n])
			rest = rest[n:]
		}
		if d.Sum64() != want.Sum64() {
			t.Fatalf("len %d: %#x, want %#x", len(p), d.Sum64(), want.Sum64())
		}
	}
}

func BenchmarkCRCSmallWrites(b *testing.B) {
	p := make([]byte, 100)
	b.Run("ours", func(b *testing.B) {
		d := &jonesDigest{}
		for b.Loop() {
			d.Write(p)
		}
	})
	b.Run("crc64jones", func(b *testing.B) {
		d := crc64jones.New()
		for b.Loop() {
			d.Write(p)
		}
	})
}

// BenchmarkCRCChunk checksums one 128 KiB chunk, the unit the snapshot's
// writer hands to Writer.Raw.
func BenchmarkCRCChunk(b *testing.B) {
	p := make([]byte, 128<<10)
	for i := range p {
		p[i] = byte(i * 7919 >> 3)
	}
	b.SetBytes(int64(len(p)))
	d := &jonesDigest{}
	for b.Loop() {
		d.Write(p)
	}
}
