package scripting

import (
	"encoding/binary"
	"math"

	lua "github.com/yuin/gopher-lua"
)

// openCMsgpack is lua-cmsgpack as Redis bundles it: pack(...) encodes its
// arguments one after the other; unpack(s) decodes every value in s.
func openCMsgpack(L *lua.LState) *lua.LTable {
	t := L.NewTable()
	L.SetFuncs(t, map[string]lua.LGFunction{
		"pack": func(L *lua.LState) int {
			if L.GetTop() == 0 {
				L.ArgError(0, "MessagePack pack needs input.")
			}
			var b []byte
			for i := 1; i <= L.GetTop(); i++ {
				b = mpEncode(b, L.Get(i), 0)
			}
			L.Push(lua.LString(b))
			return 1
		},
		"unpack": func(L *lua.LState) int {
			s := []byte(L.CheckString(1))
			n := 0
			for len(s) > 0 {
				v, rest, ok := mpDecode(L, s, 0)
				if !ok {
					L.RaiseError("Missing bytes in input.")
				}
				L.Push(v)
				n++
				s = rest
			}
			return n
		},
		"unpack_one":   func(L *lua.LState) int { return mpUnpackLimit(L, 1, 2) },
		"unpack_limit": func(L *lua.LState) int { return mpUnpackLimit(L, int(L.CheckNumber(2)), 3) },
	})
	t.RawSetString("_NAME", lua.LString("cmsgpack"))
	t.RawSetString("_VERSION", lua.LString("lua-cmsgpack 0.4.0"))
	t.RawSetString("_COPYRIGHT", lua.LString("Copyright (C) 2012, Salvatore Sanfilippo"))
	t.RawSetString("_DESCRIPTION", lua.LString("MessagePack C implementation for Lua"))
	return t
}

// mpUnpackLimit decodes at most limit values (0: all) starting at the
// offset in argument offArg; it returns the next offset (-1 at the end)
// and the values.
func mpUnpackLimit(L *lua.LState, limit, offArg int) int {
	s := []byte(L.CheckString(1))
	off := L.OptInt(offArg, 0)
	if off < 0 || off > len(s) {
		L.ArgError(offArg, "Offset is out of range")
	}
	rest := s[off:]
	var vals []lua.LValue
	for len(rest) > 0 && (limit <= 0 || len(vals) < limit) {
		v, r, ok := mpDecode(L, rest, 0)
		if !ok {
			L.RaiseError("Missing bytes in input.")
		}
		vals = append(vals, v)
		rest = r
	}
	next := len(s) - len(rest)
	if len(rest) == 0 {
		next = -1
	}
	L.Push(lua.LNumber(next))
	for _, v := range vals {
		L.Push(v)
	}
	return 1 + len(vals)
}

const mpMaxNesting = 16

func mpEncode(b []byte, v lua.LValue, depth int) []byte {
	switch x := v.(type) {
	case lua.LBool:
		if x {
			return append(b, 0xc3)
		}
		return append(b, 0xc2)
	case lua.LNumber:
		f := float64(x)
		if f == math.Trunc(f) && f >= -9.2e18 && f <= 1.8e19 && !math.IsInf(f, 0) {
			if f >= 0 {
				return mpUint(b, uint64(f))
			}
			return mpInt(b, int64(f))
		}
		if float64(float32(f)) == f || math.IsNaN(f) {
			b = append(b, 0xca)
			return binary.BigEndian.AppendUint32(b, math.Float32bits(float32(f)))
		}
		b = append(b, 0xcb)
		return binary.BigEndian.AppendUint64(b, math.Float64bits(f))
	case lua.LString:
		n := len(x)
		switch {
		case n < 32:
			b = append(b, 0xa0|byte(n))
		case n <= 0xff:
			b = append(b, 0xd9, byte(n))
		case n <= 0xffff:
			b = append(b, 0xda)
			b = binary.BigEndian.AppendUint16(b, uint16(n))
		default:
			b = append(b, 0xdb)
			b = binary.BigEndian.AppendUint32(b, uint32(n))
		}
		return append(b, x...)
	case *lua.LTable:
		if depth >= mpMaxNesting {
			return append(b, 0xc0)
		}
		if n, ok := mpArrayLen(x); ok {
			b = mpHeader(b, n, 0x90, 0xdc, 0xdd)
			for i := 1; i <= n; i++ {
				b = mpEncode(b, x.RawGetInt(i), depth+1)
			}
			return b
		}
		n := 0
		x.ForEach(func(_, _ lua.LValue) { n++ })
		b = mpHeader(b, n, 0x80, 0xde, 0xdf)
		x.ForEach(func(k, val lua.LValue) {
			b = mpEncode(b, k, depth+1)
			b = mpEncode(b, val, depth+1)
		})
		return b
	}
	return append(b, 0xc0)
}

