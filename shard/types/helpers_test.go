package types

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

func newRand(seed uint64) *rand.Rand { return rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)) }

func randStr(r *rand.Rand, maxLen int) []byte {
	switch r.IntN(4) {
	case 0:
		return []byte(fmt.Sprint(r.IntN(50)))
	case 1:
		return []byte(fmt.Sprint(r.Int64() - 1<<62))
	}
	n := r.IntN(maxLen + 1)
	b := make([]byte, n)
	for i := range b {
		b[i] = "abcdefgh"[r.IntN(8)]
	}
	return b
}

func mustEq[T comparable](t *testing.T, what string, got, want T) {
	t.Helper()
	if got != want {
		t.Fatalf("%s: got %v want %v", what, got, want)
	}
}
