// Package hll implements Redis's HyperLogLog byte for byte: the same hash
// (MurmurHash64A, seed 0xadc83b19), the same 16-byte header, the same
// sparse and dense register encodings and the same estimator, so a
// HyperLogLog string moves between Damselfly and Redis (DUMP/RESTORE, RDB,
// replication) unchanged and PFCOUNT returns Redis's numbers.
//
// Layout of the string:
//
//	"HYLL" | encoding (0 dense, 1 sparse) | 3 zero bytes | cached cardinality (8, little endian) | registers
//
// The top bit of the last cardinality byte marks the cache stale. Dense
// registers are 16384 six-bit fields packed least significant bit first.
// Sparse registers are run-length opcodes: ZERO (00xxxxxx: 1..64 zero
// registers), XZERO (01xxxxxx xxxxxxxx: 1..16384 zero registers) and VAL
// (1vvvvvxx: 1..4 registers of value 1..32).
//
// Invariants: functions that may change a string's length return the new
// slice; functions that keep it change it in place. A sparse string is
// only ever changed by the same steps Redis takes (split an opcode, then
// merge equal neighbours in a window of five opcodes), because the exact
// bytes, not just the registers, must match Redis's.
package hll

import (
	"encoding/binary"
	"math"
	"math/bits"
)

const (
	P          = 14
	Registers  = 1 << P // 16384
	q          = 64 - P
	regBits    = 6
	regMax     = 1<<regBits - 1
	HeaderSize = 16
	DenseSize  = HeaderSize + (Registers*regBits+7)/8 // 12304

	Dense  = 0
	Sparse = 1

	// DefaultSparseMaxBytes is Redis's hll-sparse-max-bytes.
	DefaultSparseMaxBytes = 3000

	sparseValMax   = 32
	sparseValLen   = 4
	sparseZeroMax  = 64
	sparseXZeroMax = 16384

	seed = 0xadc83b19
)

// Murmur64A is MurmurHash64A as Redis uses it (little-endian words on
// every architecture).
func Murmur64A(key []byte, seed uint64) uint64 {
	const m = 0xc6a4a7935bd1e995
	const r = 47
	h := seed ^ uint64(len(key))*m
	for len(key) >= 8 {
		k := binary.LittleEndian.Uint64(key)
		k *= m
		k ^= k >> r
		k *= m
		h ^= k
		h *= m
		key = key[8:]
	}
	if len(key) > 0 {
		for i := len(key) - 1; i >= 0; i-- {
			h ^= uint64(key[i]) << (8 * i)
		}
		h *= m
	}
	h ^= h >> r
	h *= m
	h ^= h >> r
	return h
}

// PatLen returns the register an element maps to and the length of the
// run of zeros (plus one) in the rest of its hash.
func PatLen(ele []byte) (int, uint8) {
	h := Murmur64A(ele, seed)
	idx := int(h & (Registers - 1))
	h >>= P
	h |= 1 << q // bounds the count to q+1
	return idx, uint8(bits.TrailingZeros64(h) + 1)
}

// New returns an empty HyperLogLog: sparse, one XZERO opcode.
func New() []byte {
	p := make([]byte, HeaderSize+2)
	copy(p, "HYLL")
	p[4] = Sparse
	setXZero(p[HeaderSize:], Registers)
	return p
}

// Valid reports whether p has the shape of a HyperLogLog string (what
// Redis checks before using one; a sparse body is checked as it is read).
func Valid(p []byte) bool {
	if len(p) < HeaderSize || string(p[:4]) != "HYLL" || p[4] > Sparse {
		return false
	}
	return p[4] != Dense || len(p) == DenseSize
}

// Encoding returns Dense or Sparse.
func Encoding(p []byte) int { return int(p[4]) }

// Cached returns the cached cardinality, if valid.
func Cached(p []byte) (uint64, bool) {
	if p[15]&0x80 != 0 {
		return 0, false
	}
	return binary.LittleEndian.Uint64(p[8:16]), true
}

// SetCached stores card as the cached cardinality.
func SetCached(p []byte, card uint64) { binary.LittleEndian.PutUint64(p[8:16], card) }

