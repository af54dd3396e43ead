package shard

import (
	"bytes"
	"testing"
)

// TestGrowString grows a big string a few bytes at a time and checks the
// value, its length, that it stays in place (no new chunk), and that a
// small string or a length whose encoding changes size is refused.
func TestGrowString(t *testing.T) {
	st := NewStore(1, 1)
	sh := st.Shards()[0]
	d := sh.DB(0)
	key := []byte("big")
	h := Hash(key)
	want := bytes.Repeat([]byte{7}, 20000)
	d.Put(h, key, Value{Type: TypeString, Str: want, ExpireAt: 1 << 50})
	for i := 0; i < 3000; i++ {
		e, ok := d.Find(h, key)
		if !ok {
			t.Fatal("lost the key")
		}
		n := len(want) + 1 + i%5
		e2, w, grown := d.GrowString(&e, n)
		if !grown {
			t.Fatalf("step %d: GrowString(%d) refused", i, n)
		}
		want = append(want, make([]byte, n-len(want))...)
		p := e2.StrW(w)
		p[len(p)-1] = byte(i)
		want[len(want)-1] = byte(i)
		if e2.ExpireAt() != 1<<50 {
			t.Fatal("the TTL was lost")
		}
	}
	e, _ := d.Find(h, key)
	if !bytes.Equal(e.Str(), want) {
		t.Fatalf("value differs (len %d, want %d)", len(e.Str()), len(want))
	}
	if _, _, ok := d.GrowString(&e, len(want)*200); ok {
		t.Fatal("grew across a change of the length's encoding size")
	}
	small := []byte("small")
	hs := Hash(small)
	d.Put(hs, small, Value{Type: TypeString, Str: []byte("abc")})
	es, _ := d.Find(hs, small)
	if _, _, ok := d.GrowString(&es, 10); ok {
		t.Fatal("grew a small chunk in place")
	}
}
