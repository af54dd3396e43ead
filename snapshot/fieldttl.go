package snapshot

import (
	"fmt"
	"sync"

	"github.com/damselflydb/damselfly/shard/types"
	"github.com/damselflydb/damselfly/snapshot/rdb"
)

// Hash fields with their own TTL (Redis 7.4+ RDB 12 types 22-25, Valkey 9's
// RDB_TYPE_HASH_2) arrive as rdb.Entry.HashFieldExpireAtMs: field -> Unix
// ms, 0 = no TTL. A file load drops the fields already expired when the
// load started, as Redis does (and the key when none is left), and hands
// the other deadlines to the hash (Value). Saving writes such a hash as
// RDB_TYPE_HASH_METADATA (writeHashTTL) and every other hash as before,
// so dumps without field TTLs stay readable by Redis 7.0.

// maxNamedWarnings bounds the warnings that name keys; past it one line
// counts the rest.
const maxNamedWarnings = 100

// warnings collects a load's warnings from its producers.
type warnings struct {
	mu      sync.Mutex
	list    []string
	dropped int // warnings beyond maxNamedWarnings
}

func (w *warnings) add(s string) {
	w.mu.Lock()
	if len(w.list) < maxNamedWarnings {
		w.list = append(w.list, s)
	} else {
		w.dropped++
	}
	w.mu.Unlock()
}

func (w *warnings) result() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := append([]string(nil), w.list...)
	if w.dropped > 0 {
		out = append(out, fmt.Sprintf("... and %d more warnings", w.dropped))
	}
	return out
}

// pruneExpiredFields removes from e's hash (and its deadlines) the fields
// expired at nowMs; it returns how many it removed. The deadlines of the
// others stay in e.HashFieldExpireAtMs (nil when none is left).
func pruneExpiredFields(e *rdb.Entry, nowMs int64) (expired int) {
	ft := e.HashFieldExpireAtMs
	if ft == nil {
		return 0
	}
	kept := e.Hash[:0]
	live := 0
	for _, fv := range e.Hash {
		at := ft[string(fv[0])]
		switch {
		case at > 0 && at <= nowMs:
			expired++
			delete(ft, string(fv[0]))
			continue
		case at > 0:
			live++
		}
		kept = append(kept, fv)
	}
	clear(e.Hash[len(kept):])
	e.Hash = kept
	if live == 0 {
		e.HashFieldExpireAtMs = nil
	}
	return expired
}

// setFieldTTLs gives h the deadlines of e's fields.
func setFieldTTLs(h *types.Hash, w types.W, e *rdb.Entry) {
	for _, fv := range e.Hash {
		if at := e.HashFieldExpireAtMs[string(fv[0])]; at > 0 {
			h.SetFieldExpireAt(w, fv[0], at)
		}
	}
}

// minFieldTTL is the earliest field deadline of h (0: none).
func minFieldTTL(h *types.Hash) int64 {
	m := int64(0)
	h.EachFieldTTL(func(_ string, at int64) {
		if m == 0 || at < m {
			m = at
		}
	})
	return m
}

// writeHashTTL writes h, which has field deadlines, as
// RDB_TYPE_HASH_METADATA.
func writeHashTTL(w *rdb.Writer, key []byte, exp int64, h *types.Hash) error {
	return w.HashWithFieldTTLs(key, exp, h.Len(), minFieldTTL(h),
		func(yield func([]byte, []byte) bool) { h.Iterate(yield) }, h.FieldExpireAt)
}

// dumpHashTTL is writeHashTTL for DUMP.
func dumpHashTTL(d rdb.Dumper, h *types.Hash) ([]byte, error) {
	return d.HashWithFieldTTLs(h.Len(), minFieldTTL(h),
		func(yield func([]byte, []byte) bool) { h.Iterate(yield) }, h.FieldExpireAt)
}
