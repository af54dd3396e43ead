package shard

import (
	"strconv"
	"testing"

	"github.com/damselflydb/damselfly/cluster"
)

func TestSlotIndex(t *testing.T) {
	st := NewStore(1, 2)
	sh := st.Shards()[0]
	d := sh.DB(0)
	for i := 0; i < 100; i++ {
		k := []byte("pre" + strconv.Itoa(i))
		d.Put(Hash(k), k, Value{Type: TypeString, Str: k})
	}
	st.EnableSlotIndex() // built from the keys already there
	d = sh.DB(0)
	for i := 0; i < 1000; i++ {
		k := []byte("k" + strconv.Itoa(i))
		d.Put(Hash(k), k, Value{Type: TypeString, Str: k})
		d.Put(Hash(k), k, Value{Type: TypeString, Str: append(k, make([]byte, 100)...)}) // overwrite, other size class
	}
	for i := 0; i < 1000; i += 2 {
		k := []byte("k" + strconv.Itoa(i))
		e, _ := d.Find(Hash(k), k)
		d.Delete(&e)
	}
	counts := make([]int, cluster.Slots)
	d.scanAll(func(e *Entry) { counts[cluster.KeySlot(e.Key())]++ })
	for slot, want := range counts {
		if got := d.SlotCount(slot); got != want {
			t.Fatalf("slot %d: index %d, scan %d", slot, got, want)
		}
		if got := len(d.AppendSlotKeys(nil, slot, -1)); got != want {
			t.Fatalf("slot %d: %d keys listed, want %d", slot, got, want)
		}
	}
	if sh.DB(1).slots != nil {
		t.Fatal("only database 0 is indexed")
	}
	sh.FlushDB(0, false)
	if d := sh.DB(0); d.slots == nil || d.Len() != 0 {
		t.Fatal("a flushed database 0 must come back indexed")
	}
}

// BenchmarkPutDelete measures what the index costs per insert and delete
// (standalone: index off, one nil check; cluster: index on).
func BenchmarkPutDelete(b *testing.B) {
	for _, on := range []bool{false, true} {
		b.Run("index="+strconv.FormatBool(on), func(b *testing.B) {
			st := NewStore(1, 1)
			if on {
				st.EnableSlotIndex()
			}
			d := st.Shards()[0].DB(0)
			keys := make([][]byte, 4096)
			for i := range keys {
				keys[i] = []byte("key:" + strconv.Itoa(i))
			}
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				k := keys[i&4095]
				h := Hash(k)
				if e, ok := d.Find(h, k); ok {
					d.Delete(&e)
				} else {
					d.Put(h, k, Value{Type: TypeString, Str: k})
				}
			}
		})
	}
}
