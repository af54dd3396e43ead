// Package replication implements Redis-protocol primary/replica replication,
// interoperable with redis-server 7 in both directions.
//
// Design and invariants:
//
//   - One Node per server holds the replication identity (replid, replid2,
//     second_repl_offset) and the stream offset (master_repl_offset).
//   - The journal is one ordered stream of RESP commands. On a primary the
//     server calls Append for every committed write while it still holds the
//     writer's shard locks, so the stream follows commit order and a snapshot
//     cut (taken while every shard is locked) falls between two commands.
//     SELECT is emitted whenever the database changes, and after every cut.
//     Expirations are appended as DEL.
//   - Append never blocks on the network: bytes are copied into the backlog
//     ring and into each attached replica's output buffer; a per-replica
//     goroutine writes that buffer to the socket. A replica whose buffer
//     passes the hard limit, or stays past the soft limit for the soft
//     period (client-output-buffer-limit replica 256mb 64mb 60), is
//     disconnected and must resync.
//   - Full sync: Snapshot streams a point-in-time RDB; its OnCut callback
//     (every shard locked, so no Append runs) records the stream offset and
//     attaches the replica's buffer. Every write after the cut is therefore
//     in that buffer exactly once, and it is sent after the RDB. For a
//     diskless (EOF-marked) transfer the buffered stream starts after the
//     replica's first REPLCONF ACK, as Redis does, because a Redis replica
//     detects the end mark in whatever it read last.
//   - A diskless full sync never makes the primary wait for the replica's
//     network: the snapshot writes into a spool (8 MiB in memory, the rest in
//     an unlinked temporary file) that a goroutine sends in order. Otherwise
//     a slow replica would fill the snapshot's bounded queue and the
//     pre-change hooks, waiting under a shard lock, would stall writers.
//   - A full sync to a replica that announced REPLCONF capa
//     damselfly-parallel is the parallel native stream (Config.SnapshotSync,
//     snapshot.WriteSync); damselfly-native alone gets the RDB S2-compressed;
//     other replicas get plain RDB. The loader tells them apart by the first
//     bytes, so the $EOF:/$length framing never changes.
//   - Partial sync (+CONTINUE) is served from the backlog when the replica's
//     replid is ours (or our previous one up to second_repl_offset) and its
//     offset is still held.
//   - A replica applies the stream through the server's command table (the
//     Exec callback) and proxies the exact bytes it applied to its own
//     backlog, so after promotion (REPLICAOF NO ONE: new replid, old one kept
//     as replid2) its former siblings continue with +CONTINUE.
//   - A replica loads a full sync with Load, which must be all-or-nothing:
//     the previous dataset serves until the new one is complete, and a
//     primary vanishing mid-transfer leaves it in place.
package replication
