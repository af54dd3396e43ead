package rdb

import (
	"encoding/binary"
	"math"
)

// String key records (the bulk of most dumps) encoded with one append into
// the caller's buffer: no io.Writer, no buffer of the Writer's, no call per
// field. The bytes are exactly what Writer.String writes (the integer and
// LZF forms chosen by the same rules), so the output of both may be mixed
// in one stream as long as a record Writer is flushed before AppendString
// appends after it.

// AppendString appends the record of a string key (the expiry opcode when
// expireAtMs > 0, the type, the key and the value) to dst. z is the
// caller's compressor with rdbcompression (LZF for strings over 20 bytes
// when it saves 4 bytes), nil without.
func AppendString(dst, key, val []byte, expireAtMs int64, z *LZF) []byte {
	if expireAtMs > 0 {
		dst = append(dst, opExpireTimeMs)
		dst = binary.LittleEndian.AppendUint64(dst, uint64(expireAtMs))
	}
	dst = append(dst, typeString)
	dst = appendRDBString(dst, key, z)
	return appendRDBString(dst, val, z)
}

// appendRDBString appends s like rdbSaveRawString: integer encoded when
// short and canonical, else as a blob (appendBlob).
func appendRDBString(dst, s []byte, z *LZF) []byte {
	if b, ok := appendIntString(dst, s); ok {
		return b
	}
	return appendBlob(dst, s, z)
}

// appendIntString appends the integer encoding of s when s is the canonical
// form of a 32-bit integer (Redis's rdbTryIntegerEncoding); false otherwise,
// dst unchanged.
func appendIntString(dst, s []byte) ([]byte, bool) {
	if len(s) > 11 || len(s) == 0 || (s[0] != '-' && (s[0] < '0' || s[0] > '9')) {
		return dst, false
	}
	v, ok := parseCanonicalInt(s)
	if !ok || v < math.MinInt32 || v > math.MaxInt32 {
		return dst, false
	}
	switch {
	case v >= math.MinInt8 && v <= math.MaxInt8:
		return append(dst, 0xc0|encInt8, byte(v)), true
	case v >= math.MinInt16 && v <= math.MaxInt16:
		return binary.LittleEndian.AppendUint16(append(dst, 0xc0|encInt16), uint16(v)), true
	default:
		return binary.LittleEndian.AppendUint32(append(dst, 0xc0|encInt32), uint32(v)), true
	}
}

// appendBlob appends s as a length-prefixed string, LZF compressed when
// z is set, s is over 20 bytes and that saves at least 4 bytes.
func appendBlob(dst, s []byte, z *LZF) []byte {
	if z != nil && len(s) > 20 {
		if out, ok := z.compress(s); ok {
			dst = append(dst, 0xc0|encLZF)
			dst = appendLength(dst, uint64(len(out)))
			dst = appendLength(dst, uint64(len(s)))
			return append(dst, out...)
		}
	}
	return append(appendLength(dst, uint64(len(s))), s...)
}

// AppendStringHead appends the record of a string key whose value is
// stored raw (not LZF compressed) up to the value's bytes: the expiry
// opcode when expireAtMs > 0, the type, the key and the value's length.
// The caller then appends exactly valLen bytes of value, which lets it
// copy a big value in slices (the snapshot's big value encoder pauses
// between them for clients). valLen must exceed 11, so that the value
// is not one AppendString would integer-encode; the record is then what
// AppendString writes without compression.
func AppendStringHead(dst, key []byte, valLen int, expireAtMs int64) []byte {
	if expireAtMs > 0 {
		dst = append(dst, opExpireTimeMs)
		dst = binary.LittleEndian.AppendUint64(dst, uint64(expireAtMs))
	}
	dst = append(dst, typeString)
	dst = appendRDBString(dst, key, nil)
	return appendLength(dst, uint64(valLen))
}
