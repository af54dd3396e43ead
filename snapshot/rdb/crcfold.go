package rdb

import "math/bits"

// Folding CRC-64/Jones with carry-less multiplication (the method of
// Intel's "Fast CRC Computation for Generic Polynomials Using PCLMULQDQ",
// for a reflected 64-bit CRC). This file holds the polynomial arithmetic
// that derives the constants, in plain Go for every architecture so the
// tests can check the algorithm (foldModel in crcfold_test.go) anywhere;
// crcfold_amd64.s runs it.
//
// Notation. A polynomial A of degree < 64 is held reflected: bit i of the
// uint64 is the coefficient of x^(63-i), the order in which a reflected CRC
// consumes message bits (byte 0's bit 0 first). Sixteen message bytes
// loaded little-endian into an XMM register are then a 128-bit reflected
// polynomial S = H·x^64 + L, H in the low quadword and L in the high one.
// PCLMULQDQ of two reflected 64-bit operands A and B yields the 128-bit
// reflected form of A·B·x (the product has degree ≤ 126, one short of the
// register), so every constant below carries one power of x less than the
// shift it stands for.
//
// Folding S forward over n more message bits: S·x^n = H·x^(64+n) + L·x^n,
// congruent mod P to clmul(H, x^(64+n-1) mod P) ⊕ clmul(L, x^(n-1) mod P),
// a 128-bit value that is XORed into the 16 bytes n bits further on.
//
// Reduction of the final S to the CRC, S·x^64 mod P: first
// T = clmul(H, x^127 mod P) ⊕ L·x^64 (L moved to the low quadword), so
// T ≡ S·x^64 and T = Th·x^64 + Tl. Then Barrett: with μ = ⌊x^128/P⌋,
// q = ⌊Th·μ/x^64⌋ = ⌊Th·⌊x^127/P⌋/x^63⌋ (μ's constant term cannot reach
// the quotient), which is exactly the low quadword of
// clmul(Th, ⌊x^127/P⌋). The remainder Th·x^64 mod P is the low 64
// coefficients of q·P = x·q·⌊P/x⌋ + q (P's constant term is 1), and
// x·(q·⌊P/x⌋ mod x^63) is exactly the high quadword of clmul(q, ⌊P/x⌋).
// So CRC = clmul(q, ⌊P/x⌋).hi ⊕ q ⊕ Tl.

// jonesPoly is P without its x^64 term, normal (non-reflected) order: bit
// i is the coefficient of x^i.
const jonesPoly = 0xad93d23594c935a9

// foldConsts are the reflected constants crcfold_amd64.s reads, in pairs
// that are loaded as one XMM register each (low quadword first).
type foldConsts struct {
	fold512 [2]uint64 // x^575 mod P, x^511 mod P: four 16-byte lanes ahead
	fold128 [2]uint64 // x^191 mod P, x^127 mod P: one lane ahead, and T
	barrett [2]uint64 // ⌊x^127/P⌋, ⌊P/x⌋ (with its x^63 term, P's x^64)
}

// xPowMod returns x^n mod P in normal order.
func xPowMod(n int) uint64 {
	r := uint64(1)
	for ; n > 0; n-- {
		top := r >> 63
		r <<= 1
		if top != 0 {
			r ^= jonesPoly
		}
	}
	return r
}

// xPowDiv returns ⌊x^n/P⌋ in normal order, for 64 <= n < 128.
func xPowDiv(n int) uint64 {
	var rem, q uint64
	for k := n; k >= 0; k-- {
		top := rem >> 63
		rem <<= 1
		if k == n {
			rem |= 1
		}
		if top != 0 {
			rem ^= jonesPoly
			q |= 1 << k
		}
	}
	return q
}

// makeFoldConsts derives the constants; see the notation above.
func makeFoldConsts() *foldConsts {
	r := bits.Reverse64
	return &foldConsts{
		fold512: [2]uint64{r(xPowMod(64 + 512 - 1)), r(xPowMod(512 - 1))},
		fold128: [2]uint64{r(xPowMod(64 + 128 - 1)), r(xPowMod(128 - 1))},
		barrett: [2]uint64{r(xPowDiv(127)), r(jonesPoly>>1 | 1<<63)},
	}
}
