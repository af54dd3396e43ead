package server

import (
	"context"
	"fmt"
	"math/big"
	"math/rand/v2"
	"testing"
)

// bitModel is an independent model of a Redis bitmap string for the
// BITFIELD property test: plain bit-by-bit access and math/big arithmetic.
type bitModel struct{ b []byte }

func (m *bitModel) bit(i uint64) uint {
	if i/8 >= uint64(len(m.b)) {
		return 0
	}
	return uint(m.b[i/8]>>(7-i%8)) & 1
}

func (m *bitModel) grow(bytes uint64) {
	for uint64(len(m.b)) < bytes {
		m.b = append(m.b, 0)
	}
}

// get reads the field as a non-negative integer, then applies the sign.
func (m *bitModel) get(off uint64, n int, signed bool) *big.Int {
	v := new(big.Int)
	for i := 0; i < n; i++ {
		v.Lsh(v, 1)
		v.Or(v, big.NewInt(int64(m.bit(off+uint64(i)))))
	}
	if signed && v.Bit(n-1) == 1 {
		v.Sub(v, new(big.Int).Lsh(big.NewInt(1), uint(n)))
	}
	return v
}

func (m *bitModel) set(off uint64, n int, v *big.Int) {
	u := new(big.Int).Mod(v, new(big.Int).Lsh(big.NewInt(1), uint(n))) // two's complement bits
	for i := 0; i < n; i++ {
		pos := off + uint64(i)
		mask := byte(1) << (7 - pos%8)
		if u.Bit(n-1-i) == 1 {
			m.b[pos/8] |= mask
		} else {
			m.b[pos/8] &^= mask
		}
	}
}

// fit brings v into the field's range under overflow mode ow; ok is false
// when it did not fit and ow is FAIL.
func fit(v *big.Int, n int, signed bool, ow string) (*big.Int, bool) {
	lo, hi := big.NewInt(0), new(big.Int).Sub(new(big.Int).Lsh(big.NewInt(1), uint(n)), big.NewInt(1))
	if signed {
		lo = new(big.Int).Neg(new(big.Int).Lsh(big.NewInt(1), uint(n-1)))
		hi = new(big.Int).Sub(new(big.Int).Lsh(big.NewInt(1), uint(n-1)), big.NewInt(1))
	}
	if v.Cmp(lo) >= 0 && v.Cmp(hi) <= 0 {
		return v, true
	}
	switch ow {
	case "SAT":
		if v.Cmp(lo) < 0 {
			return lo, true
		}
		return hi, true
	case "FAIL":
		return nil, false
	}
	mod := new(big.Int).Lsh(big.NewInt(1), uint(n))
	w := new(big.Int).Mod(v, mod)
	if w.Cmp(hi) > 0 {
		w.Sub(w, mod)
	}
	return w, true
}

// TestBitfieldProperty runs random BITFIELD commands against the server and
// the model and compares every reply and the final string.
func TestBitfieldProperty(t *testing.T) {
	s := startServer(t)
	rdb := newClient(t, s)
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(1, 2))
	m := &bitModel{}
	values := []int64{0, 1, -1, 2, 7, 100, -100, 127, 128, -129, 255, 1 << 31, -(1 << 40), 1<<62 - 1, -(1 << 62)}
	for iter := 0; iter < 400; iter++ {
		args := []any{"BITFIELD", "bf"}
		type want struct {
			v  *big.Int
			ok bool
		}
		var wants []want
		ow := "WRAP"
		// All writes of one command happen after the string has grown to
		// the farthest bit written, as in Redis.
		type op struct {
			kind, ow string
			n        int
			signed   bool
			off      uint64
			arg      int64
		}
		var ops []op
		var need uint64
		for k := 0; k < 1+rng.IntN(4); k++ {
			if rng.IntN(4) == 0 {
				ow = []string{"WRAP", "SAT", "FAIL"}[rng.IntN(3)]
				args = append(args, "OVERFLOW", ow)
			}
			o := op{kind: []string{"GET", "SET", "INCRBY"}[rng.IntN(3)], ow: ow, signed: rng.IntN(2) == 0}
			if o.signed {
				o.n = 1 + rng.IntN(64)
			} else {
				o.n = 1 + rng.IntN(63)
			}
			o.off = uint64(rng.IntN(160))
			typ := fmt.Sprintf("u%d", o.n)
			if o.signed {
				typ = fmt.Sprintf("i%d", o.n)
			}
			args = append(args, o.kind, typ, o.off)
			if o.kind != "GET" {
				o.arg = values[rng.IntN(len(values))]
				if rng.IntN(3) == 0 {
					o.arg = rng.Int64N(1<<20) - 1<<19
				}
				args = append(args, o.arg)
				need = max(need, (o.off+uint64(o.n)-1)/8+1)
			}
			ops = append(ops, o)
		}
		m.grow(need)
		for _, o := range ops {
			old := m.get(o.off, o.n, o.signed)
			switch o.kind {
			case "GET":
				wants = append(wants, want{old, true})
			case "SET":
				v := big.NewInt(o.arg)
				if !o.signed && o.arg < 0 { // Redis takes the value as a 64-bit unsigned
					v = new(big.Int).SetUint64(uint64(o.arg))
				}
				nv, ok := fit(v, o.n, o.signed, o.ow)
				if ok {
					m.set(o.off, o.n, nv)
				}
				wants = append(wants, want{old, ok})
			case "INCRBY":
				nv, ok := fit(new(big.Int).Add(old, big.NewInt(o.arg)), o.n, o.signed, o.ow)
				if ok {
					m.set(o.off, o.n, nv)
				}
				wants = append(wants, want{nv, ok})
			}
		}
		got, err := rdb.Do(ctx, args...).Slice()
		if err != nil {
			t.Fatalf("%v: %v", args, err)
		}
		if len(got) != len(wants) {
			t.Fatalf("%v: %d replies, want %d", args, len(got), len(wants))
		}
		for i, w := range wants {
			if !w.ok {
				if got[i] != nil {
					t.Fatalf("%v: reply %d = %v, want nil", args, i, got[i])
				}
				continue
			}
			if g, ok := got[i].(int64); !ok || big.NewInt(g).Cmp(w.v) != 0 {
				t.Fatalf("%v: reply %d = %v, want %v", args, i, got[i], w.v)
			}
		}
	}
	str, _ := rdb.Get(ctx, "bf").Bytes()
	if string(str) != string(m.b) {
		t.Fatalf("final string differs:\n got %x\nwant %x", str, m.b)
	}
}
