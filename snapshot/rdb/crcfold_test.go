package rdb

import (
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"testing"
)

// clmul is PCLMULQDQ in software: the 128-bit carry-less product of a and
// b, bit k of the result being the XOR of a_i·b_j over i+j = k.
func clmul(a, b uint64) (lo, hi uint64) {
	for i := 0; i < 64; i++ {
		if b>>i&1 != 0 {
			lo ^= a << i
			if i > 0 {
				hi ^= a >> (64 - i)
			}
		}
	}
	return lo, hi
}

// xmm is an XMM register: quadword 0 then quadword 1.
type xmm [2]uint64

func load16(p []byte) xmm {
	return xmm{binary.LittleEndian.Uint64(p), binary.LittleEndian.Uint64(p[8:])}
}

// fold multiplies v's quadwords by k's (low by low, high by high) and XORs
// the products: v moved over the distance k stands for.
func fold(v, k xmm) xmm {
	l0, h0 := clmul(v[0], k[0])
	l1, h1 := clmul(v[1], k[1])
	return xmm{l0 ^ l1, h0 ^ h1}
}

// foldModel is crcfold_amd64.s step by step in Go, so the algorithm and
// the constants are checked on every architecture. len(p) must be a
// multiple of 16 and at least 64.
func foldModel(crc uint64, p []byte, k *foldConsts) uint64 {
	var lanes [4]xmm
	for i := range lanes {
		lanes[i] = load16(p[16*i:])
	}
	lanes[0][0] ^= crc
	for p = p[64:]; len(p) >= 64; p = p[64:] {
		for i := range lanes {
			d := load16(p[16*i:])
			f := fold(lanes[i], k.fold512)
			lanes[i] = xmm{f[0] ^ d[0], f[1] ^ d[1]}
		}
	}
	s := lanes[0]
	for i := 1; i < 4; i++ {
		f := fold(s, k.fold128)
		s = xmm{f[0] ^ lanes[i][0], f[1] ^ lanes[i][1]}
	}
	for ; len(p) >= 16; p = p[16:] {
		d := load16(p)
		f := fold(s, k.fold128)
		s = xmm{f[0] ^ d[0], f[1] ^ d[1]}
	}
	th, tl := clmul(s[0], k.fold128[1]) // T = Th·x^64 + Tl, reflected
	th ^= s[1]
	q, _ := clmul(th, k.barrett[0])
	_, r := clmul(q, k.barrett[1])
	return r ^ q ^ tl
}

// TestFoldModel checks the folding algorithm and its derived constants
// against the table CRC, on any architecture.
func TestFoldModel(t *testing.T) {
	k := makeFoldConsts()
	rng := rand.New(rand.NewPCG(5, 6))
	for n := 64; n <= 1024; n += 16 {
		p := make([]byte, n)
		for i := range p {
			p[i] = byte(rng.Uint32())
		}
		crc := rng.Uint64()
		if got, want := foldModel(crc, p, k), crcTable(crc, p); got != want {
			t.Fatalf("len %d: %#x, want %#x", n, got, want)
		}
	}
}

// TestCRCUpdateMatchesTable checks crcUpdate (folding where the CPU can)
// against the table CRC for every length 0..2048 at random offsets and
// contents, and that splitting the input anywhere changes nothing:
// crc(a||b) == crcUpdate(crcUpdate(0, a), b).
func TestCRCUpdateMatchesTable(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	buf := make([]byte, 2048+64)
	for n := 0; n <= 2048; n++ {
		for i := range buf {
			buf[i] = byte(rng.Uint32())
		}
		off := rng.IntN(64)
		p := buf[off : off+n]
		init := uint64(0)
		if n%2 == 1 {
			init = rng.Uint64()
		}
		want := crcTable(init, p)
		if got := crcUpdate(init, p); got != want {
			t.Fatalf("len %d off %d: %#x, want %#x", n, off, got, want)
		}
		cut := 0
		if n > 0 {
			cut = rng.IntN(n + 1)
		}
		if got := crcUpdate(crcUpdate(init, p[:cut]), p[cut:]); got != want {
			t.Fatalf("len %d split at %d: %#x, want %#x", n, cut, got, want)
		}
	}
}

// TestCRCLong covers the folding loop's longer runs (many 64-byte steps,
// then 0..3 single 16-byte folds and a table tail), and all-ones data.
func TestCRCLong(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 10))
	for _, n := range []int{4096, 4096 + 16, 4096 + 48 + 15, 1 << 20, 1<<20 + 37, 10<<20 + 5} {
		p := make([]byte, n)
		for i := range p {
			p[i] = byte(rng.Uint32())
		}
		if got, want := crcUpdate(0, p), crcTable(0, p); got != want {
			t.Fatalf("len %d: %#x, want %#x", n, got, want)
		}
		for i := range p {
			p[i] = 0xff
		}
		if got, want := crcUpdate(^uint64(0), p), crcTable(^uint64(0), p); got != want {
			t.Fatalf("len %d of 0xff: %#x, want %#x", n, got, want)
		}
	}
}

// FuzzCRC checks crcUpdate against the table CRC for any input, starting
// CRC and split point.
func FuzzCRC(f *testing.F) {
	f.Add([]byte("123456789"), uint64(0), 4)
	f.Add(make([]byte, 200), uint64(1), 100)
	f.Fuzz(func(t *testing.T, p []byte, init uint64, cut int) {
		want := crcTable(init, p)
		if got := crcUpdate(init, p); got != want {
			t.Fatalf("len %d: %#x, want %#x", len(p), got, want)
		}
		if cut < 0 {
			cut = -cut
		}
		if len(p) > 0 {
			cut %= len(p) + 1
		} else {
			cut = 0
		}
		if got := crcUpdate(crcUpdate(init, p[:cut]), p[cut:]); got != want {
			t.Fatalf("len %d split at %d: %#x, want %#x", len(p), cut, got, want)
		}
	})
}

// TestCRCCheckValue is Redis's own test vector (crc64.c's crc64Test).
func TestCRCCheckValue(t *testing.T) {
	for name, f := range map[string]func(uint64, []byte) uint64{"update": crcUpdate, "table": crcTable} {
		if got := f(0, []byte("123456789")); got != 0xe9c6d914c4b8d9ca {
			t.Errorf("%s: %#x, want 0xe9c6d914c4b8d9ca", name, got)
		}
	}
	// Long enough to fold: Redis's crc64Test also checksums this sentence.
	li := []byte("This is a test of the emergency broadcast system.")
	long := append(append(append([]byte{}, li...), li...), li...)
	if got, want := crcUpdate(0, long), crcTable(0, long); got != want {
		t.Errorf("long: %#x, want %#x", got, want)
	}
}

// BenchmarkCRC compares the table CRC with crcUpdate (folding on amd64
// with PCLMULQDQ) over one buffer of each size.
func BenchmarkCRC(b *testing.B) {
	for _, n := range []int{64, 1 << 10, 64 << 10, 1 << 20} {
		p := make([]byte, n)
		for i := range p {
			p[i] = byte(i * 7919 >> 3)
		}
		for _, impl := range []struct {
			name string
			f    func(uint64, []byte) uint64
		}{{"table", crcTable}, {"update", crcUpdate}} {
			b.Run(fmt.Sprintf("%s/%d", impl.name, n), func(b *testing.B) {
				b.SetBytes(int64(n))
				var crc uint64
				for b.Loop() {
					crc = impl.f(crc, p)
				}
			})
		}
	}
}
