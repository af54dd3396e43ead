package snapshot

import (
	"errors"
	"fmt"

	"github.com/damselflydb/damselfly/shard"
	"github.com/damselflydb/damselfly/shard/types"
	"github.com/damselflydb/damselfly/snapshot/rdb"
)

// ErrUnsupported is returned for values Damselfly cannot hold (module
// values).
var ErrUnsupported = errors.New("value type not supported by Damselfly")

// Value is ValueWith under types.DefaultLimits.
func Value(e *rdb.Entry) (shard.Value, error) { return ValueWith(e, nil) }

// ValueWith converts a decoded RDB value into what a shard stores (its
// expiry and, for a string, its memcached flags included), choosing
// encodings by lim (the server's live thresholds, so a value reads back
// with the encoding the same commands would have built; nil:
// types.DefaultLimits). An empty collection gives a Value with a nil Obj:
// store nothing (Redis never keeps empty collections).
func ValueWith(e *rdb.Entry, lim *types.Limits) (shard.Value, error) {
	v := shard.Value{ExpireAt: max(e.ExpireAtMs, 0)}
	if lim == nil {
		lim = &types.DefaultLimits
	}
	switch e.Type {
	case rdb.String:
		v.Type, v.Str = shard.TypeString, e.String
		if e.MCFlags != 0 {
			// A memcached item: meta with CAS 0 (the memcached front end
			// stamps a fresh CAS unique when one is first needed).
			v.MCFlags, v.Meta = e.MCFlags, true
		}
	case rdb.List:
		v.Type = shard.TypeList
		if len(e.List) > 0 {
			l, w := types.NewList()
			l.PushBack(w, lim, e.List...)
			v.Obj = l
		}
	case rdb.Set:
		v.Type = shard.TypeSet
		if e.Listpack != nil { // lpvalue.go
			if s := setFromListpack(e.Listpack, e.ListpackLen, lim); s != nil {
				v.Obj = s
			}
		} else if len(e.Set) > 0 {
			s, w := types.NewSetSized(e.Set[0], len(e.Set), lim)
			for _, m := range e.Set {
				s.Add(w, m, lim)
			}
			v.Obj = s
		}
	case rdb.Hash:
		v.Type = shard.TypeHash
		if e.Listpack != nil { // lpvalue.go
			if h := hashFromListpack(e.Listpack, e.ListpackLen, lim); h != nil {
				v.Obj = h
			}
		} else if len(e.Hash) > 0 {
			h, w := types.NewHashSized(len(e.Hash), lim)
			for _, fv := range e.Hash {
				h.Set(w, fv[0], fv[1], lim)
			}
			setFieldTTLs(h, w, e) // fieldttl.go
			v.Obj = h
		}
	case rdb.ZSet:
		v.Type = shard.TypeZSet
		if len(e.ZSet) > 0 {
			maxLen, size := 0, 0
			for _, m := range e.ZSet {
				maxLen = max(maxLen, len(m.Member))
				size += types.ZSetEntrySize(len(m.Member))
			}
			z, w := types.NewZSetSized(len(e.ZSet), maxLen, lim)
			z.Reserve(w, size)
			for _, m := range e.ZSet {
				if _, _, err := z.Add(w, m.Member, m.Score, 0, lim); err != nil {
					return v, fmt.Errorf("member %q: %v", m.Member, err)
				}
			}
			v.Obj = z
		}
	case rdb.Stream:
		// Unlike other collections, an empty stream is a value (Redis keeps
		// it: XDEL of the last entry, XGROUP CREATE ... MKSTREAM).
		if e.Stream == nil {
			return v, fmt.Errorf("stream without a value")
		}
		st, err := streamFromRDB(e.Stream)
		if err != nil {
			return v, err
		}
		v.Type, v.Obj = shard.TypeStream, st
	default:
		return v, fmt.Errorf("%v: %w", e.Type, ErrUnsupported)
	}
	return v, nil
}

// Dump returns the DUMP payload (Redis's format, RDB 10) of an entry; call
// it under the entry's shard lock.
func Dump(e *shard.Entry) ([]byte, error) {
	var d rdb.Dumper
	switch e.Type() {
	case shard.TypeString:
		return d.String(e.Str())
	case shard.TypeList:
		if l, ok := e.Obj().(*types.List); ok {
			return d.List(l.Len(), func(yield func([]byte) bool) { l.Iterate(yield) })
		}
	case shard.TypeSet:
		if m, ok := e.Obj().(*types.Set); ok {
			return d.Set(m.Len(), func(yield func([]byte) bool) { m.Iterate(yield) })
		}
	case shard.TypeHash:
		if h, ok := e.Obj().(*types.Hash); ok {
			if h.FieldTTLs() > 0 {
				return dumpHashTTL(d, h) // fieldttl.go
			}
			return d.Hash(h.Len(), func(yield func([]byte, []byte) bool) { h.Iterate(yield) })
		}
	case shard.TypeZSet:
		if z, ok := e.Obj().(*types.ZSet); ok {
			return d.ZSet(z.Len(), func(yield func([]byte, float64) bool) { z.Iterate(yield) })
		}
	case shard.TypeStream:
		if s, ok := e.Obj().(*types.Stream); ok {
			return d.Stream(streamToRDB(s))
		}
	}
	return nil, errUnknownObject
}
