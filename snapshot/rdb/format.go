// Package rdb reads and writes Redis RDB files and DUMP/RESTORE payloads.
//
// The Writer is our own streaming encoder: it writes RDB 10 by default (the
// newest version Redis 7.0 reads) and RDB 11 or 12 on request, with the same
// compact encodings Redis chooses (integer and LZF strings, intsets, listpacks,
// quicklist 2 nodes), and a real CRC64 (Jones) trailer.
//
// The reader (Load, Restore) frames every record itself (offsets, lengths,
// checksum, limits on allocations) and hands the validated record bytes to
// github.com/hdt3213/rdb's decoder, which decodes the old encodings
// (ziplists, intsets, zipmaps, linked lists, ...). Values in listpack
// encodings are validated and decoded here, once, with package listpack
// (lpload.go), and streams parsed here with their node listpacks passed on
// as they are (stream.go). Plain string
// records and AUX fields, the bulk of most files, it decodes itself too
// (fast.go: in place in the input buffer when a record lies in it whole;
// lzf.go), so loading strings allocates nothing per key with Options.Reuse.
// Invariants: every byte of the file but the trailing checksum enters the
// CRC exactly once, whichever path consumes it (sumRec/cut); the in-place
// path never reports an error of its own: whatever it does not take, the
// checked path reads again and reports with its offset.
package rdb

import (
	"encoding/binary"
	"hash"
	"math"
	"strconv"
)

// Opcodes and value types (Redis rdb.h).
const (
	op243          = 243 // Redis 8.2 RDB_OPCODE_KEY_META; Valkey 9 RDB_OPCODE_SLOT_IMPORT
	opSlotInfo     = 244 // Redis 7.4 and Valkey 9 cluster: slot info, safe to skip
	opFunction2    = 245
	opFunctionPre  = 246
	opModuleAux    = 247
	opIdle         = 248
	opFreq         = 249
	opAux          = 250
	opResizeDB     = 251
	opExpireTimeMs = 252
	opExpireTime   = 253
	opSelectDB     = 254
	opEOF          = 255

	typeString           = 0
	typeList             = 1
	typeSet              = 2
	typeZSet             = 3
	typeHash             = 4
	typeZSet2            = 5
	typeModule           = 6
	typeModule2          = 7
	typeHashZipmap       = 9
	typeListZiplist      = 10
	typeSetIntset        = 11
	typeZSetZiplist      = 12
	typeHashZiplist      = 13
	typeListQuicklist    = 14
	typeStreamListpacks  = 15
	typeHashListpack     = 16
	typeZSetListpack     = 17
	typeListQuicklist2   = 18
	typeStreamListpacks2 = 19
	typeSetListpack      = 20
	typeStreamListpacks3 = 21
	typeHashMetaPreGA    = 22
	typeHashLpExPreGA    = 23
	typeHashMeta         = 24
	typeHashLpEx         = 25

	encInt8  = 0
	encInt16 = 1
	encInt32 = 2
	encLZF   = 3

	quicklistNodePlain  = 1
	quicklistNodePacked = 2

	// MaxVersion is the newest RDB version (with the "REDIS" magic) Load
	// and Restore accept: Redis 7.4's and 8.0's.
	MaxVersion = 12
	// ValkeyMinVersion..ValkeyMaxVersion are the versions accepted with
	// Valkey 9's "VALKEY" magic (Valkey writes "REDIS0011" up to 8.x).
	ValkeyMinVersion = 80
	ValkeyMaxVersion = 80
	// DefaultVersion is the version NewWriter writes when given 0: Redis 7.0's.
	DefaultVersion = 10
)

func newCRC() hash.Hash64 { return &jonesDigest{} }

// crc64 returns Redis's CRC64 of p.
func crc64(p []byte) uint64 { return crcUpdate(0, p) }

// appendLength appends an RDB length encoding.
func appendLength(b []byte, n uint64) []byte {
	switch {
	case n < 1<<6:
		return append(b, byte(n))
	case n < 1<<14:
		return append(b, byte(n>>8)|0x40, byte(n))
	case n <= math.MaxUint32:
		b = append(b, 0x80)
		return binary.BigEndian.AppendUint32(b, uint32(n))
	default:
		b = append(b, 0x81)
		return binary.BigEndian.AppendUint64(b, n)
	}
}

// parseCanonicalInt reports whether s is the canonical decimal form of an
// int64 (what Redis's string2ll + ll2string round trip accepts: no leading
// zeros, no '+', no "-0", no spaces).
func parseCanonicalInt(s []byte) (int64, bool) {
	if len(s) == 0 || len(s) > 20 {
		return 0, false
	}
	c := s[0]
	if c != '-' && (c < '0' || c > '9') {
		return 0, false
	}
	v, err := strconv.ParseInt(string(s), 10, 64)
	if err != nil {
		return 0, false
	}
	var buf [24]byte
	if string(strconv.AppendInt(buf[:0], v, 10)) != string(s) {
		return 0, false
	}
	return v, true
}
