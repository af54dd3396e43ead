package snapshot

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/damselflydb/damselfly/shard"
	"github.com/damselflydb/damselfly/snapshot/block"
)

// TestSyncRoundTrip: every type through the parallel sync stream, loaded
// into fewer and more shards than sent, with both codecs; the functions
// travel in the trailer.
func TestSyncRoundTrip(t *testing.T) {
	future := time.Now().Add(time.Hour).UnixMilli()
	st := shard.NewStore(3, 16)
	fillAllTypes(st, future)
	want := contents(st, time.Now().UnixMilli(), true)
	for _, codec := range []block.Codec{block.S2, block.Zstd} {
		var buf bytes.Buffer
		stats, err := WriteSync(context.Background(), st, &buf, NativeOptions{Codec: codec,
			Options: Options{Functions: func() []string {
				return []string{"#!lua name=lib\nredis.register_function('f', function() return 1 end)"}
			}}})
		if err != nil {
			t.Fatal(err)
		}
		if stats.Keys != int64(len(want)) || stats.Bytes != int64(buf.Len()) {
			t.Errorf("%v: stats %+v, want %d keys and %d bytes", codec, stats, len(want), buf.Len())
		}
		if !bytes.HasPrefix(buf.Bytes(), []byte(SyncMagic)) {
			t.Fatalf("stream starts with %q", buf.Bytes()[:8])
		}
		shards := 5 // fewer and more shards than sent (re-hashing is codec-blind)
		if codec != block.S2 {
			shards = 1
		}
		{
			got := shard.NewStore(shards, 16)
			ls, err := LoadSync(got, bytes.NewReader(buf.Bytes()), "sync", LoadOptions{})
			if err != nil {
				t.Fatalf("%v, %d shards: %v", codec, shards, err)
			}
			if len(ls.Functions) != 1 || ls.Bytes != int64(buf.Len()) {
				t.Errorf("%v: loaded functions %q, %d bytes of %d", codec, ls.Functions, ls.Bytes, buf.Len())
			}
			compareContents(t, want, contents(got, time.Now().UnixMilli(), true))
		}
	}
}

// TestSyncCorruption: a flipped byte anywhere, a truncation anywhere or
// trailing bytes fail the load with an error naming the stream and
// offset, and nothing is kept.
func TestSyncCorruption(t *testing.T) {
	st := shard.NewStore(4, 16)
	for i := range 30000 {
		put(st, i%3, fmt.Sprint("key:", i), shard.Value{Type: shard.TypeString, Str: []byte(strings.Repeat("v", i%200))})
	}
	var buf bytes.Buffer
	if _, err := WriteSync(context.Background(), st, &buf, NativeOptions{Codec: block.S2}); err != nil {
		t.Fatal(err)
	}
	orig := buf.Bytes()
	check := func(what string, data []byte) {
		t.Helper()
		got := shard.NewStore(3, 16)
		_, err := LoadSync(got, bytes.NewReader(data), "primary's sync", LoadOptions{})
		if err == nil {
			t.Fatalf("%s: loaded", what)
		}
		if !strings.Contains(err.Error(), "primary's sync") || !strings.Contains(err.Error(), "offset") {
			t.Errorf("%s: error does not name the stream and offset: %v", what, err)
		}
		if errors.Is(err, errStopped) {
			t.Errorf("%s: the error is a bare stop: %v", what, err)
		}
		if n := len(contents(got, 0, true)); n != 0 {
			t.Errorf("%s: %d keys kept after an error", what, n)
		}
	}
	for _, at := range []int{9, 30, len(orig) / 3, len(orig) / 2, len(orig) - 40, len(orig) - 3} {
		b := bytes.Clone(orig)
		b[at] ^= 0x10
		check(fmt.Sprintf("byte %d of %d flipped", at, len(orig)), b)
	}
	for _, at := range []int{4, 20, len(orig) / 2, len(orig) - 1} {
		check(fmt.Sprintf("truncated at %d of %d", at, len(orig)), orig[:at])
	}
	check("trailing bytes", append(bytes.Clone(orig), 0))
	if _, err := LoadSync(shard.NewStore(3, 16), bytes.NewReader(orig), "sync", LoadOptions{}); err != nil {
		t.Fatal(err)
	}
}
