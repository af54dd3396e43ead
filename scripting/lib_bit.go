package scripting

import (
	"math"
	"strings"

	lua "github.com/yuin/gopher-lua"
)

// openBit is Lua BitOp ("bit"): 32-bit operations on numbers, results as
// signed 32-bit integers.
func openBit(L *lua.LState) *lua.LTable {
	t := L.NewTable()
	arg := func(L *lua.LState, i int) uint32 { return toBit(L.CheckNumber(i)) }
	ret := func(L *lua.LState, v uint32) int { L.Push(lua.LNumber(int32(v))); return 1 }
	fold := func(op func(a, b uint32) uint32) lua.LGFunction {
		return func(L *lua.LState) int {
			v := arg(L, 1)
			for i := 2; i <= L.GetTop(); i++ {
				v = op(v, arg(L, i))
			}
			return ret(L, v)
		}
	}
	L.SetFuncs(t, map[string]lua.LGFunction{
		"tobit": func(L *lua.LState) int { return ret(L, arg(L, 1)) },
		"bnot":  func(L *lua.LState) int { return ret(L, ^arg(L, 1)) },
		"band":  fold(func(a, b uint32) uint32 { return a & b }),
		"bor":   fold(func(a, b uint32) uint32 { return a | b }),
		"bxor":  fold(func(a, b uint32) uint32 { return a ^ b }),
		"lshift": func(L *lua.LState) int {
			return ret(L, arg(L, 1)<<(arg(L, 2)&31))
		},
		"rshift": func(L *lua.LState) int {
			return ret(L, arg(L, 1)>>(arg(L, 2)&31))
		},
		"arshift": func(L *lua.LState) int {
			return ret(L, uint32(int32(arg(L, 1))>>(arg(L, 2)&31)))
		},
		"rol": func(L *lua.LState) int {
			x, n := arg(L, 1), arg(L, 2)&31
			return ret(L, x<<n|x>>((32-n)&31))
		},
		"ror": func(L *lua.LState) int {
			x, n := arg(L, 1), arg(L, 2)&31
			return ret(L, x>>n|x<<((32-n)&31))
		},
		"bswap": func(L *lua.LState) int {
			x := arg(L, 1)
			return ret(L, x>>24|(x>>8)&0xff00|(x&0xff00)<<8|x<<24)
		},
		"tohex": func(L *lua.LState) int {
			x := arg(L, 1)
			n := int32(8)
			if L.GetTop() >= 2 && L.Get(2) != lua.LNil {
				n = int32(arg(L, 2))
			}
			digits := "0123456789abcdef"
			if n < 0 {
				n = -n
				digits = strings.ToUpper(digits)
			}
			if n > 8 {
				n = 8
			}
			buf := make([]byte, n)
			for i := n - 1; i >= 0; i-- {
				buf[i] = digits[x&15]
				x >>= 4
			}
			L.Push(lua.LString(buf))
			return 1
		},
	})
	return t
}

// toBit converts a number as BitOp does: rounded, then taken modulo 2^32.
func toBit(n lua.LNumber) uint32 {
	f := math.RoundToEven(float64(n))
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return 0
	}
	f = math.Mod(f, 4294967296)
	if f < 0 {
		f += 4294967296
	}
	return uint32(f)
}
