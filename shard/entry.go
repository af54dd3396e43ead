package shard

import (
	"encoding/binary"
)

// Type is the Redis type of a value.
type Type uint8

const (
	TypeString Type = iota
	TypeList
	TypeHash
	TypeSet
	TypeZSet
	TypeStream
)

// String returns the name TYPE reports.
func (t Type) String() string {
	switch t {
	case TypeString:
		return "string"
	case TypeList:
		return "list"
	case TypeHash:
		return "hash"
	case TypeSet:
		return "set"
	case TypeZSet:
		return "zset"
	case TypeStream:
		return "stream"
	}
	return "none"
}

// An entry is stored in one slab chunk:
//
//	[flags 1][klen uvarint][vlen uvarint][expireAt 8, if flagExpire][mcFlags 4, mcCAS 8, if flagMeta][key][value]
//
// flags holds the Type in its low 3 bits. A string's value is its bytes; a
// collection's value is the 4-byte little-endian index of its object in the
// database's object table.
const (
	typeMask   = 0x07
	flagExpire = 0x08
	flagMeta   = 0x10
)

// header is a decoded entry header.
type header struct {
	flags    byte
	key      []byte // views into the chunk
	val      []byte
	expireAt int64
	mcFlags  uint32
	mcCAS    uint64
}

func decodeHeader(b []byte) header {
	h := header{flags: b[0]}
	klen, n1 := binary.Uvarint(b[1:])
	vlen, n2 := binary.Uvarint(b[1+n1:])
	off := 1 + n1 + n2
	if h.flags&flagExpire != 0 {
		h.expireAt = int64(binary.LittleEndian.Uint64(b[off:]))
		off += 8
	}
	if h.flags&flagMeta != 0 {
		h.mcFlags = binary.LittleEndian.Uint32(b[off:])
		h.mcCAS = binary.LittleEndian.Uint64(b[off+4:])
		off += 12
	}
	h.key = b[off : off+int(klen) : off+int(klen)]
	off += int(klen)
	h.val = b[off : off+int(vlen) : off+int(vlen)]
	return h
}

// keyOf returns only the key of an encoded entry (the index's hot path).
func keyOf(b []byte) []byte {
	klen, n1 := binary.Uvarint(b[1:])
	_, n2 := binary.Uvarint(b[1+n1:])
	off := 1 + n1 + n2
	if b[0]&flagExpire != 0 {
		off += 8
	}
	if b[0]&flagMeta != 0 {
		off += 12
	}
	return b[off : off+int(klen)]
}

func uvarintLen(x uint64) int {
	n := 1
	for x >= 0x80 {
		x >>= 7
		n++
	}
	return n
}

// encodedSize is the chunk size an entry needs.
func encodedSize(flags byte, klen, vlen int) int {
	n := 1 + uvarintLen(uint64(klen)) + uvarintLen(uint64(vlen)) + klen + vlen
	if flags&flagExpire != 0 {
		n += 8
	}
	if flags&flagMeta != 0 {
		n += 12
	}
	return n
}

// encode writes an entry into b (len(b) >= encodedSize) and returns the
// value's region so callers can fill it in place.
func encode(b []byte, flags byte, key []byte, vlen int, expireAt int64, mcFlags uint32, mcCAS uint64) []byte {
	b[0] = flags
	off := 1 + binary.PutUvarint(b[1:], uint64(len(key)))
	off += binary.PutUvarint(b[off:], uint64(vlen))
	if flags&flagExpire != 0 {
		binary.LittleEndian.PutUint64(b[off:], uint64(expireAt))
		off += 8
	}
	if flags&flagMeta != 0 {
		binary.LittleEndian.PutUint32(b[off:], mcFlags)
		binary.LittleEndian.PutUint64(b[off+4:], mcCAS)
		off += 12
	}
	off += copy(b[off:], key)
	return b[off : off+vlen]
}
