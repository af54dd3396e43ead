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

// TestMaxExtraMemory: with large values, a slow output and writers
// overwriting keys during the save, the bytes in flight stay under
// MaxExtraMemory (RDB and native), and the file still holds every key as
// it was at the cut.
func TestMaxExtraMemory(t *testing.T) {
	const keys, size, limit = 32, 128 << 10, 512 << 10
	for _, native := range []bool{false, true} {
		t.Run(fmt.Sprint("native=", native), func(t *testing.T) {
			st := shard.NewStore(2, 16)
			val := func(i int, tag byte) []byte { return bytes.Repeat([]byte{tag, byte('a' + i%26)}, size/2) }
			for i := range keys {
				put(st, 0, fmt.Sprint("k", i), shard.Value{Type: shard.TypeString, Str: val(i, 'o')})
			}
			cut := make(chan struct{})
			stop := make(chan struct{})
			var wg sync.WaitGroup
			wg.Add(1)
			go func() { // overwrite keys from the cut on
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
					time.Sleep(100 * time.Microsecond)
				}
			}()
			opt := Options{MaxExtraMemory: limit, OnCut: func() { close(cut) }}
			var stats Stats
			var data []byte
			var err error
			if native {
				dir := t.TempDir()
				path := dir + "/dump.rdb"
				stats, err = SaveNative(context.Background(), st, path, NativeOptions{Options: opt})
				close(stop)
				wg.Wait()
				if err != nil {
					t.Fatal(err)
				}
				fresh := shard.NewStore(3, 16)
				if _, err := LoadNative(fresh, path, LoadOptions{}); err != nil {
					t.Fatal(err)
				}
				checkOriginals(t, fresh, keys, val)
			} else {
				var buf bytes.Buffer
				stats, err = Write(context.Background(), st, &slowWriter{&buf, 200 * time.Microsecond}, opt)
				close(stop)
				wg.Wait()
				if err != nil {
					t.Fatal(err)
				}
				data = buf.Bytes()
				checkOriginals(t, load(t, data, 3), keys, val)
			}
			if stats.InFlightPeak > limit || stats.InFlightPeak < size {
				t.Errorf("in flight at most %d bytes, limit %d", stats.InFlightPeak, limit)
			}
		})
	}
}

func checkOriginals(t *testing.T, st *shard.Store, keys int, val func(int, byte) []byte) {
	t.Helper()
	n := 0
	for _, sh := range st.Shards() {
		d := sh.PeekDB(0)
		if d == nil {
			continue
		}
		for cur := uint64(0); ; {
			cur = d.Scan(cur, func(e *shard.Entry) {
				n++
				var i int
				fmt.Sscanf(string(e.Key()), "k%d", &i)
				if !bytes.Equal(e.Str(), val(i, 'o')) {
					t.Errorf("%s is not its value at the cut", e.Key())
				}
			})
			if cur == 0 {
				break
			}
		}
	}
	if n != keys {
		t.Fatalf("%d keys, want %d", n, keys)
	}
}
