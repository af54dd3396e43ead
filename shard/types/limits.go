// Package types implements the in-memory data structures behind Redis lists,
// hashes, sets, sorted sets and streams: pure data structures, with no
// locking and no networking. Every collection but streams starts in a
// compact encoding (one pointer-free []byte, "listpack", or a sorted []int64,
// "intset") and converts once, never back, to its big encoding when a Limits
// threshold is crossed, as Redis does. A stream is always nodes of Redis's
// own listpack bytes (stream.go).
//
// Byte slices handed out by read methods (Get, Index, Range, Iterate callbacks,
// Scan callbacks ...) are views into the collection's memory: they are valid
// only until the next mutation of that collection and must not be modified.
// Values returned by Pop/Remove style methods are fresh copies.
//
// Collections are not safe for concurrent use; the shard lock protects them.
package types

import "errors"

// Limits holds the Redis configuration thresholds that decide encodings.
// Pass a pointer to the current limits to every mutating call; nil means
// DefaultLimits. Changing the limits (CONFIG SET) only affects future
// conversions, as in Redis.
type Limits struct {
	HashMaxListpackEntries int // hash-max-listpack-entries
	HashMaxListpackValue   int // hash-max-listpack-value
	SetMaxIntsetEntries    int // set-max-intset-entries
	SetMaxListpackEntries  int // set-max-listpack-entries (Redis 7.2+)
	SetMaxListpackValue    int // set-max-listpack-value (Redis 7.2+)
	ZSetMaxListpackEntries int // zset-max-listpack-entries
	ZSetMaxListpackValue   int // zset-max-listpack-value
	// ListMaxListpackSize is list-max-listpack-size: negative values -1..-5
	// limit a node to 4, 8, 16, 32 or 64 KiB; positive values limit the
	// number of elements per node (with an 8 KiB safety limit).
	ListMaxListpackSize int
	// StreamNodeMaxBytes and StreamNodeMaxEntries are stream-node-max-bytes
	// and stream-node-max-entries (0 = no limit, like Redis).
	StreamNodeMaxBytes   int
	StreamNodeMaxEntries int
	// HLLSparseMaxBytes is hll-sparse-max-bytes: a sparse HyperLogLog that
	// would grow past it turns dense.
	HLLSparseMaxBytes int
	// ListCompressDepth is list-compress-depth: accepted and reported, but
	// list nodes are not compressed.
	ListCompressDepth int
	// HugePages asks for transparent huge pages on the chunks big lists
	// take their nodes from (nodemem.go): the server's disable-thp no.
	HugePages bool
}

// DefaultLimits are the defaults of redis-server 7.0 (checked with CONFIG GET
// on 7.0.15: hash 512/64, set-max-intset-entries 512, zset 128/64, list -2).
// Redis 7.0 has no listpack sets; the set-max-listpack-* values are the Redis
// 7.2 defaults (128/64). Set SetMaxListpackEntries to 0 to get Redis 7.0's
// behaviour (small non-integer sets are "hashtable").
var DefaultLimits = Limits{
	HashMaxListpackEntries: 512,
	HashMaxListpackValue:   64,
	SetMaxIntsetEntries:    512,
	SetMaxListpackEntries:  128,
	SetMaxListpackValue:    64,
	ZSetMaxListpackEntries: 128,
	ZSetMaxListpackValue:   64,
	ListMaxListpackSize:    -2,
	StreamNodeMaxBytes:     4096,
	StreamNodeMaxEntries:   100,
	HLLSparseMaxBytes:      3000,
}

func lim(l *Limits) *Limits {
	if l == nil {
		return &DefaultLimits
	}
	return l
}

// Errors reported to the command layer.
var (
	// ErrNaN: the operation would produce a NaN score. Redis replies
	// "-ERR resulting score is not a number (NaN)".
	ErrNaN = errors.New("resulting score is not a number (NaN)")
	// ErrOutOfRange: a count is outside what Redis accepts (e.g. a random
	// count of math.MinInt64). Redis replies "-ERR value is out of range".
	ErrOutOfRange = errors.New("value is out of range")
	// ErrIncompatibleFlags: e.g. NX with XX, or GT/LT with NX.
	ErrIncompatibleFlags = errors.New("XX and NX options at the same time are not compatible")
	// ErrRankZero: LPOS RANK 0.
	ErrRankZero = errors.New("RANK can't be zero: use 1 to start from the first match, 2 from the second ... or use negative to start from the end of the list")
)

// normRange converts Redis start/stop indices (negative = from the end) for a
// collection of n elements into a half-open [lo, hi) range; ok is false when
// the range is empty. It never overflows.
func normRange(start, stop int64, n int) (lo, hi int, ok bool) {
	ln := int64(n)
	if start < 0 {
		start += ln
		if start < 0 {
			start = 0
		}
	}
	if stop < 0 {
		stop += ln
	}
	if stop >= ln {
		stop = ln - 1
	}
	if start > stop || start >= ln || stop < 0 {
		return 0, 0, false
	}
	return int(start), int(stop) + 1, true
}

// parseStrictInt parses b as Redis's string2ll/lpStringToInt64 do: optional
// '-', no leading zeros (except "0"), no '+', at most 20 characters, no
// overflow.
func parseStrictInt(b []byte) (int64, bool) {
	n := len(b)
	if n == 0 || n > 20 {
		return 0, false
	}
	if n == 1 && b[0] == '0' {
		return 0, true
	}
	i := 0
	neg := false
	if b[0] == '-' {
		neg = true
		i = 1
		if n == 1 {
			return 0, false
		}
	}
	if b[i] < '1' || b[i] > '9' {
		return 0, false
	}
	var v uint64
	for ; i < n; i++ {
		c := b[i]
		if c < '0' || c > '9' {
			return 0, false
		}
		if v > (1<<63)/10 {
			return 0, false
		}
		v = v*10 + uint64(c-'0')
	}
	if neg {
		if v > 1<<63 {
			return 0, false
		}
		return int64(-v), true
	}
	if v > 1<<63-1 {
		return 0, false
	}
	return int64(v), true
}
