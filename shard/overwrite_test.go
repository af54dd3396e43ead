package shard

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
)

// TestOverwriteMatchesPut: overwriting a just-found entry leaves the DB
// exactly as Put would (values, expiry index, memory accounting), across
// size-class changes and expiry added or removed. The model is a map.
func TestOverwriteMatchesPut(t *testing.T) {
	st := NewStore(1, 16)
	sh := st.Shards()[0]
	sh.Lock()
	defer sh.Unlock()
	db := sh.DB(0)
	model := map[string]Value{}
	rnd := rand.New(rand.NewPCG(1, 2))
	for i := range 20000 {
		key := fmt.Sprintf("k%d", rnd.IntN(500))
		v := Value{Type: TypeString, Str: []byte(strings.Repeat("x", rnd.IntN(300)))}
		if rnd.IntN(3) == 0 {
			v.ExpireAt = 1 << 40
		}
		h := Hash([]byte(key))
		if e, ok := db.Find(h, []byte(key)); ok && i%2 == 0 {
			db.Overwrite(&e, []byte(key), v)
		} else {
			db.Put(h, []byte(key), v)
		}
		model[key] = v
	}
	withTTL := 0
	for key, v := range model {
		e, ok := db.Find(Hash([]byte(key)), []byte(key))
		if !ok || string(e.Str()) != string(v.Str) || e.ExpireAt() != v.ExpireAt {
			t.Fatalf("%s: found %v, %d bytes, expiry %d; want %d bytes, expiry %d", key, ok, len(e.Str()), e.ExpireAt(), len(v.Str), v.ExpireAt)
		}
		if v.ExpireAt != 0 {
			withTTL++
		}
	}
	if db.Len() != len(model) || db.ExpiresLen() != withTTL {
		t.Fatalf("%d keys, %d with TTL; want %d, %d", db.Len(), db.ExpiresLen(), len(model), withTTL)
	}
	var want int64
	for key, v := range model {
		want += int64(len(key) + len(v.Str))
	}
	if db.valBytes != want {
		t.Fatalf("value bytes %d, want %d", db.valBytes, want)
	}
}
