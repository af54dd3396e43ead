package types

// Hash field expiry (Redis 7.4+): a hash may give some of its fields their
// own deadline. The deadlines live in a side map that only hashes with at
// least one such field carry (ttl == nil otherwise), so a plain hash pays
// one nil pointer. The hash never reads the clock: whoever holds it (the
// shard's Lookup) calls ExpireFields before using it, so expired fields
// are never seen.
//
// Invariants: every key of ttl.at is a field of the hash, with a deadline
// > 0 (Unix ms); ttl.min is <= every deadline in ttl.at (a lower bound,
// exact after ExpireFields); ttl is nil when ttl.at is empty.

type fieldTTL struct {
	at  map[string]int64
	min int64
}

// FieldExpireAt returns field's deadline in Unix ms, 0 when it has none.
func (h *Hash) FieldExpireAt(field []byte) int64 {
	if h.ttl == nil {
		return 0
	}
	return h.ttl.at[string(field)]
}

// setFieldExpireAt gives the existing field the deadline at (Unix ms, > 0).
func (h *Hash) setFieldExpireAt(field []byte, at int64) {
	if h.ttl == nil {
		h.ttl = &fieldTTL{at: map[string]int64{}, min: at}
	}
	h.ttl.at[string(field)] = at
	if at < h.ttl.min {
		h.ttl.min = at
	}
}

// persistField removes field's deadline and reports whether it had one.
func (h *Hash) persistField(field []byte) bool {
	if h.ttl == nil {
		return false
	}
	if _, ok := h.ttl.at[string(field)]; !ok {
		return false
	}
	h.forgetTTL(field)
	return true
}

func (h *Hash) forgetTTL(field []byte) {
	if h.ttl == nil {
		return
	}
	delete(h.ttl.at, string(field))
	if len(h.ttl.at) == 0 {
		h.ttl = nil
	}
}

// NextFieldExpiry returns a time at or before the earliest field deadline
// (0 when no field has one): nothing expires before it.
func (h *Hash) NextFieldExpiry() int64 {
	if h.ttl == nil {
		return 0
	}
	return h.ttl.min
}

// FieldTTLs is the number of fields with a deadline.
func (h *Hash) FieldTTLs() int {
	if h.ttl == nil {
		return 0
	}
	return len(h.ttl.at)
}

// EachFieldTTL calls fn for every field with a deadline.
func (h *Hash) EachFieldTTL(fn func(field string, at int64)) {
	if h.ttl == nil {
		return
	}
	for f, at := range h.ttl.at {
		fn(f, at)
	}
}

// expireFields deletes the fields whose deadline is at or before now,
// calling fn (may be nil) with each, and returns how many it deleted.
func (h *Hash) expireFields(now int64, fn func(field []byte)) int {
	if h.ttl == nil || h.ttl.min > now {
		return 0
	}
	var dead []string
	min := int64(0)
	for f, at := range h.ttl.at {
		if at <= now {
			dead = append(dead, f)
		} else if min == 0 || at < min {
			min = at
		}
	}
	h.ttl.min = min
	for _, f := range dead {
		h.delete([]byte(f))
		if fn != nil {
			fn([]byte(f))
		}
	}
	return len(dead)
}

func (t *fieldTTL) clone() *fieldTTL {
	if t == nil {
		return nil
	}
	c := &fieldTTL{at: make(map[string]int64, len(t.at)), min: t.min}
	for f, at := range t.at {
		c.at[f] = at
	}
	return c
}

func (t *fieldTTL) memoryUsage() int {
	if t == nil {
		return 0
	}
	n := 64
	for f := range t.at {
		n += len(f) + 32
	}
	return n
}
