package snapshot

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/damselflydb/damselfly/shard"
)

// TestOverwrittenChunksRecycled: writers overwrite big strings with values
// of the same size while a slow save runs, so the save is left the old
// chunks (shard.ChunkRecycler.Overwritten) and hands them, once written, to
// later overwrites (Spare). A chunk handed back too early would put a
// later value into the dump, or let the dump's bytes into the store: the
// dump must hold every key as at the cut, and the store every key's last
// write, byte for byte. Raw strings (written from the chunk by writeBig)
// and compressed ones (copied by the encoder) take different paths to done.
func TestOverwrittenChunksRecycled(t *testing.T) {
	for _, compress := range []bool{false, true} {
		t.Run(fmt.Sprint("compress=", compress), func(t *testing.T) {
			const nkeys = 40
			st := shard.NewStore(2, 1)
			size := func(i int) int {
				if i%20 == 0 {
					return 1 << 20
				}
				return 40000 + i%3*1000 // three sizes of large chunk
			}
			// A value names its key and its write everywhere: a stale or
			// mixed chunk cannot pass for it.
			val := func(i int, seq uint64) []byte {
				var p [16]byte
				binary.LittleEndian.PutUint64(p[:], uint64(i))
				binary.LittleEndian.PutUint64(p[8:], seq)
				return bytes.Repeat(p[:], size(i)/16)
			}
			order := rand.New(rand.NewPCG(1, 2)).Perm(nkeys)
			var reached atomic.Int32
			reached.Store(1)
			last := make([]uint64, nkeys) // the last write of each key, under its shard's lock
			for i := range nkeys {
				put(st, 0, fmt.Sprint("k", i), shard.Value{Type: shard.TypeString, Str: val(i, 0)})
			}
			var seq atomic.Int64
			writer := func(w int) func(n int) {
				r := rand.New(rand.NewPCG(uint64(w), 3))
				return func(n int) {
					// One writer reaches a key not overwritten yet every
					// few ms, once the save wrote the chunks earlier
					// overwrites left it: those want spares. The others
					// overwrite the keys it has reached.
					i := order[r.IntN(int(reached.Load()))]
					if w == 0 {
						i = order[n%nkeys]
						time.Sleep(4 * time.Millisecond)
						reached.Store(int32(min(n+1, nkeys)))
					}
					k := []byte(fmt.Sprint("k", i))
					sh, h := st.ShardOf(k)
					sh.Lock()
					s := uint64(seq.Add(1))
					sh.DB(0).Put(h, k, shard.Value{Type: shard.TypeString, Str: val(i, s)})
					last[i] = s
					sh.Unlock()
					if w != 0 {
						runtime.Gosched()
					}
				}
			}
			stats, overlapped := cutRace{
				// The save starts after 50 writes of writer 1: writer 0
				// sleeps between its writes.
				writers: []func(int){writer(1), writer(0), writer(2)}, warmup: 50, seq: &seq,
				delay: 100 * time.Microsecond, opt: Options{
					Compress: compress, MaxExtraMemory: 8 << 20,
					KeyDelay: func() time.Duration { return 2 * time.Millisecond }, // a save that lasts
				},
				loadShards: 2,
			}.run(t, st)
			for i := range nkeys {
				k := []byte(fmt.Sprint("k", i))
				sh, h := st.ShardOf(k)
				sh.Lock()
				e, ok := sh.Lookup(0, h, k, time.Now().UnixMilli())
				if !ok || !bytes.Equal(e.Str(), val(i, last[i])) {
					t.Errorf("key %d: not its last write (%d) after the save", i, last[i])
				}
				sh.Unlock()
			}
			if stats.SparesReused == 0 {
				t.Errorf("no overwrite took a spare chunk (%d kept, %d writes during the save)", stats.SparesKept, overlapped)
			}
			if stats.InFlightPeak > 8<<20+1<<20+64 {
				t.Errorf("in flight peak %d over the limit", stats.InFlightPeak)
			}
			t.Logf("spares kept %d, reused %d; in flight peak %d", stats.SparesKept, stats.SparesReused, stats.InFlightPeak)
		})
	}
}

// TestBudgetSpares: spares count against the limit but not in flight (so
// they never close the gate), are kept only where they fit, are shed by
// any charge that needs their room, and are handed out only for a size
// they fit within an eighth.
func TestBudgetSpares(t *testing.T) {
	g := &WriterGate{}
	b := newBudget(100, g)
	if !b.tryAcquire(30) {
		t.Fatal("30 of 100 refused")
	}
	b.addSpare(make([]byte, 40))
	b.addSpare(make([]byte, 40)) // 30 + 40 + 40 > 100: not kept
	if b.spareBytes != 40 || len(b.spares) != 1 {
		t.Fatalf("spares %d bytes in %d, want one of 40", b.spareBytes, len(b.spares))
	}
	if g.Closed() {
		t.Fatal("a spare closed the gate (30 in flight, soft limit 50)")
	}
	if c := b.spare(30); c != nil {
		t.Fatalf("a 40-byte spare handed out for 30 bytes (len %d)", len(c))
	}
	if c := b.spare(36); len(c) != 36 || cap(c) != 36 {
		t.Fatalf("spare(36) = len %d cap %d, want the 40-byte chunk cut to 36", len(c), cap(c))
	}
	if b.spareBytes != 0 {
		t.Fatalf("%d spare bytes left after the only one was taken", b.spareBytes)
	}
	b.addSpare(make([]byte, 40))
	if !b.tryAcquire(50) { // needs the spare's room: 30 + 40 + 50 > 100
		t.Fatal("50 more refused while a spare held the room")
	}
	if len(b.spares) != 0 || b.used != 80 {
		t.Fatalf("after the charge: %d spares, %d in flight; want the spare shed, 80", len(b.spares), b.used)
	}
	if b.maxUsed() > 100 {
		t.Fatalf("peak %d over the limit 100", b.maxUsed())
	}
	b.release(80)
	b.addSpare(make([]byte, 40))
	b.dropSpares()
	if len(b.spares) != 0 || b.spareBytes != 0 || b.used != 0 {
		t.Fatalf("after dropSpares: %d spares, %d bytes, %d in flight", len(b.spares), b.spareBytes, b.used)
	}
	if kept, reused := b.spareCounts(); kept != 3 || reused != 1 {
		t.Fatalf("spares kept %d, reused %d; want 3, 1", kept, reused)
	}
}

// TestBudgetLiveWaitsForSpares: the live value encoder does not shed
// spares while something is in flight (it can wait for the output; an
// overwrite without a spare would fault with its shard locked), and sheds
// them once nothing is, so it never waits for good.
func TestBudgetLiveWaitsForSpares(t *testing.T) {
	b := newBudget(100, &WriterGate{})
	b.tryAcquire(10)
	b.addSpare(make([]byte, 65))
	if b.tryAcquireLive(40) { // 10 + 65 + 40 > 100
		t.Fatal("the live encoder took the spare's room with 10 bytes in flight")
	}
	if len(b.spares) != 1 {
		t.Fatal("the live encoder shed a spare with 10 bytes in flight")
	}
	if !b.tryAcquireLive(25) { // 10 + 65 + 25 <= 100, 35 <= soft
		t.Fatal("refused room beside the spare")
	}
	b.release(35)
	if !b.tryAcquireLive(40) || len(b.spares) != 0 { // 0 + 65 + 40 > 100: shed
		t.Fatalf("with nothing in flight: spares %d, want the encoder to shed them and go on", len(b.spares))
	}
}
