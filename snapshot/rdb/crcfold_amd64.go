//go:build amd64 && !purego

package rdb

import "golang.org/x/sys/cpu"

// foldMin is the shortest input folded; below it the setup and the final
// reduction cost more than the table loop (BenchmarkCRC).
const foldMin = 64

// canFold says whether the CPU has PCLMULQDQ and SSE4.1 (PEXTRQ); decided
// once at start and never changed.
var canFold = cpu.X86.HasPCLMULQDQ && cpu.X86.HasSSE41

// jonesFold holds the folding constants, derived once at start (crcfold.go).
var jonesFold = makeFoldConsts()

// crcUpdate adds p to crc: whole 16-byte blocks by carry-less folding when
// the CPU can and p is long enough, the rest through the tables.
func crcUpdate(crc uint64, p []byte) uint64 {
	if canFold && len(p) >= foldMin {
		n := len(p) &^ 15
		crc = foldCRC(crc, p[:n], jonesFold)
		p = p[n:]
	}
	return crcTable(crc, p)
}

// foldCRC returns crc updated with p, whose length is a multiple of 16 and
// at least 64, by folding four 16-byte lanes at a time (crcfold_amd64.s).
//
//go:noescape
func foldCRC(crc uint64, p []byte, k *foldConsts) uint64
