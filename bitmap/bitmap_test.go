package bitmap

import (
	"math/rand/v2"
	"testing"
)

func naiveCount(p []byte, start, end int64) int64 {
	var n int64
	for i := start; i <= end; i++ {
		n += int64(Get(p, uint64(i)))
	}
	return n
}

func naivePos(p []byte, start, end int64, bit int) int64 {
	for i := start; i <= end; i++ {
		if Get(p, uint64(i)) == bit {
			return i
		}
	}
	return -1
}

// TestCountPosAgainstNaive checks Count and Pos over every range of random
// strings against bit-by-bit loops.
func TestCountPosAgainstNaive(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for iter := 0; iter < 200; iter++ {
		p := make([]byte, rng.IntN(20))
		for i := range p {
			switch rng.IntN(3) {
			case 0:
				p[i] = 0
			case 1:
				p[i] = 0xff
			default:
				p[i] = byte(rng.Uint32())
			}
		}
		nbits := int64(len(p)) * 8
		for s := int64(0); s < nbits; s += 1 + rng.Int64N(3) {
			for e := s - 1; e < nbits; e += 1 + rng.Int64N(3) {
				if g, w := Count(p, s, e), naiveCount(p, s, e); g != w {
					t.Fatalf("Count(%x, %d, %d) = %d, want %d", p, s, e, g, w)
				}
				for bit := 0; bit < 2; bit++ {
					if g, w := Pos(p, s, e, bit), naivePos(p, s, e, bit); g != w {
						t.Fatalf("Pos(%x, %d, %d, %d) = %d, want %d", p, s, e, bit, g, w)
					}
				}
			}
		}
	}
}

func TestOp(t *testing.T) {
	a, b := []byte{0xff, 0x0f, 0x01}, []byte{0x0f, 0xf0}
	for _, c := range []struct {
		op   int
		srcs [][]byte
		want string
	}{
		{And, [][]byte{a, b}, "\x0f\x00\x00"},
		{Or, [][]byte{a, b}, "\xff\xff\x01"},
		{Xor, [][]byte{a, b}, "\xf0\xff\x01"},
		{Not, [][]byte{b}, "\xf0\x0f"},
		{And, [][]byte{a, nil}, "\x00\x00\x00"},
		{Or, [][]byte{nil, nil}, ""},
	} {
		if got := Op(c.op, c.srcs); string(got) != c.want {
			t.Errorf("Op(%d, %x) = %x, want %x", c.op, c.srcs, got, c.want)
		}
	}
	if string(a) != "\xff\x0f\x01" {
		t.Error("Op changed a source")
	}
}

func TestFields(t *testing.T) {
	p := make([]byte, 10)
	SetInt(p, 3, 12, 0xabc)
	if g := GetUnsigned(p, 3, 12); g != 0xabc {
		t.Fatalf("GetUnsigned = %x", g)
	}
	if g := GetSigned(p, 3, 12); g != 0xabc-0x1000 {
		t.Fatalf("GetSigned = %d", g)
	}
	SetInt(p, 8, 64, 1<<63|5)
	if g := GetSigned(p, 8, 64); g != -1<<63|5 {
		t.Fatalf("GetSigned 64 = %d", g)
	}
	if v, over := Unsigned(250, 10, 8, Wrap); v != 4 || !over {
		t.Fatalf("Unsigned wrap = %d %v", v, over)
	}
	if v, over := Unsigned(3, -10, 8, Sat); v != 0 || !over {
		t.Fatalf("Unsigned sat = %d %v", v, over)
	}
	if v, over := Signed(120, 10, 8, Wrap); v != -126 || !over {
		t.Fatalf("Signed wrap = %d %v", v, over)
	}
	if v, over := Signed(-120, -10, 8, Sat); v != -128 || !over {
		t.Fatalf("Signed sat = %d %v", v, over)
	}
	if v, over := Signed(1<<63-1, 1, 64, Wrap); v != -1<<63 || !over {
		t.Fatalf("Signed 64 wrap = %d %v", v, over)
	}
}
