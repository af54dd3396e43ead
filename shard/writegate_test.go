package shard

import (
	"testing"

	"github.com/damselflydb/damselfly/shard/types"
)

// TestStringWriteGate: a string's bytes are writable only through StrW
// with the W that Modify (or GrowString) granted for that entry; the zero W
// (a command that forgot Modify), another string's W and a collection's W
// panic. ModifyStr runs Modify (a write: the dirty count moves).
func TestStringWriteGate(t *testing.T) {
	st := NewStore(1, 1)
	sh := st.Shards()[0]
	d := sh.DB(0)
	put := func(k string, v Value) Entry {
		return d.Put(Hash([]byte(k)), []byte(k), v)
	}
	a := put("a", Value{Type: TypeString, Str: []byte("hello")})
	b := put("b", Value{Type: TypeString, Str: []byte("world")})
	empty := put("e", Value{Type: TypeString})
	l, lw := types.NewList()
	l.PushBack(lw, nil, []byte("x"))
	coll := put("l", Value{Type: TypeList, Obj: l})

	wb, wl, we := d.Modify(&b), d.Modify(&coll), d.Modify(&empty)
	for name, w := range map[string]types.W{"zero": {}, "another string's": wb, "a list's": wl, "an empty string's": we} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("StrW with %s W: no panic", name)
				}
			}()
			a.StrW(w)[0] = 'J'
		}()
	}
	if string(a.Str()) != "hello" {
		t.Fatalf("a refused write changed the value: %q", a.Str())
	}
	dirty := sh.Dirty()
	d.ModifyStr(&a)[0] = 'J'
	if sh.Dirty() == dirty {
		t.Fatal("ModifyStr did not count as a write (Modify not run)")
	}
	e, _ := d.Find(Hash([]byte("a")), []byte("a"))
	if string(e.Str()) != "Jello" {
		t.Fatalf("value %q, want Jello", e.Str())
	}
	if cap(e.Str()) != len(e.Str()) {
		t.Fatal("Str's capacity exceeds its length: an append would write into the shard's memory")
	}
	if len(empty.StrW(we)) != 0 {
		t.Fatal("an empty string's writable bytes are not empty")
	}
}

// BenchmarkWriteGateStr is the gate's own cost on an in-place string edit:
// StrW (a check of the W) against Str (none), per call.
func BenchmarkWriteGateStr(b *testing.B) {
	st := NewStore(1, 1)
	d := st.Shards()[0].DB(0)
	e := d.Put(Hash([]byte("k")), []byte("k"), Value{Type: TypeString, Str: make([]byte, 64)})
	w := d.Modify(&e)
	b.Run("Str", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			e.Str()[i&63]++
		}
	})
	b.Run("StrW", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			e.StrW(w)[i&63]++
		}
	})
}
