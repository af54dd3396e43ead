package scripting

import (
	"bytes"
	"encoding/binary"
	"math"

	lua "github.com/yuin/gopher-lua"
)

// openStruct is Roberto Ierusalimschy's struct library as Redis bundles
// it: pack(fmt, ...), unpack(fmt, s [, pos]) and size(fmt).
func openStruct(L *lua.LState) *lua.LTable {
	t := L.NewTable()
	L.SetFuncs(t, map[string]lua.LGFunction{
		"pack":   structPack,
		"unpack": structUnpack,
		"size":   structSize,
	})
	return t
}

// structOpts is the running state of a format: byte order and alignment.
type structOpts struct {
	big      bool
	maxAlign int
}

// structItem reads the next option at fmt[*i]: its letter and size (0 for
// options without a fixed size).
func structItem(L *lua.LState, f string, i *int, o *structOpts) (byte, int) {
	opt := f[*i]
	*i++
	num := func(def int) int {
		if *i >= len(f) || f[*i] < '0' || f[*i] > '9' {
			return def
		}
		n := 0
		for *i < len(f) && f[*i] >= '0' && f[*i] <= '9' {
			n = n*10 + int(f[*i]-'0')
			*i++
			if n > 1<<20 {
				L.RaiseError("integral size out of limits")
			}
		}
		return n
	}
	switch opt {
	case 'b', 'B':
		return opt, 1
	case 'h', 'H':
		return opt, 2
	case 'l', 'L', 'T':
		return opt, 8
	case 'f':
		return opt, 4
	case 'd':
		return opt, 8
	case 'x':
		return opt, 1
	case 'i', 'I':
		n := num(4)
		if n < 1 || n > 8 {
			L.RaiseError("integral size %d is larger than limit of 8", n)
		}
		return opt, n
	case 'c':
		return opt, num(1)
	case 's', ' ':
		return opt, 0
	case '<':
		o.big = false
		return opt, 0
	case '>':
		o.big = true
		return opt, 0
	case '=':
		o.big = false
		return opt, 0
	case '!':
		o.maxAlign = num(8)
		return opt, 0
	}
	L.RaiseError("invalid format option '%c'", opt)
	return 0, 0
}

// structPad is the padding before an item of size n at offset off.
func structPad(opt byte, n, off int, o *structOpts) int {
	if opt == 'c' || opt == 's' || opt == 'x' || n <= 1 {
		return 0
	}
	align := min(n, o.maxAlign)
	if align <= 1 || align&(align-1) != 0 {
		return 0
	}
	return (align - off%align) % align
}

func structPack(L *lua.LState) int {
	f := L.CheckString(1)
	o := structOpts{maxAlign: 1}
	var b []byte
	arg := 2
	for i := 0; i < len(f); {
		opt, n := structItem(L, f, &i, &o)
		for range structPad(opt, n, len(b), &o) {
			b = append(b, 0)
		}
		switch opt {
		case 'b', 'B', 'h', 'H', 'l', 'L', 'T', 'i', 'I':
			v := float64(L.CheckNumber(arg))
			arg++
			var u uint64
			if v < 0 {
				u = uint64(int64(v))
			} else {
				u = uint64(v)
			}
			var tmp [8]byte
			if o.big {
				binary.BigEndian.PutUint64(tmp[:], u)
				b = append(b, tmp[8-n:]...)
			} else {
				binary.LittleEndian.PutUint64(tmp[:], u)
				b = append(b, tmp[:n]...)
			}
		case 'x':
			b = append(b, 0)
		case 'f', 'd':
			v := float64(L.CheckNumber(arg))
			arg++
			if opt == 'f' {
				b = appendUint(b, uint64(math.Float32bits(float32(v))), 4, o.big)
			} else {
				b = appendUint(b, math.Float64bits(v), 8, o.big)
			}
		case 'c', 's':
			s := L.CheckString(arg)
			arg++
			if opt == 's' {
				b = append(append(b, s...), 0)
				break
			}
			size := n
			if size == 0 {
				size = len(s)
			}
			if len(s) < size {
				L.ArgError(arg-1, "string too short")
			}
			b = append(b, s[:size]...)
		}
	}
	L.Push(lua.LString(b))
	return 1
}

