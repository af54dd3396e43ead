//go:build amd64 && !purego

#include "textflag.h"

// The layout of foldConsts (crcfold.go).
#define FOLD512 0
#define FOLD128 16
#define BARRETT 32

// FOLD moves lane L forward over the distance the constants in K stand for
// (quadwords multiplied low by low and high by high, products XORed) and
// XORs in the 16 message bytes at OFF(SI). T is scratch.
#define FOLD(L, K, T, OFF) \
	MOVO      L, T         \
	PCLMULQDQ $0x00, K, L  \
	PCLMULQDQ $0x11, K, T  \
	PXOR      T, L         \
	MOVOU     OFF(SI), T   \
	PXOR      T, L

// FOLDREG is FOLD with the next 16 bytes already in register D.
#define FOLDREG(L, K, T, D) \
	MOVO      L, T          \
	PCLMULQDQ $0x00, K, L   \
	PCLMULQDQ $0x11, K, T   \
	PXOR      T, L          \
	PXOR      D, L

// func foldCRC(crc uint64, p []byte, k *foldConsts) uint64
// len(p) is a multiple of 16 and at least 64; see crcfold.go for the math.
TEXT ·foldCRC(SB), NOSPLIT, $0-48
	MOVQ crc+0(FP), AX
	MOVQ p_base+8(FP), SI
	MOVQ p_len+16(FP), CX
	MOVQ k+32(FP), DX

	// Four lanes of 16 bytes; the incoming CRC is XORed into the first
	// 8 message bytes, as the table loop does.
	MOVOU 0(SI), X0
	MOVOU 16(SI), X1
	MOVOU 32(SI), X2
	MOVOU 48(SI), X3
	MOVQ  AX, X4
	PXOR  X4, X0
	ADDQ  $64, SI
	SUBQ  $64, CX

	MOVOU FOLD512(DX), X5
	CMPQ  CX, $64
	JB    merge

loop4:
	// Four independent chains, so the multiplier's latency overlaps.
	FOLD(X0, X5, X6, 0)
	FOLD(X1, X5, X7, 16)
	FOLD(X2, X5, X8, 32)
	FOLD(X3, X5, X9, 48)
	ADDQ $64, SI
	SUBQ $64, CX
	CMPQ CX, $64
	JAE  loop4

merge:
	// Fold the four lanes into one, then the remaining 16-byte blocks.
	MOVOU FOLD128(DX), X5
	FOLDREG(X0, X5, X6, X1)
	FOLDREG(X0, X5, X6, X2)
	FOLDREG(X0, X5, X6, X3)

single:
	CMPQ CX, $16
	JB   reduce
	FOLD(X0, X5, X6, 0)
	ADDQ $16, SI
	SUBQ $16, CX
	JMP  single

reduce:
	// T = clmul(H, x^127 mod P) ⊕ L·x^64: Th in X0's low quadword, Tl in
	// its high one.
	MOVO      X0, X1
	PSRLDQ    $8, X1         // L to the low quadword
	PSRLDQ    $8, X5         // x^127 mod P to the low quadword
	PCLMULQDQ $0x00, X5, X0
	PXOR      X1, X0

	// Barrett: q = clmul(Th, ⌊x^127/P⌋).lo, CRC = clmul(q, ⌊P/x⌋).hi ⊕ q ⊕ Tl.
	MOVOU     BARRETT(DX), X2
	MOVO      X0, X1
	PCLMULQDQ $0x00, X2, X1  // q in X1's low quadword
	MOVQ      X1, BX
	PCLMULQDQ $0x10, X2, X1  // q times ⌊P/x⌋ (X2's high quadword)
	PEXTRQ    $1, X1, AX
	XORQ      BX, AX
	PEXTRQ    $1, X0, CX
	XORQ      CX, AX
	MOVQ      AX, ret+40(FP)
	RET
