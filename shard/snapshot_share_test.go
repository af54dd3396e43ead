package shard

import (
	"bytes"
	"testing"
)

// recycler is a SnapshotSink that shares big strings and recycles their
// chunks (ChunkRecycler), recording what the shard tells it.
type recycler struct {
	items       map[string]*sharedItem
	spares      [][]byte
	overwritten int
	dropped     int
}

type sharedItem struct {
	val   []byte // the shard's bytes as shared
	want  []byte // a copy of them at the cut
	done  bool   // the sink no longer reads val
	chunk []byte // given by Overwritten
}

func (r *recycler) Entry(db int, e *Entry) {
	if v, ok := e.ShareStr(); ok {
		it := &sharedItem{val: v, want: bytes.Clone(v)}
		e.Share(it)
		r.items[string(e.Key())] = it
	}
}
func (r *recycler) AfterHook(bool)  {}
func (r *recycler) Unshare(tok any) { tok.(*sharedItem).val = bytes.Clone(tok.(*sharedItem).val) }
func (r *recycler) Dropped(any)     { r.dropped++ }
func (r *recycler) Overwritten(tok any, chunk []byte) {
	r.overwritten++
	tok.(*sharedItem).chunk = chunk
}
func (r *recycler) Done(tok any) bool { return tok.(*sharedItem).done }
func (r *recycler) Spare(n int) []byte {
	for i, c := range r.spares {
		if len(c) == n {
			r.spares = append(r.spares[:i], r.spares[i+1:]...)
			return c
		}
	}
	return nil
}

// TestOverwriteOfSharedChunks: during a snapshot that shares big strings,
// an overwrite of one the sink still reads leaves it untouched and hands
// its whole chunk over (Overwritten), taking a spare of that size if the
// sink has one (Spare); an overwrite of one the sink is done with reuses
// its chunk in place; a delete only drops (never Overwritten: RENAME may
// still read it). Values stay right throughout.
func TestOverwriteOfSharedChunks(t *testing.T) {
	const size = 64 << 10
	st := NewStore(1, 16)
	sh := st.Shards()[0]
	sh.Lock()
	defer sh.Unlock()
	d := sh.DB(0)
	val := func(b byte) []byte { return bytes.Repeat([]byte{b}, size) }
	for _, k := range []string{"a", "b", "c", "d"} {
		d.Put(Hash([]byte(k)), []byte(k), Value{Type: TypeString, Str: val(k[0])})
	}
	sink := &recycler{items: map[string]*sharedItem{}}
	snap := sh.StartSnapshot(sink)
	for c := snap.Traverse(0, 0); c != 0; c = snap.Traverse(0, c) {
	}
	if len(sink.items) != 4 {
		t.Fatalf("%d big strings shared, want 4", len(sink.items))
	}
	put := func(k string, v []byte) Entry {
		return d.Put(Hash([]byte(k)), []byte(k), Value{Type: TypeString, Str: v})
	}
	chunkOf := func(k string) []byte {
		e, ok := d.Find(Hash([]byte(k)), []byte(k))
		if !ok {
			t.Fatalf("%s gone", k)
		}
		return d.slab.Bytes(e.ref)
	}

	// a: still read by the sink, no spare: a new chunk; the old one is handed over untouched.
	oldA := chunkOf("a")
	put("a", val('A'))
	if sink.overwritten != 1 || sink.items["a"].chunk == nil || &sink.items["a"].chunk[0] != &oldA[0] {
		t.Fatalf("a: Overwritten %d times, chunk %v; want the old chunk handed over", sink.overwritten, sink.items["a"].chunk != nil)
	}
	if !bytes.Equal(sink.items["a"].val, sink.items["a"].want) {
		t.Fatal("a: the shared bytes changed")
	}

	// b: still read, and a spare of its size: the spare becomes b's chunk.
	spare := make([]byte, len(chunkOf("b")))
	sink.spares = append(sink.spares, spare)
	put("b", val('B'))
	if got := chunkOf("b"); &got[0] != &spare[0] || len(sink.spares) != 0 {
		t.Fatal("b: the overwrite did not take the spare")
	}
	if !bytes.Equal(sink.items["b"].val, sink.items["b"].want) {
		t.Fatal("b: the shared bytes changed")
	}

	// c: the sink is done with it: overwritten in place, nothing handed over.
	sink.items["c"].done = true
	oldC := chunkOf("c")
	put("c", val('C'))
	if got := chunkOf("c"); &got[0] != &oldC[0] || sink.overwritten != 2 {
		t.Fatalf("c: not reused in place (Overwritten %d times, want 2)", sink.overwritten)
	}

	// d: deleted: Dropped, never Overwritten.
	e, _ := d.Find(Hash([]byte("d")), []byte("d"))
	d.Delete(&e)
	if sink.dropped != 1 || sink.overwritten != 2 || sink.items["d"].chunk != nil {
		t.Fatalf("d: dropped %d, overwritten %d; want a drop only", sink.dropped, sink.overwritten)
	}
	snap.Finish()
	for k, b := range map[string]byte{"a": 'A', "b": 'B', "c": 'C'} {
		if e, ok := d.Find(Hash([]byte(k)), []byte(k)); !ok || !bytes.Equal(e.Str(), val(b)) {
			t.Errorf("%s: not the value last written", k)
		}
	}
}