func appendUint(b []byte, u uint64, n int, big bool) []byte {
	var tmp [8]byte
	if big {
		binary.BigEndian.PutUint64(tmp[:], u)
		return append(b, tmp[8-n:]...)
	}
	binary.LittleEndian.PutUint64(tmp[:], u)
	return append(b, tmp[:n]...)
}

func structUnpack(L *lua.LState) int {
	f := L.CheckString(1)
	data := L.CheckString(2)
	pos := L.OptInt(3, 1) - 1
	if pos < 0 || pos > len(data) {
		L.ArgError(3, "offset must be 1 or greater")
	}
	o := structOpts{maxAlign: 1}
	n0 := 0
	var prev lua.LValue = lua.LNil
	for i := 0; i < len(f); {
		opt, n := structItem(L, f, &i, &o)
		pos += structPad(opt, n, pos, &o)
		need := func(k int) {
			if pos+k > len(data) || pos+k < pos {
				L.ArgError(2, "data string too short")
			}
		}
		switch opt {
		case 'b', 'B', 'h', 'H', 'l', 'L', 'T', 'i', 'I':
			need(n)
			var tmp [8]byte
			var u uint64
			if o.big {
				copy(tmp[8-n:], data[pos:pos+n])
				u = binary.BigEndian.Uint64(tmp[:])
			} else {
				copy(tmp[:n], data[pos:pos+n])
				u = binary.LittleEndian.Uint64(tmp[:])
			}
			var v lua.LValue
			if opt == 'b' || opt == 'h' || opt == 'l' || opt == 'i' {
				shift := uint(64 - 8*n)
				v = lua.LNumber(int64(u<<shift) >> shift)
			} else {
				v = lua.LNumber(u)
			}
			L.Push(v)
			prev = v
			n0++
			pos += n
		case 'x':
			pos++
		case 'f', 'd':
			need(n)
			var tmp [8]byte
			var v float64
			if o.big {
				copy(tmp[8-n:], data[pos:pos+n])
				u := binary.BigEndian.Uint64(tmp[:])
				if n == 4 {
					v = float64(math.Float32frombits(uint32(u)))
				} else {
					v = math.Float64frombits(u)
				}
			} else {
				copy(tmp[:n], data[pos:pos+n])
				u := binary.LittleEndian.Uint64(tmp[:])
				if n == 4 {
					v = float64(math.Float32frombits(uint32(u)))
				} else {
					v = math.Float64frombits(u)
				}
			}
			L.Push(lua.LNumber(v))
			n0++
			pos += n
		case 'c':
			size := n
			if size == 0 {
				p, ok := prev.(lua.LNumber)
				if !ok {
					L.RaiseError("format 'c0' needs a previous size")
				}
				size = int(p)
				L.Pop(1)
				n0--
			}
			need(size)
			L.Push(lua.LString(data[pos : pos+size]))
			n0++
			pos += size
		case 's':
			e := bytes.IndexByte([]byte(data[pos:]), 0)
			if e < 0 {
				L.RaiseError("unfinished string in data")
			}
			L.Push(lua.LString(data[pos : pos+e]))
			n0++
			pos += e + 1
		}
	}
	L.Push(lua.LNumber(pos + 1))
	return n0 + 1
}

func structSize(L *lua.LState) int {
	f := L.CheckString(1)
	o := structOpts{maxAlign: 1}
	size := 0
	for i := 0; i < len(f); {
		opt, n := structItem(L, f, &i, &o)
		size += structPad(opt, n, size, &o)
		switch opt {
		case 's':
			L.ArgError(1, "options 'c0' - 's' have undefined sizes")
		case 'c':
			if n == 0 {
				L.ArgError(1, "options 'c0' - 's' have undefined sizes")
			}
		}
		size += n
	}
	L.Push(lua.LNumber(size))
	return 1
}
