package snapshot

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/damselflydb/damselfly/shard"
	"github.com/damselflydb/damselfly/snapshot/rdb"
)

// mcItems fills st with memcached items (meta with flags, including 0 and
// the maximum), an item with an expiry, plain RESP strings and a
// collection in between, and returns the flags every key should load with
// ("-" = no meta expected).
func mcItems(st *shard.Store, future int64) map[string]string {
	want := map[string]string{}
	for i := range 300 {
		key := fmt.Sprintf("mc:%d", i)
		flags := uint32(i * 7919)
		switch i % 5 {
		case 0:
			flags = 0
		case 1:
			flags = 4294967295
		}
		v := shard.Value{Type: shard.TypeString, Str: []byte(strings.Repeat("v", i%40)), MCFlags: flags, MCCAS: uint64(i + 1), Meta: true}
		if i%7 == 0 {
			v.ExpireAt = future
		}
		put(st, 0, key, v)
		want[key] = "-"
		if flags != 0 {
			want[key] = fmt.Sprint(flags)
		}
		rk := fmt.Sprintf("resp:%d", i)
		put(st, 0, rk, shard.Value{Type: shard.TypeString, Str: []byte("123")})
		want[rk] = "-"
	}
	return want
}

// mcFlagsOf returns key -> loaded flags ("-" when the entry has no meta)
// of every key of db 0 in want, failing on a nonzero CAS (not saved).
func mcFlagsOf(t *testing.T, st *shard.Store, want map[string]string) map[string]string {
	t.Helper()
	got := map[string]string{}
	for k := range want {
		sh, h := st.ShardOf([]byte(k))
		sh.Lock()
		e, ok := sh.DB(0).Find(h, []byte(k))
		switch {
		case !ok:
			got[k] = "missing"
		case !e.HasMeta():
			got[k] = "-"
		default:
			got[k] = fmt.Sprint(e.MCFlags())
			if e.MCCAS() != 0 {
				t.Errorf("%s: loaded CAS %d, want 0 (CAS is not saved)", k, e.MCCAS())
			}
		}
		sh.Unlock()
	}
	return got
}

func TestMCFlagsRoundTrip(t *testing.T) {
	st := shard.NewStore(3, 16)
	want := mcItems(st, time.Now().Add(time.Hour).UnixMilli())
	wantContents := contents(st, time.Now().UnixMilli(), true)
	for _, v := range []int{10, 12} {
		data, _ := save(t, st, Options{Version: v})
		got := load(t, data, 2)
		compareContents(t, wantContents, contents(got, time.Now().UnixMilli(), true))
		compareContents(t, want, mcFlagsOf(t, got, want))
	}
}

// TestMCFlagsAuxOnlyNextKey: a df-mc-flags field applies to the next key
// only, and a malformed one is a load error naming the field.
func TestMCFlagsAuxOnlyNextKey(t *testing.T) {
	var buf bytes.Buffer
	w := rdb.NewWriter(&buf, 0)
	w.Header(rdb.DefaultAux(0))
	w.SelectDB(0, 2, 0)
	w.MCFlags(42)
	w.String([]byte("a"), []byte("1"), 0)
	w.String([]byte("b"), []byte("2"), 0)
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	got := map[string]uint32{}
	info, err := rdb.Load(bytes.NewReader(buf.Bytes()), "x.rdb", func(e *rdb.Entry) error {
		got[string(e.Key)] = e.MCFlags
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if got["a"] != 42 || got["b"] != 0 || len(got) != 2 {
		t.Fatalf("flags %v", got)
	}
	if _, ok := info.Aux[rdb.AuxMCFlags]; ok {
		t.Fatal("per-key aux field reported as a file aux field")
	}

	buf.Reset()
	w = rdb.NewWriter(&buf, 0)
	w.Header([]rdb.Aux{{Key: rdb.AuxMCFlags, Value: "4294967296"}})
	w.SelectDB(0, 1, 0)
	w.String([]byte("a"), []byte("1"), 0)
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	_, err = Load(shard.NewStore(1, 16), bytes.NewReader(buf.Bytes()), "bad.rdb")
	if err == nil || !strings.Contains(err.Error(), "bad.rdb") || !strings.Contains(err.Error(), rdb.AuxMCFlags) {
		t.Fatalf("err = %v", err)
	}
}

// TestMCFlagsDumpLoadsInRedis: a dump with df-mc-flags fields passes
// redis-check-rdb and redis-server 7.0 loads every key (ignoring the flags).
func TestMCFlagsDumpLoadsInRedis(t *testing.T) {
	needTools(t, "redis-server", "redis-check-rdb")
	st := shard.NewStore(3, 16)
	mcItems(st, time.Now().Add(time.Hour).UnixMilli())
	fillAllTypes(st, time.Now().Add(time.Hour).UnixMilli())
	want := contents(st, time.Now().UnixMilli(), true)
	data, _ := save(t, st, Options{})
	if !bytes.Contains(data, []byte(rdb.AuxMCFlags)) {
		t.Fatal("no df-mc-flags field in the dump")
	}
	rc := startRedis(t, checkedDumpDir(t, data))
	compareContents(t, want, redisContents(t, rc))
	if n := rc.DBSize(context.Background()).Val(); n == 0 {
		t.Fatal("redis-server loaded no keys")
	}
}
