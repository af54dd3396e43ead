package snapshot

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/damselflydb/damselfly/shard"
	"github.com/damselflydb/damselfly/snapshot/block"
)

func saveNative(t testing.TB, st *shard.Store, path string, opt NativeOptions) Stats {
	t.Helper()
	stats, err := SaveNative(context.Background(), st, path, opt)
	if err != nil {
		t.Fatalf("SaveNative: %v", err)
	}
	return stats
}

func loadNative(t testing.TB, path string, shards int) (*shard.Store, error) {
	t.Helper()
	st := shard.NewStore(shards, 16)
	_, err := LoadNative(st, path, LoadOptions{})
	return st, err
}

// TestNativeRoundTrip: every type, every codec, loaded into other shard
// counts (keys re-hashed), detected by IsNative.
func TestNativeRoundTrip(t *testing.T) {
	future := time.Now().Add(time.Hour).UnixMilli()
	st := shard.NewStore(3, 16)
	fillAllTypes(st, future)
	want := contents(st, time.Now().UnixMilli(), true)
	dir := t.TempDir()
	path := filepath.Join(dir, "dump.rdb")
	// (Raw blocks are covered by package block's tests.)
	for _, codec := range []block.Codec{block.S2, block.Zstd} {
		stats := saveNative(t, st, path, NativeOptions{Codec: codec})
		if stats.Keys != int64(len(want)) {
			t.Errorf("%v: %d keys saved, want %d", codec, stats.Keys, len(want))
		}
		if ok, err := IsNative(path); !ok || err != nil {
			t.Fatalf("IsNative: %v %v", ok, err)
		}
		// Fewer and more shards than saved (re-hashing is codec-blind).
		shardCounts := []int{5}
		if codec != block.S2 {
			shardCounts = []int{1}
		}
		for _, shards := range shardCounts {
			got, err := loadNative(t, path, shards)
			if err != nil {
				t.Fatalf("%v, %d shards: %v", codec, shards, err)
			}
			compareContents(t, want, contents(got, time.Now().UnixMilli(), true))
		}
		// Only the last snapshot's files remain.
		files, _ := filepath.Glob(filepath.Join(dir, "*.dfs"))
		if len(files) != 3 {
			t.Errorf("%v: %d shard files in the directory, want 3 (older snapshots' removed): %v", codec, len(files), files)
		}
	}
	// An RDB dump is not native.
	rdbPath := filepath.Join(dir, "plain.rdb")
	data, _ := save(t, st, Options{})
	os.WriteFile(rdbPath, data, 0o644)
	if ok, _ := IsNative(rdbPath); ok {
		t.Error("an RDB file taken for a native summary")
	}
}

// TestNativeCorruption: a changed byte, a truncated or missing shard file,
// or a bad summary is an error naming the file, and nothing is loaded.
func TestNativeCorruption(t *testing.T) {
	st := shard.NewStore(2, 16)
	for i := range 20000 {
		put(st, i%3, fmt.Sprint("key:", i), shard.Value{Type: shard.TypeString, Str: []byte(strings.Repeat("v", i%200))})
	}
	dir := t.TempDir()
	path := filepath.Join(dir, "dump.rdb")
	saveNative(t, st, path, NativeOptions{Codec: block.S2})
	sum, err := ReadSummary(path)
	if err != nil {
		t.Fatal(err)
	}
	shardFile := filepath.Join(dir, sum.Files[1].Name)
	orig, _ := os.ReadFile(shardFile)
	origSum, _ := os.ReadFile(path)
	cases := []struct {
		name string
		mut  func()
	}{
		{"flipped byte", func() { b := []byte(string(orig)); b[len(b)/2] ^= 1; os.WriteFile(shardFile, b, 0o644) }},
		{"truncated", func() { os.WriteFile(shardFile, orig[:len(orig)-10], 0o644) }},
		{"extra bytes", func() { os.WriteFile(shardFile, append([]byte(string(orig)), 0, 0, 0), 0o644) }},
		{"missing file", func() { os.Remove(shardFile) }},
		{"bad summary", func() { os.WriteFile(path, origSum[:len(origSum)/2], 0o644) }},
		{"escaping name", func() {
			os.WriteFile(path, []byte(strings.Replace(string(origSum), sum.Files[0].Name, "../x", 1)), 0o644)
		}},
	}
	for _, c := range cases {
		c.mut()
		got, err := loadNative(t, path, 2)
		if err == nil {
			t.Errorf("%s: loaded", c.name)
		} else if !strings.Contains(err.Error(), "dump.rdb") {
			t.Errorf("%s: error does not name the file: %v", c.name, err)
		}
		if n := len(contents(got, 0, true)); n != 0 {
			t.Errorf("%s: %d keys kept after an error", c.name, n)
		}
		os.WriteFile(shardFile, orig, 0o644)
		os.WriteFile(path, origSum, 0o644)
	}
	if _, err := loadNative(t, path, 2); err != nil {
		t.Fatalf("restored files: %v", err)
	}
}

