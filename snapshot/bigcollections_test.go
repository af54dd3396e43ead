package snapshot

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/damselflydb/damselfly/shard"
	"github.com/damselflydb/damselfly/shard/types"
)

// TestBigCollectionsAtTheCut: big collections (over bigObj bytes) are
// captured by reference and encoded off the shard lock (bigvalues.go).
// Writers change them in place after Modify (which must make the save
// clone what it has not encoded), overwrite them with new objects or
// strings, delete them, and readers iterate them meanwhile (the encoder
// reads them unlocked: -race checks that reads change nothing); the dump
// must hold every key as it was at the cut.
func TestBigCollectionsAtTheCut(t *testing.T) {
	const nkeys = 80
	lim := &types.DefaultLimits
	st := shard.NewStore(3, 1)
	elems := func(i int) int {
		if i%4 == 0 {
			return 20 // small: encoded under the lock
		}
		return 200 + i // × ~130 bytes: over bigObj
	}
	pad := strings.Repeat("p", 120)
	build := func(i int, tag string) shard.Value {
		n := elems(i)
		switch i % 5 {
		case 0:
			l, w := types.NewList()
			l.PushBack(w, lim, bss(n, func(j int) string { return fmt.Sprint(tag, j, "-list-element", pad) })...)
			return shard.Value{Type: shard.TypeList, Obj: l}
		case 1:
			h, w := types.NewHash()
			for j := range n {
				h.Set(w, []byte(fmt.Sprint("f", j)), []byte(fmt.Sprint(tag, j, "-hash-value", pad)), lim)
			}
			return shard.Value{Type: shard.TypeHash, Obj: h, ExpireAt: time.Now().Add(time.Hour).UnixMilli()}
		case 2:
			s, w := types.NewSet()
			for j := range n {
				s.Add(w, []byte(fmt.Sprint(tag, j, "-member", pad)), lim)
			}
			return shard.Value{Type: shard.TypeSet, Obj: s}
		case 3:
			z, w := types.NewZSet()
			for j := range n {
				z.Add(w, []byte(fmt.Sprint(tag, j, "-zmember", pad)), float64(j)/7, 0, lim)
			}
			return shard.Value{Type: shard.TypeZSet, Obj: z}
		}
		return shard.Value{Type: shard.TypeStream, Obj: testStream(n, time.Now().UnixMilli())}
	}
	for i := range nkeys {
		put(st, 0, fmt.Sprint("c", i), build(i, "o"))
	}
	var seq atomic.Int64
	writer := func(seed uint64) func(n int) {
		r := rand.New(rand.NewPCG(seed, 11))
		return func(n int) {
			i := r.IntN(nkeys)
			k := []byte(fmt.Sprint("c", i))
			sh, h := st.ShardOf(k)
			sh.Lock()
			s := fmt.Sprint("w", seq.Add(1))
			d := sh.DB(0)
			e, ok := sh.Lookup(0, h, k, time.Now().UnixMilli())
			switch op := r.IntN(16); {
			case !ok || op == 0: // a new object
				d.Put(h, k, build(i, s))
			case op == 1: // a string over the collection
				d.Put(h, k, shard.Value{Type: shard.TypeString, Str: []byte(s)})
			case op == 2:
				d.Delete(&e)
			case e.Type() == shard.TypeString:
				d.Put(h, k, build(i, s))
			default: // changed in place
				w := d.Modify(&e)
				switch o := e.Obj().(type) {
				case *types.List:
					o.PushBack(w, lim, []byte(s))
					o.PopFront(w, 1)
				case *types.Hash:
					o.Set(w, []byte("f1"), []byte(s), lim)
				case *types.Set:
					o.Add(w, []byte(s), lim)
				case *types.ZSet:
					o.Add(w, []byte("o1-zmember"+pad), -1, 0, lim)
				case *types.Stream:
					o.Trim(w, types.TrimArgs{Enabled: true, MaxLen: true, N: uint64(max(o.Len()-1, 0))})
				}
			}
			sh.Unlock()
			if n%8 == 0 {
				time.Sleep(50 * time.Microsecond) // let the save run
			}
		}
	}
	reader := func(i int) { // iterates collections as commands do, shard locked
		k := []byte(fmt.Sprint("c", i%nkeys))
		sh, h := st.ShardOf(k)
		sh.Lock()
		if e, ok := sh.Lookup(0, h, k, time.Now().UnixMilli()); ok {
			canonEntry(&e)
		}
		sh.Unlock()
		time.Sleep(20 * time.Microsecond)
	}
	stats, _ := cutRace{
		writers: []func(int){writer(0), writer(1), writer(2), reader}, warmup: 50, seq: &seq,
		delay: 2 * time.Millisecond, opt: Options{MaxExtraMemory: 1 << 20},
		minOverlap: 50, loadShards: 2,
	}.run(t, st)
	t.Logf("%s; %v", fmtWaits(stats), stats.Waits)
}
