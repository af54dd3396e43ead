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
//	[flags 1][atime 3][klen uvarint][vlen uvarint][expireAt 8, if flagExpire][mcFlags 4, mcCAS 8, if flagMeta][key][value]
//
// flags holds the Type in its low 3 bits. A string's value is its bytes; a
// collection's value is the 4-byte little-endian index of its object in the
// database's object table. atime is the LRU clock (seconds, 24 bits, as in
// Redis) of the last access: OBJECT IDLETIME, eviction and memcached's mg l
// read it. It and the memcached item state (flagFetched, flagStale,
// flagWon; only with flagMeta) describe accesses, not the value, so they
// change in place without counting as a write.
const (
	typeMask    = 0x07
	flagExpire  = 0x08
	flagMeta    = 0x10
	flagFetched = 0x20 // read since written (mg h)
	flagStale   = 0x40 // invalidated (md I, ms I): served, but a client should recache
	flagWon     = 0x80 // a client was told it won the right to recache (mg W)

	metaSize  = 12
	atimeSize = 3

	// LRUClockMax is where the 24-bit LRU clock wraps.
	LRUClockMax = 1<<24 - 1
)

// LRUClock is the LRU clock (seconds, 24 bits) at unix milliseconds ms.
func LRUClock(ms int64) uint32 { return uint32(ms/1000) & LRUClockMax }

// IdleSeconds is how long ago, in seconds, LRU clock value atime was, at
// clock now (the clock wraps every 194 days, as Redis's does).
func IdleSeconds(atime, now uint32) int64 {
	if now >= atime {
		return int64(now - atime)
	}
	return int64(now + LRUClockMax - atime)
}

// header is a decoded entry header.
type header struct {
	flags    byte
	key      []byte // views into the chunk
	val      []byte
	expireAt int64
	mcFlags  uint32
	mcCAS    uint64
	atime    uint32 // LRU clock of the last access
}

func decodeHeader(b []byte) header {
	h := header{flags: b[0], atime: uint32(b[1]) | uint32(b[2])<<8 | uint32(b[3])<<16}
	klen, n1 := binary.Uvarint(b[1+atimeSize:])
	vlen, n2 := binary.Uvarint(b[1+atimeSize+n1:])
	off := 1 + atimeSize + n1 + n2
	if h.flags&flagExpire != 0 {
		h.expireAt = int64(binary.LittleEndian.Uint64(b[off:]))
		off += 8
	}
	if h.flags&flagMeta != 0 {
		h.mcFlags = binary.LittleEndian.Uint32(b[off:])
		h.mcCAS = binary.LittleEndian.Uint64(b[off+4:])
		off += metaSize
	}
	h.key = b[off : off+int(klen) : off+int(klen)]
	off += int(klen)
	h.val = b[off : off+int(vlen) : off+int(vlen)]
	return h
}

// keyOf returns only the key of an encoded entry (the index's hot path).
func keyOf(b []byte) []byte {
	klen, n1 := binary.Uvarint(b[1+atimeSize:])
	_, n2 := binary.Uvarint(b[1+atimeSize+n1:])
	off := 1 + atimeSize + n1 + n2
	if b[0]&flagExpire != 0 {
		off += 8
	}
	if b[0]&flagMeta != 0 {
		off += metaSize
	}
	return b[off : off+int(klen)]
}

// setAtime stores the LRU clock of an access into an encoded entry.
func setAtime(b []byte, atime uint32) {
	b[1], b[2], b[3] = byte(atime), byte(atime>>8), byte(atime>>16)
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
	n := 1 + atimeSize + uvarintLen(uint64(klen)) + uvarintLen(uint64(vlen)) + klen + vlen
	if flags&flagExpire != 0 {
		n += 8
	}
	if flags&flagMeta != 0 {
		n += metaSize
	}
	return n
}

// encode writes an entry into b (len(b) >= encodedSize) and returns the
// value's region so callers can fill it in place.
func encode(b []byte, flags byte, atime uint32, key []byte, vlen int, v *Value) []byte {
	b[0] = flags
	setAtime(b, atime)
	off := 1 + atimeSize
	off += binary.PutUvarint(b[off:], uint64(len(key)))
	off += binary.PutUvarint(b[off:], uint64(vlen))
	if flags&flagExpire != 0 {
		binary.LittleEndian.PutUint64(b[off:], uint64(v.ExpireAt))
		off += 8
	}
	if flags&flagMeta != 0 {
		binary.LittleEndian.PutUint32(b[off:], v.MCFlags)
		binary.LittleEndian.PutUint64(b[off+4:], v.MCCAS)
		off += metaSize
	}
	off += copy(b[off:], key)
	return b[off : off+vlen]
}

// entryFlags is the flags byte an entry holding v starts with.
func (v *Value) entryFlags() byte {
	flags := byte(v.Type)
	if v.ExpireAt != 0 {
		flags |= flagExpire
	}
	if v.Meta {
		flags |= flagMeta
		if v.MCFetched {
			flags |= flagFetched
		}
		if v.MCStale {
			flags |= flagStale
		}
		if v.MCWon {
			flags |= flagWon
		}
	}
	return flags
}
