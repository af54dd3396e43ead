package snapshot

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/damselflydb/damselfly/shard"
)

// TestReserveSizes: the most common lengths first, one of each in turn,
// never more of a length than live values, never past the room.
func TestReserveSizes(t *testing.T) {
	for _, c := range []struct {
		counts map[int]int
		room   int64
		want   []int
	}{
		{map[int]int{10 << 20: 20}, 32 << 20, []int{10 << 20, 10 << 20, 10 << 20}},
		{map[int]int{10 << 20: 2}, 64 << 20, []int{10 << 20, 10 << 20}},
		{map[int]int{2 << 20: 5, 3 << 20: 1}, 10 << 20, []int{2 << 20, 3 << 20, 2 << 20, 2 << 20}},
		{map[int]int{40 << 20: 1, 1 << 20: 1}, 32 << 20, []int{1 << 20}},
		{map[int]int{}, 32 << 20, nil},
	} {
		if got := reserveSizes(c.counts, c.room); !slices.Equal(got, c.want) {
			t.Errorf("%v in %d: got %v, want %v", c.counts, c.room, got, c.want)
		}
	}
}

// TestReserveTakenByFirstOverwrites: a store with big strings gets a warm
// reserve before the cut, and the overwrites right after the cut, before
// the save wrote those keys, take it instead of new chunks; the dump still
// holds the values of the cut and the store the new ones. A store of small
// values gets none.
func TestReserveTakenByFirstOverwrites(t *testing.T) {
	const big, nbig = 2<<20 + 100, 4
	st := shard.NewStore(2, 1)
	old := func(i int) []byte { return bytes.Repeat([]byte{byte('a' + i)}, big) }
	for i := range nbig {
		put(st, 0, fmt.Sprint("big", i), shard.Value{Type: shard.TypeString, Str: old(i)})
	}
	for i := range 100 {
		put(st, 0, fmt.Sprint("small", i), shard.Value{Type: shard.TypeString, Str: []byte("v")})
	}
	want := contents(st, time.Now().UnixMilli(), true)

	prog := new(Progress)
	var buf bytes.Buffer
	done := make(chan Stats)
	go func() {
		stats, err := Write(context.Background(), st, &buf, Options{Progress: prog, MaxExtraMemory: 64 << 20,
			KeyDelay: func() time.Duration { return 20 * time.Millisecond }})
		if err != nil {
			t.Error(err)
		}
		done <- stats
	}()
	for prog.KeysTotal.Load() == 0 { // the cut
		time.Sleep(100 * time.Microsecond)
	}
	for i := range nbig {
		k := []byte(fmt.Sprint("big", i))
		sh, h := st.ShardOf(k)
		sh.Lock()
		sh.DB(0).Put(h, k, shard.Value{Type: shard.TypeString, Str: bytes.Repeat([]byte{'N'}, big)})
		sh.Unlock()
	}
	stats := <-done
	if stats.Reserve != nbig {
		t.Errorf("reserve of %d chunks, want %d", stats.Reserve, nbig)
	}
	// The key the save may have written first left its chunk to reuse in
	// place: the others took the reserve.
	if stats.SparesReused < nbig-1 {
		t.Errorf("%d overwrites took a warm chunk, want at least %d", stats.SparesReused, nbig-1)
	}
	compareContents(t, want, contents(load(t, buf.Bytes(), 2), time.Now().UnixMilli(), true))
	for i := range nbig {
		k := []byte(fmt.Sprint("big", i))
		sh, h := st.ShardOf(k)
		sh.Lock()
		e, ok := sh.Lookup(0, h, k, time.Now().UnixMilli())
		if !ok || !bytes.Equal(e.Str(), bytes.Repeat([]byte{'N'}, big)) {
			t.Errorf("big%d: not the overwrite", i)
		}
		sh.Unlock()
	}

	small := shard.NewStore(2, 1)
	for i := range 100 {
		put(small, 0, fmt.Sprint("small", i), shard.Value{Type: shard.TypeString, Str: bytes.Repeat([]byte("v"), 100<<10)})
	}
	if _, stats := save(t, small, Options{}); stats.Reserve != 0 {
		t.Errorf("reserve of %d chunks for 100 KB values", stats.Reserve)
	}
}
