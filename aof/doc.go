// Package aof is Damselfly's append-only file, in Redis 7's multi-part
// layout so that redis-check-aof and redis-server 7 read it and we read
// theirs: a directory (appenddirname) holding a base file (an RDB, or
// commands), incremental files of commands, and a manifest listing them
// (appendfilename.manifest).
//
// Design and invariants:
//
//   - What is logged is the server's replication journal in RESP form:
//     deterministic commands (EXPIRE as PEXPIREAT, expiries and evictions
//     as DEL, scripts by their effects), fed while the writer still holds
//     its shard locks, so the file follows commit order. SELECT is written
//     whenever the database changes, and at the start of each incr file.
//   - Writer.Feed only copies into a buffer; one flusher goroutine writes
//     and fsyncs. With appendfsync always, a reply is sent only after
//     Writer.Barrier saw everything fed before it fsynced: one fdatasync
//     covers every write waiting at that moment (group commit). With
//     everysec the flusher fsyncs once a second, and Barrier makes writers
//     wait only when an fsync has run for more than two seconds.
//   - A failed write is undone (the file truncated back to its last
//     complete command) and retried every second with the same bytes, so
//     nothing fed is lost and no half command is left; meanwhile
//     Writer.Failing is true and the server refuses writes (-MISCONF).
//   - Rewrite needs no fork: at a forkless snapshot's cut (every shard
//     locked, no Feed running) the writer switches to a new, already
//     created incr file; the snapshot becomes the new base; the manifest
//     then switches to base + new incr atomically (temporary file, fsync,
//     rename, directory fsync) and the old files are deleted. A crash at any
//     point leaves a manifest whose files hold every acknowledged write.
//   - The manifest on disk only ever names files that exist; new files are
//     created (and the directory fsynced) before a manifest names them.
//   - Loading never starts a server over data it could not read: a
//     malformed file is an error naming the file and offset; only a last
//     file that ends inside a command may be cut back (aof-load-truncated).
package aof
