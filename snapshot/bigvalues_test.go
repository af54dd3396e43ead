package snapshot

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/damselflydb/damselfly/shard"
)

// TestBigValuesAtTheCut: big strings are captured by reference and encoded
// off the shard lock (bigvalues.go). Writers overwrite them during the save
// by values of the same size (which would reuse the chunk), of another
// size, grow them in place, change their bytes in place after Modify
// (Unshare), delete them and write memcached items; the dump must hold
// every key as it was at the cut.
func TestBigValuesAtTheCut(t *testing.T) {
	const nkeys = 300
	st := shard.NewStore(3, 1)
	size := func(i int) int {
		switch {
		case i%50 == 0:
			return 1 << 20 // a few 1 MiB values
		case i%3 == 0:
			return 100 // small ones, encoded under the lock
		}
		return 20000 + i*97 // 20-50 KB: large slab chunks
	}
	fill := func(n int, tag byte) []byte { return bytes.Repeat([]byte{tag}, n) }
	for i := 0; i < nkeys; i++ {
		v := shard.Value{Type: shard.TypeString, Str: fill(size(i), byte('A'+i%26))}
		if i%7 == 0 {
			v.Meta, v.MCFlags = true, uint32(i)
		}
		if i%11 == 0 {
			v.ExpireAt = time.Now().Add(time.Hour).UnixMilli()
		}
		put(st, 0, fmt.Sprint("big", i), v)
	}
	var seq atomic.Int64
	writer := func(seed uint64) func(n int) {
		r := rand.New(rand.NewPCG(seed, 7))
		return func(n int) {
			i := r.IntN(nkeys)
			k := []byte(fmt.Sprint("big", i))
			sh, h := st.ShardOf(k)
			sh.Lock()
			s := byte(seq.Add(1))
			d := sh.DB(0)
			e, ok := sh.Lookup(0, h, k, time.Now().UnixMilli())
			switch op := r.IntN(6); {
			case !ok || op == 0: // same size: the chunk must not be reused in place
				d.Put(h, k, shard.Value{Type: shard.TypeString, Str: fill(size(i), s)})
			case op == 1: // another size
				d.Put(h, k, shard.Value{Type: shard.TypeString, Str: fill(size(i)+1+r.IntN(5000), s)})
			case op == 2: // grown in place
				if g, w, grown := d.GrowString(&e, len(e.Str())+1+r.IntN(100)); grown {
					p := g.StrW(w)
					p[0], p[len(p)-1] = s, s
				}
			case op == 3: // changed in place after Modify
				p := d.ModifyStr(&e)
				p[r.IntN(len(p))] = s
			case op == 4:
				d.Delete(&e)
			default: // a memcached item
				d.Put(h, k, shard.Value{Type: shard.TypeString, Str: fill(size(i), s), Meta: true, MCFlags: uint32(s)})
			}
			sh.Unlock()
			if n%16 == 0 {
				time.Sleep(50 * time.Microsecond) // let the save run
			}
		}
	}
	stats, _ := cutRace{
		writers: []func(int){writer(0), writer(1), writer(2)}, warmup: 100, seq: &seq,
		delay: 200 * time.Microsecond, opt: Options{MaxExtraMemory: 4 << 20},
		minOverlap: 100, loadShards: 2,
	}.run(t, st)
	t.Log(fmtWaits(stats))
}

func fmtWaits(s Stats) string {
	return fmt.Sprintf("hook max %v (work %v) (%d), hold max %v (%d), hook budget wait %v, in flight peak %d",
		s.HookMax, s.HookWorkMax, s.Hooks, s.HoldMax, s.Holds, s.HookBudgetWait, s.InFlightPeak)
}

// TestBigValuesMemoryBound: with 2 MiB values, a slow output and a writer
// overwriting every key as fast as it can, the bytes the save holds (the
// shared values it has not written yet included) stay under
// MaxExtraMemory: writers wait for room instead.
func TestBigValuesMemoryBound(t *testing.T) {
	const size, limit = 2 << 20, 6 << 20
	// 48 MiB of values against a 6 MiB bound; under -race, where every
	// 2 MiB copy is instrumented, 24 MiB (still four times the bound).
	keys := 24
	if raceEnabled {
		keys = 12
	}
	st := shard.NewStore(2, 1)
	val := func(i int, tag byte) []byte { return bytes.Repeat([]byte{tag, byte('a' + i%26)}, size/2) }
	for i := range keys {
		put(st, 0, fmt.Sprint("k", i), shard.Value{Type: shard.TypeString, Str: val(i, 'o')})
	}
	cut := make(chan struct{})
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		<-cut
		fresh := val(0, 'n')
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			put(st, 0, fmt.Sprint("k", i%keys), shard.Value{Type: shard.TypeString, Str: fresh})
		}
	}()
	var buf bytes.Buffer
	stats, err := Write(context.Background(), st, &slowWriter{&buf, time.Millisecond}, Options{MaxExtraMemory: limit, OnCut: func() { close(cut) }})
	close(stop)
	wg.Wait()
	if err != nil {
		t.Fatal(err)
	}
	checkOriginals(t, load(t, buf.Bytes(), 3), keys, val)
	if stats.InFlightPeak > limit || stats.InFlightPeak < size {
		t.Errorf("in flight at most %d bytes, limit %d", stats.InFlightPeak, limit)
	}
	t.Log(fmtWaits(stats))
}
