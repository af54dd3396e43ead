package aof

import (
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// TestWriterConcurrentFeedAndCut: commands fed from many goroutines, with
// group-commit barriers and a cut to a second file in the middle, all end
// up in the files exactly once, each goroutine's in its order, and the
// second file starts with a SELECT.
func TestWriterConcurrentFeedAndCut(t *testing.T) {
	dir := t.TempDir()
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	open := func(name string) *os.File {
		f, err := os.OpenFile(filepath.Join(dir, name), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
		if err != nil {
			t.Fatal(err)
		}
		return f
	}
	w := NewWriter(open("1"), "1", 0, FsyncAlways, log)
	const goroutines, each = 8, 500
	var feedMu sync.Mutex // stands for the shard locks a cut takes
	var wg sync.WaitGroup
	for g := 0; g < goroutines; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < each; i++ {
				feedMu.Lock()
				w.Feed(g%3, [][]byte{[]byte("SET"), []byte(fmt.Sprint("g", g)), []byte(fmt.Sprint(i))})
				feedMu.Unlock()
				if i%50 == 0 {
					w.Barrier()
				}
				if g == 0 && i == each/2 {
					feedMu.Lock()
					w.Cut(open("2"), "2")
					feedMu.Unlock()
				}
			}
		}()
	}
	wg.Wait()
	fed := w.Fed()
	if !w.WaitSynced(fed, 0) {
		t.Fatal("not synced")
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	next := map[string]int{}
	db := -1
	total := 0
	for _, name := range []string{"1", "2"} {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		if name == "2" && !strings.HasPrefix(string(b), "*2\r\n$6\r\nSELECT\r\n") {
			t.Fatalf("second file starts with %q", b[:20])
		}
		_, _, err = replayBytes(b, Loader{Log: log, Exec: func(args [][]byte) error {
			if string(args[0]) == "SELECT" {
				fmt.Sscan(string(args[1]), &db)
				return nil
			}
			g := string(args[1])
			var gi int
			fmt.Sscan(g[1:], &gi)
			if db != gi%3 {
				return fmt.Errorf("%s written in db %d", g, db)
			}
			if want := fmt.Sprint(next[g]); string(args[2]) != want {
				return fmt.Errorf("%s: got %s want %s", g, args[2], want)
			}
			next[g]++
			total++
			return nil
		}})
		if err != nil {
			t.Fatal(name, err)
		}
	}
	if total != goroutines*each {
		t.Fatalf("%d commands in the files, want %d", total, goroutines*each)
	}
}
