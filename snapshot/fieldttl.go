package snapshot

import (
	"fmt"
	"sync"

	"github.com/damselflydb/damselfly/snapshot/rdb"
)

// Hash fields with their own TTL (Redis 7.4+ RDB 12 types 22-25, Valkey 9's
// RDB_TYPE_HASH_2) arrive as rdb.Entry.HashFieldExpireAtMs: field -> Unix
// ms, 0 = no TTL. The shards' hashes have no field expiry yet, so a file
// load keeps every field still alive and drops the TTLs, and says so: one
// warning per such key (Stats.Warnings, logged by the server), never
// silently. Fields already expired when the load started are dropped, as
// Redis does when it loads them. RESTORE (Value alone) still refuses such
// a payload: a single key has no log line to carry the loss.
//
// When the shards' hashes gain field TTLs this is the one place to change:
// keep e.HashFieldExpireAtMs and hand it to the hash in Value.

// maxNamedWarnings bounds the warnings that name keys; past it one line
// counts the rest.
const maxNamedWarnings = 100

// warnings collects a load's warnings from its producers.
type warnings struct {
	mu      sync.Mutex
	list    []string
	dropped int // keys whose field TTLs were dropped beyond maxNamedWarnings
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
		out = append(out, fmt.Sprintf("... and %d more keys whose hash field TTLs were dropped", w.dropped))
	}
	return out
}

// dropFieldTTLs removes from e's hash the fields expired at nowMs and
// forgets the other fields' TTLs. It returns how many TTLs of live fields
// were dropped and how many expired fields were removed.
func dropFieldTTLs(e *rdb.Entry, nowMs int64) (ttls, expired int) {
	ft := e.HashFieldExpireAtMs
	if ft == nil {
		return 0, 0
	}
	kept := e.Hash[:0]
	for _, fv := range e.Hash {
		at := ft[string(fv[0])]
		switch {
		case at > 0 && at <= nowMs:
			expired++
			continue
		case at > 0:
			ttls++
		}
		kept = append(kept, fv)
	}
	clear(e.Hash[len(kept):])
	e.Hash = kept
	e.HashFieldExpireAtMs = nil
	return ttls, expired
}
