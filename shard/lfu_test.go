package shard

import "testing"

// TestLFUCounter: Redis's decay (one per lfu-decay-time minutes, wrapping
// 16-bit minutes) and logarithmic increment.
func TestLFUCounter(t *testing.T) {
	st := NewStore(1, 1)
	st.SetLFU(true, 10, 1)
	if got := lfuDecr(100<<8|20, 103, 1); got != 17 {
		t.Fatalf("3 minutes at decay 1: %d, want 17", got)
	}
	if got := lfuDecr(100<<8|20, 110, 5); got != 18 {
		t.Fatalf("10 minutes at decay 5: %d, want 18", got)
	}
	if got := lfuDecr(65530<<8|20, 4, 1); got != 11 { // 65535-65530+4 = 9 minutes
		t.Fatalf("across the wrap: %d, want 11", got)
	}
	if got := lfuDecr(100<<8|3, 200, 1); got != 0 {
		t.Fatalf("decay below zero: %d", got)
	}
	if got := lfuDecr(100<<8|20, 200, 0); got != 20 {
		t.Fatalf("decay time 0 never decays: %d", got)
	}
	sh := st.Shards()[0]
	sh.Lock()
	defer sh.Unlock()
	d := sh.DB(0)
	e := d.Put(Hash([]byte("k")), []byte("k"), Value{Type: TypeString, Str: []byte("v")})
	if c := int(e.Atime() & 255); c != LFUInitVal {
		t.Fatalf("new key counter %d", c)
	}
	// With log factor 10 the counter grows logarithmically: a million
	// accesses reach about 255 only with factor 0; with 10, ~100 accesses
	// give about 5 + a few.
	for range 100 {
		d.Touch(&e)
	}
	if c := int(e.Atime() & 255); c < 6 || c > 12 {
		t.Fatalf("after 100 accesses at factor 10: %d", c)
	}
	st.SetLFU(true, 0, 1)
	before := int(e.Atime() & 255)
	d.Touch(&e)
	if c := int(e.Atime() & 255); c != before+1 {
		t.Fatalf("factor 0 increments every access: %d -> %d", before, c)
	}
}
