package rdb

import (
	"encoding/binary"
	"strconv"
)

// Plain string records (the bulk of most dumps) are taken straight from
// the input buffer when they lie in it whole: an optional expiry opcode,
// type 0, a plain key and a plain, integer or LZF value. One CRC update per
// record, no copy of the key or value (fn sees them in the buffer), no call
// per field. Anything else — a record crossing the end of the buffer, an
// encoded key, implausible lengths, corrupt LZF data — is left to the
// general path, which reads the same bytes again and reports errors with
// their offsets; so this path never reports a malformed file itself.

// bufLen decodes an RDB length at b[p:]: n, the position after it, special
// (the 0xC0 forms; n is then the encoding) and ok (complete within b).
func bufLen(b []byte, p int) (n uint64, next int, special, ok bool) {
	if p >= len(b) {
		return 0, p, false, false
	}
	c := b[p]
	switch c >> 6 {
	case 0:
		return uint64(c & 0x3f), p + 1, false, true
	case 1:
		if p+2 > len(b) {
			return 0, p, false, false
		}
		return uint64(c&0x3f)<<8 | uint64(b[p+1]), p + 2, false, true
	case 3:
		return uint64(c & 0x3f), p + 1, true, true
	}
	switch c {
	case 0x80:
		if p+5 > len(b) {
			return 0, p, false, false
		}
		return uint64(binary.BigEndian.Uint32(b[p+1:])), p + 5, false, true
	case 0x81:
		if p+9 > len(b) {
			return 0, p, false, false
		}
		return binary.BigEndian.Uint64(b[p+1:]), p + 9, false, true
	}
	return 0, p, false, false
}

// fastStrings hands fn every plain string record at the head of the
// buffered input, stopping at the first record it does not take. It is
// called only at a record boundary (rec empty).
func (s *skimmer) fastStrings() error {
	for {
		b, _ := s.br.Peek(s.br.Buffered())
		n, err := s.fastString(b)
		if n == 0 || err != nil {
			return err
		}
	}
}

// fastString takes one plain string record from the start of b, returning
// its length (0: not taken, nothing consumed).
func (s *skimmer) fastString(b []byte) (int, error) {
	p := 0
	expireMs := int64(0)
	for {
		if p >= len(b) {
			return 0, nil
		}
		switch b[p] {
		case opExpireTimeMs:
			if p+9 > len(b) {
				return 0, nil
			}
			expireMs = max(int64(binary.LittleEndian.Uint64(b[p+1:])), 0)
			p += 9
			continue
		case opExpireTime:
			if p+5 > len(b) {
				return 0, nil
			}
			expireMs = int64(binary.LittleEndian.Uint32(b[p+1:])) * 1000
			p += 5
			continue
		case typeString:
			p++
		default:
			return 0, nil
		}
		break
	}
	klen, p, special, ok := bufLen(b, p)
	if !ok || special || klen > uint64(len(b)-p) {
		return 0, nil
	}
	key := b[p : p+int(klen)]
	p += int(klen)
	vlen, p, special, ok := bufLen(b, p)
	if !ok {
		return 0, nil
	}
	var val []byte
	switch {
	case !special:
		if vlen > uint64(len(b)-p) {
			return 0, nil
		}
		val = b[p : p+int(vlen)]
		p += int(vlen)
	case vlen == encInt8 && p+1 <= len(b):
		s.valBuf = strconv.AppendInt(s.valBuf[:0], int64(int8(b[p])), 10)
		val, p = s.valBuf, p+1
	case vlen == encInt16 && p+2 <= len(b):
		s.valBuf = strconv.AppendInt(s.valBuf[:0], int64(int16(binary.LittleEndian.Uint16(b[p:]))), 10)
		val, p = s.valBuf, p+2
	case vlen == encInt32 && p+4 <= len(b):
		s.valBuf = strconv.AppendInt(s.valBuf[:0], int64(int32(binary.LittleEndian.Uint32(b[p:]))), 10)
		val, p = s.valBuf, p+4
	case vlen == encLZF:
		clen, q, sp, ok := bufLen(b, p)
		if !ok || sp {
			return 0, nil
		}
		ulen, q, sp, ok := bufLen(b, q)
		if !ok || sp || clen == 0 || ulen == 0 || clen > uint64(len(b)-q) || ulen > clen*88+32 {
			return 0, nil
		}
		out, err := lzfDecompress(s.valBuf[:0], b[q:q+int(clen)], int(ulen))
		if err != nil {
			return 0, nil
		}
		s.valBuf = out
		val, p = out, q+int(clen)
	default:
		return 0, nil
	}
	// Taken: account for it as the general path would, then hand it out.
	s.crc.Write(b[:p])
	s.keyOff = s.off
	s.off += int64(p)
	s.expireMs = expireMs
	s.recMCFlags, s.mcFlags = s.mcFlags, 0
	s.typ = typeString
	err := s.emitString(key, val)
	_, _ = s.br.Discard(p) // the buffer is untouched until the next read
	return p, err
}