func mpHeader(b []byte, n int, fix, b16, b32 byte) []byte {
	switch {
	case n < 16:
		return append(b, fix|byte(n))
	case n <= 0xffff:
		return binary.BigEndian.AppendUint16(append(b, b16), uint16(n))
	}
	return binary.BigEndian.AppendUint32(append(b, b32), uint32(n))
}

// mpArrayLen: a table whose keys are exactly 1..n is an array.
func mpArrayLen(t *lua.LTable) (int, bool) {
	count, maxKey := 0, 0
	ok := true
	t.ForEach(func(k, _ lua.LValue) {
		n, isNum := k.(lua.LNumber)
		if !isNum || n < 1 || float64(n) != math.Trunc(float64(n)) {
			ok = false
			return
		}
		count++
		maxKey = max(maxKey, int(n))
	})
	return count, ok && count == maxKey
}

func mpUint(b []byte, n uint64) []byte {
	switch {
	case n < 128:
		return append(b, byte(n))
	case n <= 0xff:
		return append(b, 0xcc, byte(n))
	case n <= 0xffff:
		return binary.BigEndian.AppendUint16(append(b, 0xcd), uint16(n))
	case n <= 0xffffffff:
		return binary.BigEndian.AppendUint32(append(b, 0xce), uint32(n))
	}
	return binary.BigEndian.AppendUint64(append(b, 0xcf), n)
}

func mpInt(b []byte, n int64) []byte {
	switch {
	case n >= -32:
		return append(b, byte(int8(n)))
	case n >= math.MinInt8:
		return append(b, 0xd0, byte(int8(n)))
	case n >= math.MinInt16:
		return binary.BigEndian.AppendUint16(append(b, 0xd1), uint16(int16(n)))
	case n >= math.MinInt32:
		return binary.BigEndian.AppendUint32(append(b, 0xd2), uint32(int32(n)))
	}
	return binary.BigEndian.AppendUint64(append(b, 0xd3), uint64(n))
}

// mpDecode decodes one value; ok is false on truncated input.
func mpDecode(L *lua.LState, s []byte, depth int) (lua.LValue, []byte, bool) {
	if len(s) == 0 || depth > 1000 {
		return lua.LNil, s, false
	}
	c := s[0]
	s = s[1:]
	switch {
	case c < 0x80:
		return lua.LNumber(c), s, true
	case c >= 0xe0:
		return lua.LNumber(int8(c)), s, true
	case c&0xe0 == 0xa0:
		return mpStr(s, int(c&0x1f))
	case c&0xf0 == 0x90:
		return mpArray(L, s, int(c&0x0f), depth)
	case c&0xf0 == 0x80:
		return mpMap(L, s, int(c&0x0f), depth)
	}
	switch c {
	case 0xc0:
		return lua.LNil, s, true
	case 0xc2:
		return lua.LFalse, s, true
	case 0xc3:
		return lua.LTrue, s, true
	case 0xca, 0xcb, 0xcc, 0xcd, 0xce, 0xcf, 0xd0, 0xd1, 0xd2, 0xd3:
		return mpNumber(c, s)
	}
	return mpSized(L, c, s, depth)
}

