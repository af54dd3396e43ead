package snapshot

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"sync"
	"testing"
	"time"

	"github.com/damselflydb/damselfly/shard"
)

// BenchmarkSaveMemoryBigValues measures what a save of big values adds to
// the process's memory while one writer overwrites random keys with fresh
// values of the same size at a steady rate (issue 14's workload, in
// process, so that the figures do not depend on the network or on the
// machine's load): 200 MB of 100 KB or 10 MB values, GOGC 25 as the
// server sets it, the dump to a file. It reports, over the heap before
// the save: the peak of live heap after a collection (what the save and
// the new values hold), the peak of the heap's objects (live plus garbage
// not yet collected: the collector's share is the difference), the
// budget's in-flight peak, and the collections during the save.
func BenchmarkSaveMemoryBigValues(b *testing.B) {
	for _, c := range []struct {
		size  int
		every time.Duration // between two overwrites
	}{{100_000, 200 * time.Microsecond}, {10_000_000, 10 * time.Millisecond}} {
		b.Run(fmt.Sprint(c.size), func(b *testing.B) {
			defer debug.SetGCPercent(debug.SetGCPercent(25))
			keys := 200_000_000 / c.size
			st := shard.NewStore(2, 1)
			val := make([]byte, c.size)
			for i := range val {
				val[i] = byte(i)
			}
			for i := range keys {
				put(st, 0, fmt.Sprint("k", i), shard.Value{Type: shard.TypeString, Str: val})
			}
			var live, objects, inflight, gcs float64
			for b.Loop() {
				l, o, f, g := saveUnderWrites(b, st, keys, val, c.every)
				live, objects, inflight, gcs = live+l, objects+o, inflight+f, gcs+g
			}
			n := float64(b.N)
			b.ReportMetric(live/n, "live-MiB")
			b.ReportMetric(objects/n, "heap-MiB")
			b.ReportMetric(inflight/n, "inflight-MiB")
			b.ReportMetric(gcs/n, "GCs")
		})
	}
}

// saveUnderWrites runs one save while overwriting keys every every, and
// returns the peaks (MiB over the heap before) and collections.
func saveUnderWrites(b *testing.B, st *shard.Store, keys int, val []byte, every time.Duration) (live, objects, inflight, gcs float64) {
	runtime.GC()
	samples := []metrics.Sample{{Name: "/gc/heap/live:bytes"}, {Name: "/memory/classes/heap/objects:bytes"}, {Name: "/gc/cycles/total:gc-cycles"}}
	metrics.Read(samples)
	base, cycles := samples[0].Value.Uint64(), samples[2].Value.Uint64()
	var peakLive, peakObj uint64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { // the writer
		defer wg.Done()
		r := rand.New(rand.NewPCG(1, 2))
		for {
			select {
			case <-stop:
				return
			case <-time.After(every):
			}
			put(st, 0, fmt.Sprint("k", r.IntN(keys)), shard.Value{Type: shard.TypeString, Str: val})
		}
	}()
	go func() { // the sampler
		defer wg.Done()
		for {
			metrics.Read(samples)
			peakLive, peakObj = max(peakLive, samples[0].Value.Uint64()), max(peakObj, samples[1].Value.Uint64())
			select {
			case <-stop:
				return
			case <-time.After(2 * time.Millisecond):
			}
		}
	}()
	f, err := os.CreateTemp(b.TempDir(), "dump")
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	stats, err := Write(context.Background(), st, f, Options{Pace: 4})
	close(stop)
	wg.Wait()
	if err != nil {
		b.Fatal(err)
	}
	metrics.Read(samples)
	mib := func(v uint64) float64 { return float64(int64(v)-int64(base)) / (1 << 20) }
	return mib(peakLive), mib(peakObj), float64(stats.InFlightPeak) / (1 << 20), float64(samples[2].Value.Uint64() - cycles)
}
