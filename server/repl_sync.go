package server

import (
	"bufio"
	"context"
	"io"

	"github.com/damselflydb/damselfly/replication"
	"github.com/damselflydb/damselfly/shard"
	"github.com/damselflydb/damselfly/snapshot"
	"github.com/damselflydb/damselfly/snapshot/block"
)

// Full sync between Damselfly nodes in the parallel native format
// (replication.CapaParallel, snapshot.WriteSync): every shard serializes
// and compresses its own stream, and the replica decodes the streams in
// parallel into its own shard count.

// replSnapshotSync streams a point-in-time parallel sync payload to a
// Damselfly replica, with the same pacing, memory bound and FUNCTION
// libraries as the RDB full sync. The blocks use --dbcompression's codec
// (S2 by default; "none" still sends S2: the wire is slower than S2).
func (s *Server) replSnapshotSync(ctx context.Context, w io.Writer, onCut func()) (int64, error) {
	f := s.persist.format
	codec := f.codec
	if codec == block.Raw {
		codec = block.S2
	}
	st, err := snapshot.WriteSync(ctx, s.store, w, snapshot.NativeOptions{
		Options: snapshot.Options{OnCut: onCut, MaxExtraMemory: f.maxExtra, Gate: s.saveGate(), Pace: backgroundPace, Busy: s.snapshotBusy(), Wanted: s.snapshotWanted(),
			Functions: s.functionCodes, KeyDelay: s.keySaveDelay},
		Codec: codec, Level: f.level,
	})
	return st.Keys, err
}

// loadSyncPayload loads a full sync payload into fresh, whatever the
// primary sent: the parallel native stream, an S2-compressed RDB or a
// plain RDB (told apart by their first bytes).
func (s *Server) loadSyncPayload(fresh *shard.Store, r io.Reader) (snapshot.Stats, error) {
	br := bufio.NewReaderSize(r, 1<<20)
	lo := snapshot.LoadOptions{Limits: s.limits.Load()}
	if m, err := br.Peek(len(snapshot.SyncMagic)); err == nil && string(m) == snapshot.SyncMagic {
		return snapshot.LoadSync(fresh, br, "primary's parallel sync", lo)
	}
	return snapshot.LoadWith(fresh, replication.SyncReader(br), "primary's RDB", lo)
}
