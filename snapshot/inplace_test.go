package snapshot

import (
	"fmt"
	"math/rand/v2"
	"sync/atomic"
	"testing"
	"time"

	"github.com/damselflydb/damselfly/shard"
)

// TestPointInTimeInPlaceStrings changes string values in place (after
// DB.Modify, as SETBIT, BITFIELD, PFADD and PFCOUNT do when the length does
// not change) and grows big ones in place (DB.GrowString) while a snapshot
// runs, and checks the file holds the values as of the cut.
func TestPointInTimeInPlaceStrings(t *testing.T) {
	const nkeys = 20000
	st := shard.NewStore(4, 1)
	for i := 0; i < nkeys; i++ {
		size := 64
		if i%100 == 0 {
			size = 20000 // big: grown in place by DB.GrowString
		}
		put(st, 0, fmt.Sprint("b", i), shard.Value{Type: shard.TypeString, Str: make([]byte, size)})
	}
	var seq atomic.Int64
	writer := func(seed uint64) func(n int) {
		r := rand.New(rand.NewPCG(seed, 2))
		return func(int) {
			k := []byte(fmt.Sprint("b", r.IntN(nkeys)))
			sh, h := st.ShardOf(k)
			sh.Lock()
			s := seq.Add(1)
			e, ok := sh.Lookup(0, h, k, time.Now().UnixMilli())
			if ok && len(e.Str()) >= 20000 && r.IntN(2) == 0 {
				if g, w, grown := sh.DB(0).GrowString(&e, len(e.Str())+1+r.IntN(3)); grown {
					p := g.StrW(w)
					p[len(p)-1] = byte(s)
				}
			} else if ok {
				p := sh.DB(0).ModifyStr(&e)
				p[r.IntN(len(p))] = byte(s)
			}
			sh.Unlock()
		}
	}
	cutRace{
		writers: []func(int){writer(0), writer(1), writer(2), writer(3)}, warmup: 200, seq: &seq,
		delay: 200 * time.Microsecond, minOverlap: 200, loadShards: 2,
	}.run(t, st)
}
