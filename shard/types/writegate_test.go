package types

import (
	"testing"

	"github.com/damselflydb/damselfly/shard/internal/writegate"
)

// wOf grants the right to change x, as shard.DB.Modify does after the
// pre-change hook (tests of the data structures alone need no hook).
func wOf(x any) W { return writegate.Grant(x) }

// TestWriteGate: a mutating method refuses the zero W and a W granted for
// another object.
func TestWriteGate(t *testing.T) {
	l, w := NewList()
	l.PushBack(w, nil, []byte("a"))
	other, _ := NewList()
	for name, bad := range map[string]W{"zero": {}, "other": wOf(other)} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("%s W: no panic", name)
				}
			}()
			l.PushBack(bad, nil, []byte("b"))
		}()
	}
	if l.Len() != 1 {
		t.Fatalf("len %d", l.Len())
	}
}
