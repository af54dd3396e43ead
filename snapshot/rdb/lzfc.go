package rdb

import (
	"encoding/binary"
	"math/bits"
)

// LZF compresses strings for RDB records (rdbcompression yes) into the LZF
// format that Redis's lzf_decompress reads: literal runs of 1-32 bytes
// (a control byte 0-31, then the bytes) and back references of 3-264 bytes
// at a distance of 1-8192 (length-2 and distance-1 in two bytes, or three
// when length-2 is 7 or more).
//
// Its hash table of earlier positions is kept and reused from one string
// to the next without being cleared: a compressor that zeroed a 64 KiB
// table (and allocated its output) for every 100-byte value spent nearly
// all its time there. Entries are stored as base+position, and base moves
// past every string compressed, so an entry below base is from an earlier
// string and ignored; the table is cleared only when base wraps.
//
// The zero value is ready to use. Not safe for concurrent use: each
// encoder owns one.
type LZF struct {
	tab  []uint32
	base uint32 // tab entries below base belong to earlier inputs
	out  []byte // the compressed bytes of the last compress
}

const (
	lzfMaxLit   = 32
	lzfMaxOff   = 1 << 13
	lzfMaxMatch = 264
	lzfMaxHLog  = 14 // 16K entries, 64 KiB: as far as 8 KiB windows gain
	lzfMinHLog  = 8
)

// compress returns the LZF form of in if it is at most len(in)-4 bytes
// (Redis stores a string compressed only when that saves 4 bytes);
// otherwise ok is false. The result is valid until the next call.
func (z *LZF) compress(in []byte) (out []byte, ok bool) {
	n := len(in)
	limit := n - 4
	if limit < 2 || n > 1<<30 {
		return nil, false // (positions are uint32 offsets from base)
	}
	shift := z.prepare(n)
	if cap(z.out) < limit {
		z.out = make([]byte, limit)
	}
	out = z.out[:limit]
	tab, base := z.tab[:1<<(32-shift)], z.base
	z.base += uint32(n) + 1

	op := 1 // out[0] is the first literal run's control byte
	lit, misses := 0, 0
	ip := 0
	for ip+4 <= n {
		v := binary.LittleEndian.Uint32(in[ip:]) & 0xffffff
		h := (v * 2654435761) >> shift
		e := tab[h]
		tab[h] = base + uint32(ip)
		if e >= base {
			r := int(e - base)
			if off := ip - r - 1; off < lzfMaxOff && binary.LittleEndian.Uint32(in[r:])&0xffffff == v {
				m := matchLen(in, r, ip)
				// Close the literal run (or drop its unused control
				// byte), then the reference, then a new run's control
				// byte: 4 bytes at most.
				if op+4 > limit {
					return nil, false
				}
				if lit > 0 {
					out[op-lit-1] = byte(lit - 1)
				} else {
					op--
				}
				l := m - 2
				if l < 7 {
					out[op] = byte(off>>8 | l<<5)
					out[op+1] = byte(off)
					op += 2
				} else {
					out[op] = byte(off>>8 | 7<<5)
					out[op+1] = byte(l - 7)
					out[op+2] = byte(off)
					op += 3
				}
				op++
				lit, misses = 0, 0
				ip += m
				// Index the match's last two positions, so a repetition
				// that continues past it is found at once.
				for p := ip - 2; p < ip && p+4 <= n; p++ {
					w := binary.LittleEndian.Uint32(in[p:]) & 0xffffff
					tab[(w*2654435761)>>shift] = base + uint32(p)
				}
				continue
			}
		}
		// No match: literals. After 32 misses in a row, probe every
		// second position, then every third...: incompressible data
		// goes through fast (it fails the 4-byte rule anyway), as in
		// Snappy; a match resets the pace.
		misses++
		// (Byte by byte here: appendLiterals is not inlined into this
		// big function, and a call per literal slowed BenchmarkLZFCompress.)
		for end := min(ip+1+misses>>5, n-3); ip < end; ip++ {
			if op >= limit {
				return nil, false
			}
			out[op] = in[ip]
			op++
			if lit++; lit == lzfMaxLit {
				out[op-lit-1] = lzfMaxLit - 1
				lit = 0
				op++
			}
		}
	}
	// The last bytes, too few to hash.
	if op, lit, ok = appendLiterals(out, in[ip:], op, lit); !ok {
		return nil, false
	}
	if lit > 0 {
		out[op-lit-1] = byte(lit - 1)
	} else {
		op--
	}
	if op > limit {
		return nil, false
	}
	return out[:op], true
}

// appendLiterals adds lits to the literal run of lit bytes that ends at
// out[op] (its control byte at out[op-lit-1]), closing full runs of 32
// and opening the next; false when out is too short.
func appendLiterals(out, lits []byte, op, lit int) (int, int, bool) {
	for len(lits) > 0 {
		k := min(len(lits), lzfMaxLit-lit)
		if op+k > len(out) {
			return op, lit, false
		}
		copy(out[op:op+k], lits[:k])
		op += k
		lit += k
		lits = lits[k:]
		if lit == lzfMaxLit {
			out[op-lit-1] = lzfMaxLit - 1
			lit = 0
			op++
		}
	}
	return op, lit, true
}

// matchLen is the length, 3 to lzfMaxMatch, of the match of in[ip:] at
// in[r:] (r < ip), whose first 3 bytes are known equal.
func matchLen(in []byte, r, ip int) int {
	max := min(len(in)-ip, lzfMaxMatch)
	m := 3
	for m+8 <= max {
		x := binary.LittleEndian.Uint64(in[r+m:]) ^ binary.LittleEndian.Uint64(in[ip+m:])
		if x != 0 {
			return m + bits.TrailingZeros64(x)/8
		}
		m += 8
	}
	for m < max && in[r+m] == in[ip+m] {
		m++
	}
	return m
}

// prepare readies the table for an input of n bytes and returns the hash
// shift. The part of the table used depends on n alone (small inputs,
// such as a DUMP of one value, use and allocate a small table), so the
// output is a function of the input, whatever came before. The table is
// cleared only when base would wrap.
func (z *LZF) prepare(n int) (shift uint32) {
	hlog := uint32(bits.Len(uint(n)))
	hlog = min(max(hlog, lzfMinHLog), lzfMaxHLog)
	if len(z.tab) < 1<<hlog {
		z.tab = make([]uint32, 1<<hlog)
		z.base = 1
	} else if uint64(z.base)+uint64(n)+1 > 1<<32-1 {
		clear(z.tab)
		z.base = 1
	}
	return 32 - hlog
}
