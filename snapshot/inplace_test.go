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
	var (
		want    map[string]string
		stop    atomic.Bool
		cutSeq  atomic.Int64
		seq     atomic.Int64
		wg      sync.WaitGroup
		started = make(chan struct{})
	)
	writer := func(seed uint64) {
		defer wg.Done()
		r := rand.New(rand.NewPCG(seed, 2))
		for n := 0; !stop.Load(); n++ {
			if n == 200 && seed == 0 {
				close(started)
			}
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
	for w := 0; w < 4; w++ {
		wg.Add(1)
		go writer(uint64(w))
	}
	<-started
	var buf bytes.Buffer
	_, err := Write(context.Background(), st, &slowWriter{&buf, 200 * time.Microsecond}, Options{OnCut: func() {
		cutSeq.Store(seq.Load())
		want = contents(st, time.Now().UnixMilli(), false)
	}})
	after := seq.Load()
	stop.Store(true)
	wg.Wait()
	if err != nil {
		t.Fatal(err)
	}
	if after-cutSeq.Load() < 200 {
		t.Fatalf("only %d writes overlapped the snapshot", after-cutSeq.Load())
	}
	compareContents(t, want, contents(load(t, buf.Bytes(), 2), time.Now().UnixMilli(), true))
}
