package server

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"time"
)

// Listening while the dump loads (like Redis): StartAndLoad opens the
// listeners first, so container health checks and clients connect at once,
// and every command Redis refuses while loading gets
// "-LOADING Redis is loading the dataset in memory" until the load is
// complete. INFO persistence then reports loading:1 and the loading_*
// fields.
//
// Invariants:
//   - Nothing saves while loading: the save schedule waits (saveCron), SAVE
//     and BGSAVE are refused, and a SHUTDOWN accepted while loading never
//     saves (a partial dataset must not replace the dump being read).
//   - Data is reachable only once complete: the memcached port opens and
//     replication (--replicaof) starts after the load.

// ErrLoad wraps StartAndLoad's errors reading the dump (not listening).
var ErrLoad = errors.New("cannot load the dump")

const loadingErr = "LOADING Redis is loading the dataset in memory"

// refusedWhileLoading reports whether cmd must get -LOADING now.
func (s *Server) refusedWhileLoading(cmd *command) bool {
	if !s.persist.loading.Load() {
		return false
	}
	// The table's "loading" flag (Redis 7.0's, per subcommand) is what
	// Redis runs while loading.
	for _, f := range cmd.flags {
		if f == "loading" {
			return false
		}
	}
	return true
}

// StartAndLoad listens (Start), then loads the dump while clients get
// -LOADING, then opens the memcached port and starts replication. An error
// loading the dump is returned like LoadDump's: the caller must not serve.
func (s *Server) StartAndLoad(cfg Config) error {
	s.persist.loading.Store(true)
	defer s.persist.loading.Store(false)
	early := cfg
	early.MemcachedPort, early.ReplicaOf = 0, ""
	if err := s.Start(early); err != nil {
		return err
	}
	if err := s.LoadDump(); err != nil {
		return fmt.Errorf("%w: %w", ErrLoad, err)
	}
	if s.cfg.maxMemory.Load() > 0 {
		// What Start measured was the empty dataset.
		heap, dataset := s.memoryParts(nil)
		s.usedMem.Store(heap + dataset)
		s.updateBudget(heap+dataset, dataset)
	}
	if cfg.MemcachedPort != 0 {
		if err := s.startMemcached(cfg); err != nil {
			return err
		}
	}
	if cfg.ReplicaOf != "" {
		return s.startReplicaOf(cfg.ReplicaOf)
	}
	return nil
}

// beginLoading records the start of a load of a file (INFO loading_*).
func (s *Server) beginLoading(f *os.File) {
	p := &s.persist
	p.loadStart.Store(time.Now().Unix())
	p.loadRead.Store(0)
	var size int64
	if fi, err := f.Stat(); err == nil && fi.Mode().IsRegular() {
		size = fi.Size()
	}
	p.loadTotal.Store(size)
	p.loading.Store(true)
}

// infoLoading writes the loading_* fields of INFO persistence while loading.
func (s *Server) infoLoading(field func(string, any)) {
	p := &s.persist
	if !p.loading.Load() {
		return
	}
	start, total, read := p.loadStart.Load(), p.loadTotal.Load(), p.loadRead.Load()
	perc, remaining := 0.0, int64(0)
	if total > 0 {
		perc = float64(read) / float64(total) * 100
		remaining = max(total-read, 0)
	}
	eta := int64(1) // Redis's figure when nothing can be estimated yet
	if elapsed := time.Now().Unix() - start; elapsed > 0 {
		eta = elapsed * remaining / (read + 1)
	}
	field("loading_start_time", start)
	field("loading_total_bytes", total)
	field("loading_rdb_used_mem", 0)
	field("loading_loaded_bytes", read)
	field("loading_loaded_perc", strconv.FormatFloat(perc, 'f', 2, 64))
	field("loading_eta_seconds", eta)
}