// TestNativePointInTime: writers during a native save do not leak into it.
func TestNativePointInTime(t *testing.T) {
	st := shard.NewStore(4, 2)
	for i := range 20000 {
		put(st, i%2, fmt.Sprint("k", i), shard.Value{Type: shard.TypeString, Str: []byte("v0")})
	}
	var stop atomic.Bool
	var wg sync.WaitGroup
	for w := range 3 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for n := 0; !stop.Load(); n++ {
				k := []byte(fmt.Sprint("k", (n*7+w)%30000))
				sh, h := st.ShardOf(k)
				sh.Lock()
				if n%5 == 0 {
					if e, ok := sh.Lookup(n%2, h, k, 0); ok {
						sh.DB(n % 2).Delete(&e)
					}
				} else {
					sh.DB(n%2).Put(h, k, shard.Value{Type: shard.TypeString, Str: []byte(fmt.Sprint("w", n))})
				}
				sh.Unlock()
			}
		}()
	}
	time.Sleep(5 * time.Millisecond)
	var want map[string]string
	path := filepath.Join(t.TempDir(), "dump.rdb")
	_, err := SaveNative(context.Background(), st, path, NativeOptions{Codec: block.Zstd, Options: Options{Pace: 1,
		OnCut: func() { want = contents(st, time.Now().UnixMilli(), false) }}})
	stop.Store(true)
	wg.Wait()
	if err != nil {
		t.Fatal(err)
	}
	got, err := loadNative(t, path, 3)
	if err != nil {
		t.Fatal(err)
	}
	compareContents(t, want, contents(got, time.Now().UnixMilli(), true))
}

// TestNativeCancel: a cancelled save leaves the previous snapshot intact
// and no files of its own.
func TestNativeCancel(t *testing.T) {
	st := shard.NewStore(2, 16)
	for i := range 50000 {
		put(st, 0, fmt.Sprint("k", i), shard.Value{Type: shard.TypeString, Str: []byte("value")})
	}
	dir := t.TempDir()
	path := filepath.Join(dir, "dump.rdb")
	saveNative(t, st, path, NativeOptions{Codec: block.S2})
	before, _ := filepath.Glob(filepath.Join(dir, "*"))
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := SaveNative(ctx, st, path, NativeOptions{Codec: block.S2}); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled save: %v", err)
	}
	after, _ := filepath.Glob(filepath.Join(dir, "*"))
	if strings.Join(before, ",") != strings.Join(after, ",") {
		t.Errorf("files before %v, after %v", before, after)
	}
	if _, err := loadNative(t, path, 2); err != nil {
		t.Fatal(err)
	}
}

// TestNativeShardFileIsRDB: a decompressed shard file is an RDB that
// redis-check-rdb accepts.
func TestNativeShardFileIsRDB(t *testing.T) {
	check, err := exec.LookPath("redis-check-rdb")
	if err != nil {
		t.Skip("redis-check-rdb not installed (apt-get install redis-tools)")
	}
	st := shard.NewStore(2, 16)
	fillAllTypes(st, time.Now().Add(time.Hour).UnixMilli())
	dir := t.TempDir()
	path := filepath.Join(dir, "dump.rdb")
	saveNative(t, st, path, NativeOptions{Codec: block.Zstd})
	sum, _ := ReadSummary(path)
	f, _ := os.Open(filepath.Join(dir, sum.Files[0].Name))
	defer f.Close()
	br := block.NewReader(f, "shard")
	out, _ := os.Create(filepath.Join(dir, "shard0.rdb"))
	if _, err := out.ReadFrom(br); err != nil {
		t.Fatal(err)
	}
	out.Close()
	if b, err := exec.Command(check, filepath.Join(dir, "shard0.rdb")).CombinedOutput(); err != nil {
		t.Fatalf("redis-check-rdb: %v\n%s", err, b)
	}
}
