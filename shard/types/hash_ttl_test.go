package types

import "testing"

func TestHashFieldTTL(t *testing.T) {
	h := newHash()
	for _, f := range []string{"a", "b", "c", "d"} {
		h.Set(wOf(h), []byte(f), []byte("v"), nil)
	}
	if h.NextFieldExpiry() != 0 || h.FieldTTLs() != 0 || h.ttl != nil {
		t.Fatal("a plain hash carries field deadlines")
	}
	h.SetFieldExpireAt(wOf(h), []byte("a"), 100)
	h.SetFieldExpireAt(wOf(h), []byte("b"), 200)
	h.SetFieldExpireAt(wOf(h), []byte("c"), 300)
	c := h.Clone()
	if h.NextFieldExpiry() != 100 || h.FieldTTLs() != 3 {
		t.Fatalf("next %d ttls %d", h.NextFieldExpiry(), h.FieldTTLs())
	}
	// HSET drops the deadline, SetKeepTTL keeps it, Delete forgets it.
	h.Set(wOf(h), []byte("c"), []byte("w"), nil)
	h.SetKeepTTL(wOf(h), []byte("b"), []byte("w"), nil)
	if h.FieldExpireAt([]byte("c")) != 0 || h.FieldExpireAt([]byte("b")) != 200 {
		t.Fatal("Set/SetKeepTTL")
	}
	var gone []string
	if n := h.ExpireFields(wOf(h), 150, func(f []byte) { gone = append(gone, string(f)) }); n != 1 || gone[0] != "a" || h.Exists([]byte("a")) {
		t.Fatalf("ExpireFields: %d %v", n, gone)
	}
	if h.NextFieldExpiry() != 200 {
		t.Fatalf("next %d after expiry", h.NextFieldExpiry())
	}
	h.Delete(wOf(h), []byte("b"))
	if h.ttl != nil {
		t.Fatal("deadlines kept after the last deadline's field went")
	}
	// The clone is independent.
	if c.FieldTTLs() != 3 || !c.Exists([]byte("a")) || c.ExpireFields(wOf(c), 1000, nil) != 3 || c.Len() != 1 {
		t.Fatal("clone")
	}
	if h.FieldTTLs() != 0 || h.Len() != 2 {
		t.Fatalf("original changed by its clone: ttls %d len %d", h.FieldTTLs(), h.Len())
	}
	// PersistField.
	h.SetFieldExpireAt(wOf(h), []byte("d"), 500)
	if !h.PersistField(wOf(h), []byte("d")) || h.PersistField(wOf(h), []byte("d")) || h.ttl != nil {
		t.Fatal("PersistField")
	}
}
