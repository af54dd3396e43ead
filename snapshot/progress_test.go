package snapshot

import (
	"bytes"
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/damselflydb/damselfly/shard"
)

// TestKeysCountedWithWriters: with writers capturing buckets through the
// pre-change hook while the traversal runs (each counts its keys in its
// own way, batched per lock hold or per hook), Stats.Keys and
// Progress.Keys end at the keys of the cut, and the dump holds every key
// with its value at the cut, small strings (one append), integers and
// strings with memcached flags (the record writer) mixed in one stream,
// some with an expiry.
func TestKeysCountedWithWriters(t *testing.T) {
	const keys = 20000
	future := time.Now().Add(time.Hour).UnixMilli()
	st := shard.NewStore(2, 1)
	val := func(i int, tag byte) []byte {
		switch i % 3 {
		case 0:
			return []byte(fmt.Sprint(i)) // integer encoded
		case 1:
			return bytes.Repeat([]byte{tag}, 100)
		}
		return bytes.Repeat([]byte{tag, 'x'}, 30)
	}
	for i := range keys {
		v := shard.Value{Type: shard.TypeString, Str: val(i, 'o')}
		if i%7 == 0 {
			v.Meta, v.MCFlags = true, uint32(i)
		}
		if i%11 == 0 {
			v.ExpireAt = future + int64(i)
		}
		put(st, 0, fmt.Sprint("k", i), v)
	}
	cut, stop := make(chan struct{}), make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { // overwrite and delete keys from the cut on
		defer wg.Done()
		<-cut
		for i := 0; ; i = (i + 7919) % keys {
			select {
			case <-stop:
				return
			default:
			}
			k := fmt.Sprint("k", i)
			if i%5 == 0 {
				sh, h := st.ShardOf([]byte(k))
				sh.Lock()
				if e, ok := sh.DB(0).Find(h, []byte(k)); ok {
					sh.DB(0).Delete(&e)
				}
				sh.Unlock()
			} else {
				put(st, 0, k, shard.Value{Type: shard.TypeString, Str: []byte("new")})
			}
			time.Sleep(time.Microsecond)
		}
	}()
	prog := new(Progress)
	var buf bytes.Buffer
	stats, err := Write(context.Background(), st, &slowWriter{&buf, 50 * time.Microsecond},
		Options{Progress: prog, OnCut: func() { close(cut) }, MaxExtraMemory: 512 << 10})
	close(stop)
	wg.Wait()
	if err != nil {
		t.Fatal(err)
	}
	if stats.Keys != keys || prog.Keys.Load() != keys {
		t.Errorf("Stats.Keys %d, Progress.Keys %d, want %d", stats.Keys, prog.Keys.Load(), keys)
	}
	if stats.Hooks == 0 {
		t.Error("no write captured a bucket: the test did not exercise the hook")
	}
	t.Logf("%d hooks captured buckets", stats.Hooks)
	loaded := load(t, buf.Bytes(), 3)
	for i := range keys {
		k := []byte(fmt.Sprint("k", i))
		sh, h := loaded.ShardOf(k)
		e, ok := sh.DB(0).Find(h, k)
		if !ok {
			t.Fatalf("k%d missing", i)
		}
		if !bytes.Equal(e.Str(), val(i, 'o')) {
			t.Fatalf("k%d = %q, not its value at the cut", i, e.Str())
		}
		if i%7 == 0 && e.MCFlags() != uint32(i) || i%7 != 0 && e.MCFlags() != 0 {
			t.Fatalf("k%d flags %d", i, e.MCFlags())
		}
		if i%11 == 0 && e.ExpireAt() != future+int64(i) || i%11 != 0 && e.ExpireAt() != 0 {
			t.Fatalf("k%d expires at %d", i, e.ExpireAt())
		}
	}
}
