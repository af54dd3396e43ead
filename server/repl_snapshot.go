package server

import (
	"context"
	"io"

	"github.com/damselflydb/damselfly/shard"
	"github.com/damselflydb/damselfly/snapshot"
)

// replSnapshot streams a forkless point-in-time RDB to a replica.
func (s *Server) replSnapshot(ctx context.Context, w io.Writer, onCut func()) (int64, error) {
	st, err := snapshot.Write(ctx, s.store, w, snapshot.Options{OnCut: onCut, MaxExtraMemory: s.persist.format.maxExtra, Gate: s.saveGate(), Compress: s.cfg.rdbCompression.Load(), Pace: backgroundPace, Busy: s.snapshotBusy(), Wanted: s.snapshotWanted(),
		Functions: s.functionCodes, KeyDelay: s.keySaveDelay})
	return st.Keys, err
}

// replLoad loads a primary's RDB into a fresh store and, only once it is
// complete, installs it in place of the current dataset (all shards locked
// for the swap of pointers only). On error the current dataset stays.
func (s *Server) replLoad(r io.Reader, commit func()) (int64, error) {
	fresh := shard.NewStore(len(s.store.Shards()), s.store.DBNum())
	// disable-thp holds for the synced data as for the store it replaces.
	fresh.AdviseHugePages(s.limits.Load().HugePages)
	st, err := s.loadSyncPayload(fresh, r) // repl_sync.go: RDB, compressed RDB or parallel native
	if err != nil {
		fresh.Release()
		return 0, err
	}
	s.logLoadWarnings(st.Warnings)
	all := s.store.All()
	s.store.LockMany(&all)
	for i, sh := range s.store.Shards() {
		sh.Adopt(fresh.Shards()[i])
	}
	s.trackInvalidateAll(nil) // tracking.go: the dataset was replaced
	ferr := s.loadFunctions(st.Functions)
	s.restartAOF()
	commit() // the replication link's state changes with the data
	s.store.UnlockMany(&all)
	if ferr != nil {
		s.log.Error("full sync: the primary's FUNCTION libraries cannot be loaded", "err", ferr)
	}
	return st.Keys, nil
}

// logLoadWarnings logs what a load skipped or changed (module data, hash
// field TTLs): never silently.
func (s *Server) logLoadWarnings(ws []string) {
	for _, w := range ws {
		s.log.Warn("loading the dump: " + w)
	}
}
