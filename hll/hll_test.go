package hll

import (
	"fmt"
	"testing"
)

// The exact bytes of non-empty HyperLogLogs are checked against
// redis-server by server/testdata/hll.txt and TestHLLAgainstRedis.
func TestNewAndAddSmall(t *testing.T) {
	p := New()
	if string(p) != "HYLL\x01\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x7f\xff" {
		t.Fatalf("New() = %q", p)
	}
	if c, ok := Count(p); !ok || c != 0 {
		t.Fatalf("Count(empty) = %d %v", c, ok)
	}
}

// TestSparseDenseAgree adds the same elements to a sparse and a dense
// HyperLogLog and checks registers and counts agree at every step.
func TestSparseDenseAgree(t *testing.T) {
	sparse := New()
	dense, ok := ToDense(New())
	if !ok {
		t.Fatal("ToDense of an empty HyperLogLog failed")
	}
	for i := 0; i < 5000; i++ {
		ele := []byte(fmt.Sprint("x", i))
		var r1, r2 int
		sparse, r1 = Add(sparse, ele, DefaultSparseMaxBytes)
		dense, r2 = Add(dense, ele, DefaultSparseMaxBytes)
		if r1 < 0 || r1 != r2 {
			t.Fatalf("element %d: sparse %d dense %d", i, r1, r2)
		}
		if i%250 == 0 {
			c1, ok1 := Count(sparse)
			c2, ok2 := Count(dense)
			if !ok1 || !ok2 || c1 != c2 {
				t.Fatalf("after %d: counts %d %d", i+1, c1, c2)
			}
		}
	}
	if Encoding(sparse) != Dense {
		t.Fatal("5000 elements should have promoted the sparse HyperLogLog")
	}
	c, _ := Count(dense)
	if c < 4800 || c > 5200 {
		t.Fatalf("Count = %d for 5000 elements", c)
	}
	var regs [Registers]uint8
	Merge(&regs, dense)
	if CountRegisters(&regs) != c {
		t.Fatal("CountRegisters differs from Count")
	}
}

func TestDenseRegisters(t *testing.T) {
	regs := make([]byte, DenseSize-HeaderSize)
	for i := 0; i < Registers; i++ {
		DenseSetReg(regs, i, uint8(i*7%64))
	}
	for i := 0; i < Registers; i++ {
		if g := DenseGet(regs, i); g != uint8(i*7%64) {
			t.Fatalf("register %d = %d", i, g)
		}
	}
}

func TestCorruptSparse(t *testing.T) {
	p := New()
	p[len(p)-1] = 0xfe // covers 16383 registers, not 16384
	if _, ok := Count(p); ok {
		t.Fatal("Count accepted a corrupt sparse body")
	}
	if _, ok := ToDense(p); ok {
		t.Fatal("ToDense accepted a corrupt sparse body")
	}
}

func FuzzSparse(f *testing.F) {
	f.Add([]byte{0x7f, 0xff}, uint16(5), uint8(3))
	f.Add([]byte{0x40, 0x10, 0x80, 0x7f, 0xed}, uint16(17), uint8(40))
	f.Fuzz(func(t *testing.T, body []byte, idx uint16, count uint8) {
		p := append(New()[:HeaderSize], body...)
		Count(p)
		Decode(p)
		var regs [Registers]uint8
		Merge(&regs, p)
		q, _ := SparseSet(append([]byte(nil), p...), int(idx)%Registers, count%64, DefaultSparseMaxBytes)
		Count(q)
	})
}