// mpNumber decodes the float or integer of type byte c from s.
func mpNumber(c byte, s []byte) (lua.LValue, []byte, bool) {
	need := func(n int) bool { return len(s) >= n }
	switch c {
	case 0xca:
		if !need(4) {
			return lua.LNil, s, false
		}
		return lua.LNumber(math.Float32frombits(binary.BigEndian.Uint32(s))), s[4:], true
	case 0xcb:
		if !need(8) {
			return lua.LNil, s, false
		}
		return lua.LNumber(math.Float64frombits(binary.BigEndian.Uint64(s))), s[8:], true
	case 0xcc, 0xd0:
		if !need(1) {
			return lua.LNil, s, false
		}
		if c == 0xcc {
			return lua.LNumber(s[0]), s[1:], true
		}
		return lua.LNumber(int8(s[0])), s[1:], true
	case 0xcd, 0xd1:
		if !need(2) {
			return lua.LNil, s, false
		}
		v := binary.BigEndian.Uint16(s)
		if c == 0xcd {
			return lua.LNumber(v), s[2:], true
		}
		return lua.LNumber(int16(v)), s[2:], true
	case 0xce, 0xd2:
		if !need(4) {
			return lua.LNil, s, false
		}
		v := binary.BigEndian.Uint32(s)
		if c == 0xce {
			return lua.LNumber(v), s[4:], true
		}
		return lua.LNumber(int32(v)), s[4:], true
	default: // 0xcf, 0xd3
		if !need(8) {
			return lua.LNil, s, false
		}
		v := binary.BigEndian.Uint64(s)
		if c == 0xcf {
			return lua.LNumber(v), s[8:], true
		}
		return lua.LNumber(int64(v)), s[8:], true
	}
}

// mpSized decodes the string, binary, array or map of type byte c whose
// length prefix starts s; an unknown type decodes as nil, as in
// lua-cmsgpack.
func mpSized(L *lua.LState, c byte, s []byte, depth int) (lua.LValue, []byte, bool) {
	need := func(n int) bool { return len(s) >= n }
	switch c {
	case 0xd9, 0xc4:
		if !need(1) {
			return lua.LNil, s, false
		}
		return mpStr(s[1:], int(s[0]))
	case 0xda, 0xc5:
		if !need(2) {
			return lua.LNil, s, false
		}
		return mpStr(s[2:], int(binary.BigEndian.Uint16(s)))
	case 0xdb, 0xc6:
		if !need(4) {
			return lua.LNil, s, false
		}
		return mpStr(s[4:], int(binary.BigEndian.Uint32(s)))
	case 0xdc:
		if !need(2) {
			return lua.LNil, s, false
		}
		return mpArray(L, s[2:], int(binary.BigEndian.Uint16(s)), depth)
	case 0xdd:
		if !need(4) {
			return lua.LNil, s, false
		}
		return mpArray(L, s[4:], int(binary.BigEndian.Uint32(s)), depth)
	case 0xde:
		if !need(2) {
			return lua.LNil, s, false
		}
		return mpMap(L, s[2:], int(binary.BigEndian.Uint16(s)), depth)
	case 0xdf:
		if !need(4) {
			return lua.LNil, s, false
		}
		return mpMap(L, s[4:], int(binary.BigEndian.Uint32(s)), depth)
	}
	return lua.LNil, s, true // unknown type: nil, as lua-cmsgpack
}

func mpStr(s []byte, n int) (lua.LValue, []byte, bool) {
	if n < 0 || len(s) < n {
		return lua.LNil, s, false
	}
	return lua.LString(s[:n]), s[n:], true
}

func mpArray(L *lua.LState, s []byte, n, depth int) (lua.LValue, []byte, bool) {
	if n > len(s) { // every element takes at least a byte
		return lua.LNil, s, false
	}
	t := L.CreateTable(n, 0)
	for i := 1; i <= n; i++ {
		v, rest, ok := mpDecode(L, s, depth+1)
		if !ok {
			return lua.LNil, s, false
		}
		t.RawSetInt(i, v)
		s = rest
	}
	return t, s, true
}

func mpMap(L *lua.LState, s []byte, n, depth int) (lua.LValue, []byte, bool) {
	if 2*n > len(s) || n < 0 {
		return lua.LNil, s, false
	}
	t := L.CreateTable(0, n)
	for i := 0; i < n; i++ {
		k, rest, ok := mpDecode(L, s, depth+1)
		if !ok {
			return lua.LNil, s, false
		}
		v, rest2, ok := mpDecode(L, rest, depth+1)
		if !ok {
			return lua.LNil, s, false
		}
		if k != lua.LNil {
			t.RawSet(k, v)
		}
		s = rest2
	}
	return t, s, true
}
