package shard

import (
	"testing"
	"time"
)

// TestItemState: the access state of an entry (LRU clock; for memcached
// items also fetched, stale, won) changes in place without counting as a
// write, survives an expiry change, and a new write resets it.
func TestItemState(t *testing.T) {
	st := NewStore(1, 16)
	key := []byte("item")
	sh, h := st.ShardOf(key)
	sh.Lock()
	defer sh.Unlock()
	db := sh.DB(0)
	base := time.Now().UnixMilli() // the clock only moves forward from the store's start
	sh.Tick(base + 100_000)
	e := db.Put(h, key, Value{Type: TypeString, Str: []byte("v"), Meta: true, MCFlags: 7, MCCAS: 42,
		MCStale: true, ExpireAt: 5_000_000})
	if e.MCFetched() || !e.MCStale() || e.MCWon() || e.Atime() != LRUClock(base+100_000) {
		t.Fatalf("new item state: fetched %v stale %v won %v atime %d", e.MCFetched(), e.MCStale(), e.MCWon(), e.Atime())
	}
	dirty := sh.Dirty()
	sh.Tick(base + 200_000)
	db.NoteAccess(&e)
	db.NoteWin(&e)
	if sh.Dirty() != dirty {
		t.Fatal("recording an access counted as a write")
	}
	got, _ := db.Find(h, key)
	if !got.MCFetched() || !got.MCWon() || !got.MCStale() || got.Atime() != LRUClock(base+200_000) ||
		got.MCCAS() != 42 || got.MCFlags() != 7 || string(got.Str()) != "v" || got.ExpireAt() != 5_000_000 {
		t.Fatalf("after access: %+v", got.hdr)
	}
	got = db.SetExpireAt(&got, 9_000_000)
	if !got.MCFetched() || !got.MCWon() || !got.MCStale() || got.ExpireAt() != 9_000_000 {
		t.Fatalf("after SetExpireAt: %+v", got.hdr)
	}
	sh.Tick(base + 300_000)
	got = db.Put(h, key, Value{Type: TypeString, Str: []byte("w"), Meta: true, MCCAS: 43})
	if got.MCFetched() || got.MCStale() || got.MCWon() || got.Atime() != LRUClock(base+300_000) || got.ExpireAt() != 0 {
		t.Fatalf("after a new write: %+v", got.hdr)
	}
	plain := db.Put(h, []byte("resp"), Value{Type: TypeString, Str: []byte("x")})
	db.NoteAccess(&plain)
	db.NoteWin(&plain)
	if plain.MCFetched() || plain.MCWon() || plain.HasMeta() {
		t.Fatal("an entry without meta took item state")
	}
}

// TestLookupTouches: Lookup records the access, LookupNoTouch does not,
// and idle times survive the 24-bit clock wrapping.
func TestLookupTouches(t *testing.T) {
	st := NewStore(1, 16)
	key := []byte("k")
	sh, h := st.ShardOf(key)
	sh.Lock()
	defer sh.Unlock()
	base := time.Now().UnixMilli()/1000*1000 + 1_000_000
	sh.Tick(base)
	sh.DB(0).Put(h, key, Value{Type: TypeString, Str: []byte("v")})
	e, _ := sh.LookupNoTouch(0, h, key, base+50_000)
	if e.Atime() != LRUClock(base) || IdleSeconds(e.Atime(), LRUClock(base+50_000)) != 50 {
		t.Fatalf("LookupNoTouch: atime %d", e.Atime())
	}
	e, _ = sh.Lookup(0, h, key, base+70_000)
	if e.Atime() != LRUClock(base+70_000) {
		t.Fatalf("Lookup: atime %d, want %d", e.Atime(), LRUClock(base+70_000))
	}
	e, _ = sh.LookupNoTouch(0, h, key, base+80_000)
	if e.Atime() != LRUClock(base+70_000) {
		t.Fatalf("the touch was not stored: atime %d", e.Atime())
	}
	sh.Tick(base + 10_000) // an earlier time from a later lock holder
	if sh.Clock() != LRUClock(base+70_000) {
		t.Fatalf("the clock stepped back to %d", sh.Clock())
	}
	if got := IdleSeconds(LRUClockMax-5, 10); got != 15 {
		t.Fatalf("idle across the wrap: %d, want 15", got)
	}
	sh.DB(0).SetIdle(&e, 600)
	if got := IdleSeconds(e.Atime(), sh.Clock()); got != 600 {
		t.Fatalf("SetIdle 600: idle %d", got)
	}
}

// TestStoreRelease: Release unmaps every database's slab memory.
func TestStoreRelease(t *testing.T) {
	st := NewStore(2, 4)
	for i := range 1000 {
		key := []byte{byte(i), byte(i >> 8), 'k'}
		sh, h := st.ShardOf(key)
		sh.Lock()
		sh.DB(i%4).Put(h, key, Value{Type: TypeString, Str: make([]byte, 100)})
		sh.Unlock()
	}
	st.Release()
	for _, sh := range st.Shards() {
		for db := range sh.DBCount() {
			if sh.PeekDB(db) != nil {
				t.Fatalf("shard %d db %d survives Release", sh.ID(), db)
			}
		}
	}
}
