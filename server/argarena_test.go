package server

import (
	"fmt"
	"testing"
)

// TestArgArenaViewsSurviveGrowth: earlier copies stay intact while later
// ones start new chunks and grow the vector; reset reuses the storage.
func TestArgArenaViewsSurviveGrowth(t *testing.T) {
	var a argArena
	for round := range 3 {
		var views [][][]byte
		var want [][]string
		for i := range 200 {
			args := [][]byte{[]byte("SET"), []byte(fmt.Sprintf("key:%d:%d", round, i)), make([]byte, i*7)}
			views = append(views, a.copy(args))
			args[1][0] = 'X' // the copy must not alias the input
			want = append(want, []string{"SET", fmt.Sprintf("key:%d:%d", round, i), string(make([]byte, i*7))})
		}
		for i, v := range views {
			for j := range v {
				if string(v[j]) != want[i][j] {
					t.Fatalf("round %d, copy %d arg %d: %q, want %q", round, i, j, v[j], want[i][j])
				}
			}
			if cap(v) != len(v) {
				t.Fatalf("a view can be appended to in place")
			}
		}
		a.reset()
	}
	if allocs := testing.AllocsPerRun(100, func() {
		a.copy([][]byte{[]byte("INCR"), []byte("counter:1")})
		a.reset()
	}); allocs != 0 {
		t.Fatalf("%v allocations per copy after warm-up", allocs)
	}
}
