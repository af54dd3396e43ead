package rdb

import (
	"encoding/binary"
	"fmt"
	"iter"
)

// HashWithFieldTTLs writes a hash some of whose fields have their own
// deadline as Redis 7.4's RDB_TYPE_HASH_METADATA (24): the earliest field
// deadline (8 bytes, little endian, Unix ms), the field count, then per
// field its deadline relative to that minimum plus one (0: none) as a
// length, the field and the value. Only such hashes use it, so every
// other value stays readable by Redis 7.0. ttl returns a field's deadline
// (0: none); minExpire must be the smallest of them.
func (w *Writer) HashWithFieldTTLs(key []byte, expireAtMs int64, n int, minExpire int64, fields iter.Seq2[[]byte, []byte], ttl func(field []byte) int64) error {
	if w.err != nil {
		return w.err
	}
	if n <= 0 {
		return w.fail(fmt.Errorf("rdb: hash %q: empty", key))
	}
	if minExpire <= 0 {
		return w.fail(fmt.Errorf("rdb: hash %q: no field deadline", key))
	}
	w.begin(typeHashMeta, key, expireAtMs)
	w.scratch = binary.LittleEndian.AppendUint64(w.scratch[:0], uint64(minExpire))
	w.write(w.scratch)
	w.writeLength(uint64(n))
	count := 0
	for f, v := range fields {
		if count == n {
			return w.fail(errCount("hash", key, n, count+1))
		}
		rel := uint64(0)
		if at := ttl(f); at > 0 {
			if at < minExpire {
				return w.fail(fmt.Errorf("rdb: hash %q: field deadline %d before the minimum %d", key, at, minExpire))
			}
			rel = uint64(at-minExpire) + 1
		}
		w.writeLength(rel)
		w.writeString(f)
		w.writeString(v)
		count++
		if w.err != nil {
			return w.err
		}
	}
	if count != n {
		return w.fail(errCount("hash", key, n, count))
	}
	return w.err
}

// HashWithFieldTTLs returns the DUMP payload of a hash with field
// deadlines (see Writer.HashWithFieldTTLs).
func (d Dumper) HashWithFieldTTLs(n int, minExpire int64, fields iter.Seq2[[]byte, []byte], ttl func(field []byte) int64) ([]byte, error) {
	return d.run(func(w *Writer) error { return w.HashWithFieldTTLs(nil, 0, n, minExpire, fields, ttl) })
}
