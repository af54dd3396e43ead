package snapshot

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/damselflydb/damselfly/shard"
	"github.com/damselflydb/damselfly/shard/types"
	"github.com/damselflydb/damselfly/snapshot/rdb"
)

func TestRoundTrip(t *testing.T) {
	future := time.Now().Add(time.Hour).UnixMilli()
	st := shard.NewStore(3, 16)
	fillAllTypes(st, future)
	want := contents(st, time.Now().UnixMilli(), true)
	data, stats := save(t, st, Options{})
	if stats.Keys != int64(len(want)) {
		t.Errorf("Stats.Keys = %d, want %d", stats.Keys, len(want))
	}
	for _, shards := range []int{1, 4} {
		got := load(t, data, shards)
		compareContents(t, want, contents(got, time.Now().UnixMilli(), true))
	}
	// RDB 11 and 12 too.
	for _, v := range []int{11, 12} {
		data, _ := save(t, st, Options{Version: v})
		compareContents(t, want, contents(load(t, data, 2), time.Now().UnixMilli(), true))
	}
}

func TestEmptyAndAux(t *testing.T) {
	st := shard.NewStore(2, 16)
	cut := 0
	aux := []rdb.Aux{{Key: "repl-offset", Value: "?"}}
	data, _ := save(t, st, Options{Aux: aux, OnCut: func() { cut++; aux[0].Value = "42" }})
	if cut != 1 {
		t.Fatalf("OnCut called %d times", cut)
	}
	info, err := rdb.Load(bytes.NewReader(data), "x", func(*rdb.Entry) error { return errors.New("no keys expected") })
	if err != nil {
		t.Fatal(err)
	}
	if info.Aux["repl-offset"] != "42" || info.Aux["redis-ver"] == "" || !info.ChecksumVerified {
		t.Fatalf("aux %v checksum %v", info.Aux, info.ChecksumVerified)
	}
}

// slowWriter stretches a snapshot so that writes overlap it.
type slowWriter struct {
	w     io.Writer
	delay time.Duration
}

func (s *slowWriter) Write(p []byte) (int, error) {
	time.Sleep(s.delay)
	return s.w.Write(p)
}

// TestPointInTime mutates keys of every type in every shard while a
// snapshot runs and checks the file holds exactly the data as of the cut.
func TestPointInTime(t *testing.T) {
	const nkeys = 20000
	st := shard.NewStore(4, 4)
	lim := &types.DefaultLimits
	for i := 0; i < nkeys; i++ {
		k := fmt.Sprint("k", i)
		switch i % 6 {
		case 0, 1:
			put(st, i%2, k, shard.Value{Type: shard.TypeString, Str: []byte("v0")})
		case 2:
			l, w := types.NewList()
			l.PushBack(w, lim, []byte("a"), []byte("b"))
			put(st, 0, k, shard.Value{Type: shard.TypeList, Obj: l})
		case 3:
			h, hw := types.NewHash()
			h.Set(hw, []byte("f"), []byte("0"), lim)
			put(st, 1, k, shard.Value{Type: shard.TypeHash, Obj: h})
		case 4:
			z, zw := types.NewZSet()
			z.Add(zw, []byte("m"), 0, 0, lim)
			put(st, 0, k, shard.Value{Type: shard.TypeZSet, Obj: z})
		case 5:
			x, xw := types.NewStream()
			x.Add(xw, types.StreamID{Ms: 1}, [][]byte{[]byte("f"), []byte("0")}, lim)
			put(st, 1, k, shard.Value{Type: shard.TypeStream, Obj: x})
		}
	}
	var seq atomic.Int64
	writer := func(seed uint64) func(n int) {
		r := rand.New(rand.NewPCG(seed, 1))
		return func(int) {
			i := r.IntN(nkeys * 2) // half of them do not exist yet
			k := []byte(fmt.Sprint("k", i))
			db := r.IntN(2)
			sh, h := st.ShardOf(k)
			sh.Lock()
			s := seq.Add(1)
			d := sh.DB(db)
			e, ok := sh.Lookup(db, h, k, time.Now().UnixMilli())
			switch {
			case !ok:
				d.Put(h, k, shard.Value{Type: shard.TypeString, Str: []byte(strconv.FormatInt(s, 10))})
			case r.IntN(8) == 0:
				d.Delete(&e)
			case e.Type() == shard.TypeString:
				d.Put(h, k, shard.Value{Type: shard.TypeString, Str: []byte(strings.Repeat("x", r.IntN(40)) + strconv.FormatInt(s, 10))})
			case e.Type() == shard.TypeList:
				w := d.Modify(&e)
				e.Obj().(*types.List).PushBack(w, lim, []byte(strconv.FormatInt(s, 10)))
			case e.Type() == shard.TypeHash:
				w := d.Modify(&e)
				e.Obj().(*types.Hash).Set(w, []byte(strconv.FormatInt(s%50, 10)), []byte(strconv.FormatInt(s, 10)), lim)
			case e.Type() == shard.TypeZSet:
				w := d.Modify(&e)
				e.Obj().(*types.ZSet).Add(w, []byte(strconv.FormatInt(s%30, 10)), float64(s), 0, lim)
			case e.Type() == shard.TypeStream:
				w := d.Modify(&e)
				x := e.Obj().(*types.Stream)
				id, _ := x.NextID(uint64(s))
				x.Add(w, id, [][]byte{[]byte("f"), []byte(strconv.FormatInt(s, 10))}, lim)
				if s%3 == 0 {
					x.Trim(w, types.TrimArgs{Enabled: true, MaxLen: true, N: 5})
				}
				if s%5 == 0 {
					g := x.Group([]byte("g"))
					if g == nil {
						g = x.CreateGroup(w, []byte("g"), types.StreamID{}, 0)
					}
					c, _ := g.CreateConsumer(w, []byte("c"), s, s)
					if first, ok := x.First(); ok {
						g.Deliver(w, c, first, s, true)
					}
				}
			}
			sh.Unlock()
		}
	}
	cutRace{
		writers: []func(int){writer(0), writer(1), writer(2), writer(3)}, warmup: 200, seq: &seq,
		delay: 200 * time.Microsecond, minOverlap: 200, loadShards: 3,
	}.run(t, st)
}

