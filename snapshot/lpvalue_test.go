package snapshot

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/damselflydb/damselfly/shard"
	"github.com/damselflydb/damselfly/shard/types"
	"github.com/damselflydb/damselfly/snapshot/rdb"
)

// TestLoadListpacksUnderLiveLimits: hashes and sets stored as listpacks
// (decoded straight into the shard's objects, lpvalue.go), sorted sets and
// lists load with the same contents whatever the live limits, and with the
// encodings those limits give: listpack under Redis's defaults, the big
// encodings under limits they exceed.
func TestLoadListpacksUnderLiveLimits(t *testing.T) {
	var buf bytes.Buffer
	w := rdb.NewWriter(&buf, 11)
	w.Header(nil)
	w.SelectDB(0, 5, 0)
	elems := [][]byte{[]byte("f1"), []byte("-12"), []byte("f2"), []byte("9223372036854775807"),
		[]byte("f3"), []byte("x"), []byte("f4"), []byte("0")}
	w.Hash([]byte("h"), 0, 4, func(y func([]byte, []byte) bool) {
		for i := 0; i < len(elems); i += 2 {
			y(elems[i], elems[i+1])
		}
	})
	w.Set([]byte("s"), 0, len(elems), func(y func([]byte) bool) {
		for _, e := range elems {
			y(e)
		}
	})
	w.Set([]byte("i"), 0, 3, func(y func([]byte) bool) { y([]byte("3")); y([]byte("-1")); y([]byte("2")) })
	w.ZSet([]byte("z"), 0, 4, func(y func([]byte, float64) bool) {
		for i := 0; i < len(elems); i += 2 {
			y(elems[i], float64(i)-2.5)
		}
	})
	w.List([]byte("l"), 0, len(elems), func(y func([]byte) bool) {
		for _, e := range elems {
			y(e)
		}
	})
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	small := types.DefaultLimits
	small.HashMaxListpackEntries, small.SetMaxListpackEntries, small.SetMaxIntsetEntries, small.ZSetMaxListpackEntries = 2, 2, 2, 2
	want := map[string]string{
		"0 h": `hash@0:"f1"="-12","f2"="9223372036854775807","f3"="x","f4"="0"`,
		"0 s": `set@0:"-12","0","9223372036854775807","f1","f2","f3","f4","x"`,
		"0 i": `set@0:"-1","2","3"`,
		"0 z": `zset@0:"f1"=-2.5,"f2"=-0.5,"f3"=1.5,"f4"=3.5,`,
		"0 l": `list@0:"f1","-12","f2","9223372036854775807","f3","x","f4","0",`,
	}
	for _, c := range []struct {
		lim  *types.Limits
		encs string
	}{
		{nil, "h=listpack s=listpack i=intset z=listpack"},
		{&small, "h=hashtable s=hashtable i=hashtable z=skiplist"},
	} {
		st := shard.NewStore(2, 16)
		if _, err := LoadWith(st, bytes.NewReader(buf.Bytes()), "t.rdb", LoadOptions{Limits: c.lim}); err != nil {
			t.Fatal(err)
		}
		got := contents(st, 0, true)
		compareContents(t, want, got)
		encs := ""
		for _, k := range []string{"h", "s", "i", "z"} {
			sh, h := st.ShardOf([]byte(k))
			sh.Lock()
			e, ok := sh.Lookup(0, h, []byte(k), 0)
			if !ok {
				t.Fatalf("%s missing", k)
			}
			var enc string
			switch o := e.Obj().(type) {
			case *types.Hash:
				enc = o.Encoding()
			case *types.Set:
				enc = o.Encoding()
			case *types.ZSet:
				enc = o.Encoding()
			}
			sh.Unlock()
			encs += fmt.Sprintf(" %s=%s", k, enc)
		}
		if encs[1:] != c.encs {
			t.Errorf("limits %v: encodings %s, want %s", c.lim != nil, encs[1:], c.encs)
		}
	}
}
