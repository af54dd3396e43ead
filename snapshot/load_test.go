package snapshot

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/damselflydb/damselfly/shard"
	"github.com/damselflydb/damselfly/snapshot/rdb"
)

// TestLoadBatches loads strings of many sizes (one larger than a batch's
// byte budget), with expiries, memcached flags and collections in between,
// into several databases: batches are recycled while collections and
// strings interleave, and every key arrives intact.
func TestLoadBatches(t *testing.T) {
	var buf bytes.Buffer
	w := rdb.NewWriter(&buf, 10)
	w.Header(nil)
	want := map[string]string{}
	future := int64(4102444800000)
	for db := 0; db < 3; db++ {
		w.SelectDB(db, 3000, 300)
		for i := range 3000 {
			key := fmt.Appendf(nil, "k%d:%d", db, i)
			if i%97 == 0 {
				w.List(key, 0, 2, slices.Values([][]byte{[]byte("a"), key}))
				want[fmt.Sprintf("%d %s", db, key)] = fmt.Sprintf("list@0:\"a\",%s,", canonBytes(key))
				continue
			}
			val := bytes.Repeat([]byte{byte('a' + i%26)}, i%300)
			if i == 1500 {
				val = bytes.Repeat([]byte("big"), loadBatchBytes) // 3x a batch
			}
			exp := int64(0)
			if i%10 == 0 {
				exp = future
			}
			if i%7 == 0 {
				w.MCFlags(uint32(i))
			}
			w.String(key, val, exp)
			want[fmt.Sprintf("%d %s", db, key)] = fmt.Sprintf("string@%d:%s", exp, canonBytes(val))
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	st := shard.NewStore(2, 16)
	stats, err := Load(st, bytes.NewReader(buf.Bytes()), "batches.rdb")
	if err != nil {
		t.Fatal(err)
	}
	if stats.Keys != 9000 {
		t.Errorf("loaded %d keys", stats.Keys)
	}
	got := contents(st, 0, true)
	if len(got) != len(want) {
		t.Fatalf("%d keys, want %d", len(got), len(want))
	}
	for k, v := range want {
		if got[k] != v {
			t.Fatalf("%s = %.80q, want %.80q", k, got[k], v)
		}
	}
	for _, sh := range st.Shards() { // memcached flags survived the batching
		sh.Lock()
		for i := 7; i < 3000; i += 7 {
			key := []byte(fmt.Sprintf("k1:%d", i))
			if i%97 == 0 || st.Shards()[st.Route(key, shard.Hash(key))] != sh {
				continue
			}
			if e, ok := sh.DB(1).Find(shard.Hash(key), key); !ok || e.MCFlags() != uint32(i) {
				t.Errorf("%s: flags %d, want %d", key, e.MCFlags(), i)
			}
		}
		sh.Unlock()
	}
}

// TestLoadReserveBounded: a RESIZEDB hint far beyond what the input can
// hold does not make the loader reserve index memory for it.
func TestLoadReserveBounded(t *testing.T) {
	var buf bytes.Buffer
	w := rdb.NewWriter(&buf, 10)
	w.Header(nil)
	w.SelectDB(0, 1<<40, 1<<40)
	w.String([]byte("k"), []byte("v"), 0)
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "dump.rdb")
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	heap := func() uint64 {
		var ms runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&ms)
		return ms.HeapAlloc
	}
	for _, c := range []struct {
		name  string
		open  func() any
		limit uint64
	}{
		{"file", func() any { f, _ := os.Open(path); return f }, 1 << 20},
		{"stream", func() any { return bytes.NewReader(buf.Bytes()) }, 20 << 20},
	} {
		before := heap()
		st := shard.NewStore(2, 16)
		r := c.open()
		if _, err := Load(st, r.(interface{ Read([]byte) (int, error) }), "dump.rdb"); err != nil {
			t.Fatal(err)
		}
		if f, ok := r.(*os.File); ok {
			f.Close()
		}
		after := heap() // once: two readings may differ, and after-before must not wrap
		grown := after - min(before, after)
		t.Logf("%s: heap grew by %.1f MiB", c.name, float64(grown)/(1<<20))
		if grown > c.limit {
			t.Errorf("%s: heap grew by %d bytes for a one-key file announcing 2^40 keys", c.name, grown)
		}
		if got := contents(st, 0, true); len(got) != 1 || !strings.Contains(got["0 k"], `"v"`) {
			t.Errorf("%s: contents %v", c.name, got)
		}
		runtime.KeepAlive(st)
	}
}