// Invalidate marks the cached cardinality stale.
func Invalidate(p []byte) { p[15] |= 0x80 }

// DenseGet reads register i of dense registers regs.
func DenseGet(regs []byte, i int) uint8 {
	b := i * regBits / 8
	fb := uint(i * regBits & 7)
	v := uint(regs[b]) >> fb
	if fb > 8-regBits {
		v |= uint(regs[b+1]) << (8 - fb)
	}
	return uint8(v & regMax)
}

// DenseSetReg writes register i of dense registers regs.
func DenseSetReg(regs []byte, i int, val uint8) {
	b := i * regBits / 8
	fb := uint(i * regBits & 7)
	regs[b] = regs[b]&^byte(regMax<<fb) | byte(uint(val)<<fb)
	if fb > 8-regBits {
		regs[b+1] = regs[b+1]&^byte(regMax>>(8-fb)) | byte(uint(val)>>(8-fb))
	}
}

// DenseSet raises register i of dense registers to count; it reports
// whether the register changed.
func DenseSet(regs []byte, i int, count uint8) bool {
	if count > DenseGet(regs, i) {
		DenseSetReg(regs, i, count)
		return true
	}
	return false
}

// sparse opcodes
func isZero(b byte) bool  { return b&0xc0 == 0 }
func isXZero(b byte) bool { return b&0xc0 == 0x40 }
func isVal(b byte) bool   { return b&0x80 != 0 }
func zeroLen(b byte) int  { return int(b&0x3f) + 1 }
func xzeroLen(p []byte) int {
	return (int(p[0]&0x3f)<<8 | int(p[1])) + 1
}
func valValue(b byte) uint8 { return (b>>2)&0x1f + 1 }
func valLen(b byte) int     { return int(b&3) + 1 }
func valOp(v uint8, n int) byte {
	return byte((int(v)-1)<<2|(n-1)) | 0x80
}
func setXZero(p []byte, n int) {
	n--
	p[0] = byte(n>>8) | 0x40
	p[1] = byte(n)
}

// opLen is the byte length of the opcode at p[0] and the registers it covers.
func opLen(p []byte) (size, span int) {
	switch {
	case isZero(p[0]):
		return 1, zeroLen(p[0])
	case isVal(p[0]):
		return 1, valLen(p[0])
	default:
		if len(p) < 2 {
			return 2, 0
		}
		return 2, xzeroLen(p)
	}
}

// walkSparse calls fn for every run of the sparse body (value 0 for zero
// runs) and reports whether the runs cover exactly Registers registers.
func walkSparse(body []byte, fn func(first, n int, v uint8) bool) bool {
	idx := 0
	for len(body) > 0 {
		size, span := opLen(body)
		if size > len(body) {
			return false
		}
		v := uint8(0)
		if isVal(body[0]) {
			v = valValue(body[0])
		}
		if idx+span > Registers {
			return false
		}
		if fn != nil && !fn(idx, span, v) {
			return false
		}
		idx += span
		body = body[size:]
	}
	return idx == Registers
}

// ToDense converts a sparse HyperLogLog to dense (header kept, encoding
// changed); ok is false when the sparse body is corrupt.
func ToDense(p []byte) ([]byte, bool) {
	if p[4] == Dense {
		return p, true
	}
	d := make([]byte, DenseSize)
	copy(d, p[:HeaderSize])
	d[4] = Dense
	regs := d[HeaderSize:]
	ok := walkSparse(p[HeaderSize:], func(first, n int, v uint8) bool {
		if v != 0 {
			for i := first; i < first+n; i++ {
				DenseSetReg(regs, i, v)
			}
		}
		return true
	})
	if !ok {
		return nil, false
	}
	return d, true
}