// TestFlushSwapDuringSnapshot: FLUSHALL, FLUSHDB and SWAPDB after the cut
// do not change what the snapshot holds.
func TestFlushSwapDuringSnapshot(t *testing.T) {
	st := shard.NewStore(2, 4)
	for db := 0; db < 3; db++ {
		for i := 0; i < 3000; i++ {
			put(st, db, fmt.Sprint("k", i), shard.Value{Type: shard.TypeString, Str: []byte(fmt.Sprint(db, "-", i))})
		}
	}
	want := contents(st, time.Now().UnixMilli(), true)
	var buf bytes.Buffer
	cut := make(chan struct{})
	done := make(chan error)
	go func() {
		_, err := Write(context.Background(), st, &slowWriter{&buf, time.Millisecond}, Options{OnCut: func() { close(cut) }})
		done <- err
	}()
	<-cut
	all := st.All()
	st.LockMany(&all)
	for _, sh := range st.Shards() {
		sh.SwapDB(0, 1)
		sh.FlushDB(2, false)
		sh.FlushDB(0, true)
	}
	st.UnlockMany(&all)
	for i := 0; i < 3000; i++ {
		put(st, 2, fmt.Sprint("k", i), shard.Value{Type: shard.TypeString, Str: []byte("new")})
		put(st, 1, fmt.Sprint("k", i), shard.Value{Type: shard.TypeString, Str: []byte("new")})
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	compareContents(t, want, contents(load(t, buf.Bytes(), 2), time.Now().UnixMilli(), true))
	// A second snapshot sees the new state.
	want = contents(st, time.Now().UnixMilli(), true)
	data, _ := save(t, st, Options{})
	compareContents(t, want, contents(load(t, data, 2), time.Now().UnixMilli(), true))
}

type failWriter struct{ n int }

func (f *failWriter) Write(p []byte) (int, error) {
	if f.n -= len(p); f.n < 0 {
		return 0, errors.New("disk full")
	}
	return len(p), nil
}

func TestWriteErrorAndCancel(t *testing.T) {
	st := shard.NewStore(2, 16)
	fillAllTypes(st, 0)
	if _, err := Write(context.Background(), st, &failWriter{n: 100000}, Options{}); err == nil || !strings.Contains(err.Error(), "disk full") {
		t.Fatalf("err = %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := Write(ctx, st, io.Discard, Options{}); !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v", err)
	}
	// The store is usable and snapshots again afterwards.
	want := contents(st, time.Now().UnixMilli(), true)
	data, _ := save(t, st, Options{})
	compareContents(t, want, contents(load(t, data, 2), time.Now().UnixMilli(), true))
}

func TestLoadErrors(t *testing.T) {
	st := shard.NewStore(2, 16)
	fillAllTypes(st, 0)
	data, _ := save(t, st, Options{})
	for _, n := range []int{5, 9, 200, len(data) / 2, len(data) - 3} {
		dst := shard.NewStore(2, 16)
		_, err := Load(dst, bytes.NewReader(data[:n]), "dump.rdb")
		var re *rdb.Error
		if !errors.As(err, &re) || re.File != "dump.rdb" {
			t.Fatalf("truncated at %d: err = %v", n, err)
		}
		if got := contents(dst, 0, true); len(got) != 0 {
			t.Fatalf("truncated at %d: %d keys kept", n, len(got))
		}
	}
	bad := bytes.Clone(data)
	bad[len(bad)/2] ^= 0x55
	if _, err := Load(shard.NewStore(2, 16), bytes.NewReader(bad), "dump.rdb"); err == nil {
		t.Fatal("corrupt file loaded")
	}
	// Too few databases.
	_, err := Load(shard.NewStore(2, 4), bytes.NewReader(data), "dump.rdb")
	if err == nil || !strings.Contains(err.Error(), "dump.rdb") || !strings.Contains(err.Error(), "--dbnum") {
		t.Fatalf("err = %v", err)
	}
}
