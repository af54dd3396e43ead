// Package resp is Damselfly's one RESP (REdis Serialization Protocol) codec:
// the server's request reader, a reader of RESP2 and RESP3 replies and
// command streams for the client side of a connection, and the command
// writer. It imports no other Damselfly package. See docs/architecture.md
// for where it sits.
//
// # Readers
//
// RequestReader is the server's request parser (Redis 7's
// processMultibulkBuffer and processInlineBuffer). It never blocks and
// never reads: the caller hands it the unconsumed input and it returns a
// command, ErrNeedMore, ErrEmptyMultibulk or a ProtocolError (whose text
// the server sends as "-ERR Protocol error: ..." before closing).
//
// Reader wraps an io.Reader (or a fixed slice) for callers that may block:
// a replica reading its primary's handshake replies, RDB payload and command
// stream, a primary reading REPLCONF ACKs, MIGRATE reading its target's
// replies, and the test harnesses. It reads commands with RequestReader's
// rules (ReadCommand), whole replies as Values (ReadValue, RESP2 and RESP3),
// single lines, and raw bytes (Read, ReadByte). Scripting decodes
// redis.call replies with NewBytesReader over the reply bytes. A source
// error (a read deadline) consumes nothing of a value: a later call
// returns it whole.
//
// The AOF loader (package aof) keeps its own reader of the file format, as
// Redis's loadAppendOnlyFile does: it reports corruption with file offsets,
// requires CRLF after each bulk, skips "#" annotations and tells a
// truncated tail from a corrupt one, none of which the network reader
// should do.
//
// # Limits
//
// As Redis 7: a request's count line and an inline request are at most
// MaxInline (64 KiB) bytes; a multibulk count at most MaxMultibulk; a bulk
// at most MaxBulk (proto-max-bulk-len, DefaultMaxBulkLen 512 MiB). Before
// authentication (RequestReader.Authed false) a request has at most
// UnauthMaxMultibulk arguments and UnauthMaxBulk bytes per bulk, with
// Redis's "unauthenticated ..." errors. A Reader applies MaxInline to every
// line, MaxBulk to bulks, MaxMultibulk to aggregate counts and MaxDepth to
// nesting, and preallocates at most 1024 elements whatever count a peer
// announces.
//
// # Resumability
//
// RequestReader is resumable: when Next returns ErrNeedMore it keeps how
// far it got, as offsets from the command start, so a command of a million
// arguments arriving in small pieces is scanned once (linear time), and the
// caller may move or grow its buffer between calls as long as the bytes
// from the command start are kept. Need says how many bytes (from the
// command start) the next call needs, so a buffer grows once to fit a large
// bulk. Reader needs no resumability: it blocks in its source until a
// whole command or value is buffered, and scans each byte once.
//
// # Zero copy: which slices alias the input
//
// RequestReader.Next's arguments for a multibulk request are subslices of
// the buffer passed in (capacity clipped, so appending to one never
// overwrites its neighbour); they are valid while the caller keeps those
// bytes unmodified. Inline arguments are copies owned by the reader, valid
// until the next call. Reader's results (ReadCommand's args and raw bytes,
// ReadLine's line, every Value.Str) alias the Reader's buffer and are
// valid until the next call on the Reader; a caller that keeps them copies
// them. NewBytesReader does not copy its slice: Values alias it.
//
// # Writers
//
// AppendCommand and AppendCommandStrings encode a command as an array of
// bulk strings. The server's reply writers (server/reply.go) stay in the
// server: each is a method on its Client that appends to the client's
// output buffer and chooses between RESP2 and RESP3 by the client's
// negotiated protocol (null, maps, sets, doubles, booleans, verbatim
// strings), and the byte-level appenders they use are redcon's; moving them
// would move the Client's output buffer and protocol state, not a codec.
package resp
