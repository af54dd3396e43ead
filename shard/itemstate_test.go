package shard

import "testing"

// TestItemState: a memcached item's access state (fetched, access time,
// stale, won) changes in place without counting as a write, survives an
// expiry change, and a new write resets what the Value does not carry.
func TestItemState(t *testing.T) {
	st := NewStore(1, 16)
	key := []byte("item")
	sh, h := st.ShardOf(key)
	sh.Lock()
	defer sh.Unlock()
	db := sh.DB(0)
	e := db.Put(h, key, Value{Type: TypeString, Str: []byte("v"), Meta: true, MCFlags: 7, MCCAS: 42,
		MCAtime: 100, MCStale: true, ExpireAt: 5000})
	if e.MCFetched() || !e.MCStale() || e.MCWon() || e.MCAtime() != 100 {
		t.Fatalf("new item state: fetched %v stale %v won %v atime %d", e.MCFetched(), e.MCStale(), e.MCWon(), e.MCAtime())
	}
	dirty := sh.Dirty()
	db.NoteAccess(&e, 200)
	db.NoteWin(&e)
	if sh.Dirty() != dirty {
		t.Fatal("recording an access counted as a write")
	}
	got, _ := db.Find(h, key)
	if !got.MCFetched() || !got.MCWon() || !got.MCStale() || got.MCAtime() != 200 ||
		got.MCCAS() != 42 || got.MCFlags() != 7 || string(got.Str()) != "v" || got.ExpireAt() != 5000 {
		t.Fatalf("after access: %+v", got.hdr)
	}
	got = db.SetExpireAt(&got, 9000)
	if !got.MCFetched() || !got.MCWon() || !got.MCStale() || got.MCAtime() != 200 || got.ExpireAt() != 9000 {
		t.Fatalf("after SetExpireAt: %+v", got.hdr)
	}
	got = db.Put(h, key, Value{Type: TypeString, Str: []byte("w"), Meta: true, MCCAS: 43, MCAtime: 300})
	if got.MCFetched() || got.MCStale() || got.MCWon() || got.MCAtime() != 300 || got.ExpireAt() != 0 {
		t.Fatalf("after a new write: %+v", got.hdr)
	}
	plain := db.Put(h, []byte("resp"), Value{Type: TypeString, Str: []byte("x")})
	db.NoteAccess(&plain, 400)
	db.NoteWin(&plain)
	if plain.MCFetched() || plain.MCWon() || plain.HasMeta() {
		t.Fatal("an entry without meta took item state")
	}
}
