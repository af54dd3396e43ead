package shard

import "github.com/damselflydb/damselfly/shard/types"

// Hash field expiry (Redis 7.4+). A hash whose fields carry deadlines
// implements FieldExpirer; the shard never reads its fields, it only asks
// it to drop the expired ones:
//   - lazily, in LookupNoTouch, before any command sees the hash (a hash
//     whose last field expired is deleted, and the lookup misses) -- except
//     on a replica, while CLIENT PAUSE WRITE holds expiry, and for HLEN
//     (LookupStaleFields), which counts the fields not yet reclaimed as
//     Redis 7.4 does; there the readers hide expired fields themselves;
//   - actively, in ExpireCycle, over the keys the DB remembers as holding
//     such a hash (DB.fieldTTLKeys: a hint set, filled when a hash with
//     deadlines is stored, looked up or given one by NoteFieldTTL, and
//     pruned by the cycle when the key no longer qualifies).
// Both go through DB.Modify first (snapshot pre-change hook, WATCH) and
// report the deleted fields to OnFieldExpire (replication turns them into
// HDEL). A replica deletes nothing itself: its primary sends the HDELs.

// FieldExpirer is a value with parts that expire on their own.
type FieldExpirer interface {
	// NextFieldExpiry is a time at or before the earliest deadline, 0 for
	// none.
	NextFieldExpiry() int64
	// ExpireFields deletes the parts expired at now, telling fn of each;
	// w is the right to change the value (DB.Modify).
	ExpireFields(w types.W, now int64, fn func(field []byte)) int
	// FieldTTLs is the number of parts with a deadline.
	FieldTTLs() int
	Len() int
}

// fieldsDue returns e's value as a FieldExpirer when some of its fields are
// expired at now.
func fieldsDue(e *Entry, now int64) (FieldExpirer, bool) {
	if e.Type() != TypeHash {
		return nil, false
	}
	fe, ok := e.Obj().(FieldExpirer)
	if !ok {
		return nil, false
	}
	at := fe.NextFieldExpiry()
	return fe, at != 0 && at <= now
}

// expireFields drops e's expired fields; it reports whether the key went
// with its last field.
func (sh *Shard) expireFields(db int, d *DB, e *Entry, fe FieldExpirer, now int64) bool {
	key := append([]byte(nil), e.hdr.key...)
	w := d.Modify(e)
	var fields [][]byte
	fe.ExpireFields(w, now, func(f []byte) { fields = append(fields, f) })
	if len(fields) == 0 {
		return false
	}
	sh.expiredFields += int64(len(fields))
	gone := fe.Len() == 0
	if gone {
		d.Delete(e)
	}
	if sh.OnFieldExpire != nil {
		sh.OnFieldExpire(db, key, fields, gone)
	}
	return gone
}

// ExpiredFields is the number of hash fields this shard removed because
// they expired.
func (sh *Shard) ExpiredFields() int64 { return sh.expiredFields }

// NoteFieldTTL tells d that key holds a hash with field deadlines, for the
// active expiry cycle.
func (d *DB) NoteFieldTTL(key []byte) {
	if d.fieldTTLKeys == nil {
		d.fieldTTLKeys = map[string]struct{}{}
	}
	if _, ok := d.fieldTTLKeys[string(key)]; !ok {
		d.fieldTTLKeys[string(key)] = struct{}{}
	}
}

// noteStored registers key when v is a hash with field deadlines.
func (d *DB) noteStored(key []byte, v *Value) {
	if v.Type != TypeHash {
		return
	}
	if fe, ok := v.Obj.(FieldExpirer); ok && fe.FieldTTLs() > 0 {
		d.NoteFieldTTL(key)
	}
}

// fieldExpireCycle visits up to limit keys of d's field-deadline set,
// dropping their expired fields; it returns the fields deleted and the
// keys visited.
func (sh *Shard) fieldExpireCycle(db int, d *DB, now int64, limit int) (deleted, sampled int) {
	if len(d.fieldTTLKeys) == 0 {
		return 0, 0
	}
	var keys []string
	for k := range d.fieldTTLKeys {
		keys = append(keys, k)
		if len(keys) >= limit {
			break
		}
	}
	for _, k := range keys {
		sampled++
		kb := []byte(k)
		e, ok := d.Find(Hash(kb), kb)
		if !ok || e.Type() != TypeHash {
			delete(d.fieldTTLKeys, k)
			continue
		}
		fe, ok := e.Obj().(FieldExpirer)
		if !ok || fe.FieldTTLs() == 0 {
			delete(d.fieldTTLKeys, k)
			continue
		}
		if e.Expired(now) {
			continue // the key's own expiry handles it
		}
		if at := fe.NextFieldExpiry(); at != 0 && at <= now {
			before := fe.FieldTTLs()
			if sh.expireFields(db, d, &e, fe, now) {
				delete(d.fieldTTLKeys, k)
				deleted += before
				continue
			}
			deleted += before - fe.FieldTTLs()
			if fe.FieldTTLs() == 0 {
				delete(d.fieldTTLKeys, k)
			}
		}
	}
	return deleted, sampled
}