// SparseSet raises register idx of sparse p to count, promoting p to dense
// when count does not fit a VAL opcode or the string would outgrow
// sparseMax bytes. It returns the (possibly new) string and 1 if a register
// changed, 0 if not, -1 if p is corrupt.
func SparseSet(p []byte, idx int, count uint8, sparseMax int) ([]byte, int) {
	if count > sparseValMax {
		return promote(p, idx, count)
	}
	// Find the opcode covering idx, and the one before it.
	body := HeaderSize
	pos, prev, first, span := body, -1, 0, 0
	for pos < len(p) {
		size, s := opLen(p[pos:])
		span = s
		if pos+size > len(p) || s == 0 {
			return p, -1
		}
		if idx <= first+span-1 {
			break
		}
		prev = pos
		pos += size
		first += span
	}
	if span == 0 || pos >= len(p) {
		return p, -1
	}
	op := p[pos]
	oldSize := 1
	if isXZero(op) {
		oldSize = 2
	}
	switch {
	case isVal(op):
		if valValue(op) >= count {
			return p, 0
		}
		if valLen(op) == 1 {
			p[pos] = valOp(count, 1)
			return mergeAt(p, prev, body), 1
		}
	case isZero(op) && zeroLen(op) == 1:
		p[pos] = valOp(count, 1)
		return mergeAt(p, prev, body), 1
	}
	// Split the opcode around idx into at most XZERO VAL XZERO.
	var seq [5]byte
	n := 0
	last := first + span - 1
	zeros := func(l int) {
		if l > sparseZeroMax {
			setXZero(seq[n:], l)
			n += 2
		} else {
			seq[n] = byte(l - 1)
			n++
		}
	}
	if isVal(op) {
		cur := valValue(op)
		if idx != first {
			seq[n] = valOp(cur, idx-first)
			n++
		}
		seq[n] = valOp(count, 1)
		n++
		if idx != last {
			seq[n] = valOp(cur, last-idx)
			n++
		}
	} else {
		if idx != first {
			zeros(idx - first)
		}
		seq[n] = valOp(count, 1)
		n++
		if idx != last {
			zeros(last - idx)
		}
	}
	delta := n - oldSize
	if delta > 0 && len(p)+delta > sparseMax {
		return promote(p, idx, count)
	}
	q := make([]byte, 0, len(p)+delta)
	q = append(q, p[:pos]...)
	q = append(q, seq[:n]...)
	q = append(q, p[pos+oldSize:]...)
	return mergeAt(q, prev, body), 1
}

// mergeAt joins adjacent VAL opcodes of equal value (when their lengths
// fit one opcode), looking at up to five opcodes from prev (or the body's
// start), and marks the cache stale.
func mergeAt(p []byte, prev, body int) []byte {
	pos := body
	if prev >= 0 {
		pos = prev
	}
	for scan := 5; pos < len(p) && scan > 0; scan-- {
		switch {
		case isXZero(p[pos]):
			pos += 2
			continue
		case isZero(p[pos]):
			pos++
			continue
		}
		if pos+1 < len(p) && isVal(p[pos+1]) {
			v1, v2 := valValue(p[pos]), valValue(p[pos+1])
			if l := valLen(p[pos]) + valLen(p[pos+1]); v1 == v2 && l <= sparseValLen {
				p[pos+1] = valOp(v1, l)
				p = append(p[:pos], p[pos+1:]...)
				continue // try the merged opcode with the next one
			}
		}
		pos++
	}
	Invalidate(p)
	return p
}

func promote(p []byte, idx int, count uint8) ([]byte, int) {
	d, ok := ToDense(p)
	if !ok {
		return p, -1
	}
	DenseSet(d[HeaderSize:], idx, count)
	return d, 1
}

// Add adds ele to p; see SparseSet for the results.
func Add(p []byte, ele []byte, sparseMax int) ([]byte, int) {
	idx, count := PatLen(ele)
	if p[4] == Dense {
		if DenseSet(p[HeaderSize:], idx, count) {
			return p, 1
		}
		return p, 0
	}
	return SparseSet(p, idx, count, sparseMax)
}

// unpackDense calls fn with every four registers packed in three bytes of
// the dense registers (Registers*6/8 bytes): the fast path of Merge and
// Count.
func unpackDense(regs []byte, fn func(i int, a, b, c, d uint8)) {
	regs = regs[:Registers*regBits/8]
	for i, j := 0, 0; j+3 <= len(regs); i, j = i+4, j+3 {
		b0, b1, b2 := regs[j], regs[j+1], regs[j+2]
		fn(i, b0&63, (b0>>6|b1<<2)&63, (b1>>4|b2<<4)&63, b2>>2)
	}
}

// Merge raises max[i] to p's register i for every register; it reports
// false when p is corrupt.
func Merge(max *[Registers]uint8, p []byte) bool {
	if p[4] == Dense {
		unpackDense(p[HeaderSize:], func(i int, a, b, c, d uint8) {
			m := max[i : i+4 : i+4]
			m[0] = maxU8(m[0], a)
			m[1] = maxU8(m[1], b)
			m[2] = maxU8(m[2], c)
			m[3] = maxU8(m[3], d)
		})
		return true
	}
	return walkSparse(p[HeaderSize:], func(first, n int, v uint8) bool {
		for i := first; i < first+n; i++ {
			if v > max[i] {
				max[i] = v
			}
		}
		return true
	})
}

// Count estimates the cardinality of p; ok is false when p is corrupt.
func Count(p []byte) (uint64, bool) {
	var histo [64]int
	if p[4] == Dense {
		unpackDense(p[HeaderSize:], func(_ int, a, b, c, d uint8) {
			histo[a]++
			histo[b]++
			histo[c]++
			histo[d]++
		})
	} else {
		ok := walkSparse(p[HeaderSize:], func(first, n int, v uint8) bool {
			histo[v] += n
			return true
		})
		if !ok {
			return 0, false
		}
	}
	return estimate(&histo), true
}

func maxU8(a, b uint8) uint8 {
	if b > a {
		return b
	}
	return a
}

// CountRegisters estimates the cardinality of plain registers (the union
// PFCOUNT computes over several keys).
func CountRegisters(regs *[Registers]uint8) uint64 {
	var histo [64]int
	for _, v := range regs {
		histo[v&63]++
	}
	return estimate(&histo)
}

// estimate is Ertl's improved estimator ("New cardinality estimation
// algorithms for HyperLogLog sketches", arXiv:1702.01284), evaluated in
// the same order as Redis so the rounding is identical. Explicit float64
// conversions keep the compiler from fusing multiply-adds.
func estimate(histo *[64]int) uint64 {
	const m = float64(Registers)
	const alphaInf = 0.721347520444481703680 // 0.5/ln(2)
	z := m * tau(float64(m-float64(histo[q+1]))/m)
	for j := q; j >= 1; j-- {
		z += float64(histo[j])
		z *= 0.5
	}
	z += float64(m * sigma(float64(histo[0])/m))
	return uint64(math.Round(float64(alphaInf*m*m) / z))
}

func sigma(x float64) float64 {
	if x == 1 {
		return math.Inf(1)
	}
	y, z := 1.0, x
	for {
		x *= x
		zp := z
		z += float64(x * y)
		y += y
		if zp == z {
			return z
		}
	}
}

func tau(x float64) float64 {
	if x == 0 || x == 1 {
		return 0
	}
	y, z := 1.0, 1-x
	for {
		x = math.Sqrt(x)
		zp := z
		y *= 0.5
		d := 1 - x
		z -= float64(float64(d*d) * y)
		if zp == z {
			return z / 3
		}
	}
}

// Decode renders a sparse body as PFDEBUG DECODE does ("z:3 v:2,1 Z:100").
func Decode(p []byte) string {
	var out []byte
	body := p[HeaderSize:]
	for len(body) > 0 {
		if len(out) > 0 {
			out = append(out, ' ')
		}
		switch {
		case isZero(body[0]):
			out = append(out, "z:"...)
			out = appendInt(out, zeroLen(body[0]))
			body = body[1:]
		case isXZero(body[0]):
			if len(body) < 2 {
				return string(out)
			}
			out = append(out, "Z:"...)
			out = appendInt(out, xzeroLen(body))
			body = body[2:]
		default:
			out = append(out, "v:"...)
			out = appendInt(out, int(valValue(body[0])))
			out = append(out, ',')
			out = appendInt(out, valLen(body[0]))
			body = body[1:]
		}
	}
	return string(out)
}

func appendInt(b []byte, n int) []byte {
	if n >= 10 {
		b = appendInt(b, n/10)
	}
	return append(b, byte('0'+n%10))
}
