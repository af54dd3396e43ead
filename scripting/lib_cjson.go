package scripting

import (
	"bytes"
	"encoding/json"
	"math"
	"sort"
	"strconv"

	lua "github.com/yuin/gopher-lua"
)

// openCJSON is the cjson library as Redis bundles it (lua-cjson 2.1):
// encode and decode, with cjson.null for JSON's null.
func openCJSON(L *lua.LState) *lua.LTable {
	t := L.NewTable()
	null := L.NewUserData()
	setting := func(L *lua.LState) int { return L.GetTop() }
	L.SetFuncs(t, map[string]lua.LGFunction{
		"encode": func(L *lua.LState) int {
			if L.GetTop() != 1 {
				L.ArgError(1, "expected 1 argument")
			}
			var b bytes.Buffer
			if msg := jsonEncode(&b, L.Get(1), null, 0); msg != "" {
				L.RaiseError("%s", msg)
			}
			L.Push(lua.LString(b.String()))
			return 1
		},
		"decode": func(L *lua.LState) int {
			if L.GetTop() != 1 {
				L.ArgError(1, "expected 1 argument")
			}
			s := L.CheckString(1)
			dec := json.NewDecoder(bytes.NewReader([]byte(s)))
			dec.UseNumber()
			var v any
			if err := dec.Decode(&v); err != nil {
				L.RaiseError("Expected value but found invalid token at character %d", dec.InputOffset()+1)
			}
			if dec.More() {
				L.RaiseError("Expected the end but found invalid token at character %d", dec.InputOffset()+1)
			}
			L.Push(jsonToLua(L, v, null))
			return 1
		},
		"encode_keep_buffer":      setting,
		"encode_max_depth":        setting,
		"decode_max_depth":        setting,
		"encode_number_precision": setting,
		"encode_sparse_array":     setting,
		"encode_invalid_numbers":  setting,
		"decode_invalid_numbers":  setting,
	})
	t.RawSetString("null", null)
	t.RawSetString("_NAME", lua.LString("cjson"))
	t.RawSetString("_VERSION", lua.LString("2.1.0"))
	t.RawSetString("new", L.NewFunction(func(L *lua.LState) int { L.Push(t); return 1 }))
	return t
}

const jsonMaxDepth = 1000

func jsonEncode(b *bytes.Buffer, v lua.LValue, null *lua.LUserData, depth int) string {
	switch x := v.(type) {
	case *lua.LNilType:
		b.WriteString("null")
	case lua.LBool:
		if x {
			b.WriteString("true")
		} else {
			b.WriteString("false")
		}
	case lua.LNumber:
		f := float64(x)
		if math.IsNaN(f) || math.IsInf(f, 0) {
			return "Cannot serialise number: must not be NaN or Inf"
		}
		b.WriteString(numberString(x))
	case lua.LString:
		jsonString(b, string(x))
	case *lua.LUserData:
		if x != null {
			return "Cannot serialise userdata: type not supported"
		}
		b.WriteString("null")
	case *lua.LTable:
		if depth >= jsonMaxDepth {
			return "Cannot serialise, excessive nesting (" + strconv.Itoa(depth+1) + ")"
		}
		n, isArray := arrayLength(x)
		if n < 0 {
			return "Cannot serialise table: excessively sparse array"
		}
		if isArray && n > 0 {
			b.WriteByte('[')
			for i := 1; i <= n; i++ {
				if i > 1 {
					b.WriteByte(',')
				}
				if msg := jsonEncode(b, x.RawGetInt(i), null, depth+1); msg != "" {
					return msg
				}
			}
			b.WriteByte(']')
			return ""
		}
		b.WriteByte('{')
		first := true
		var msg string
		x.ForEach(func(k, val lua.LValue) {
			if msg != "" {
				return
			}
			var key string
			switch kk := k.(type) {
			case lua.LString:
				key = string(kk)
			case lua.LNumber:
				key = numberString(kk)
			default:
				msg = "Cannot serialise " + k.Type().String() + ": table key must be a number or string"
				return
			}
			if !first {
				b.WriteByte(',')
			}
			first = false
			jsonString(b, key)
			b.WriteByte(':')
			msg = jsonEncode(b, val, null, depth+1)
		})
		if msg != "" {
			return msg
		}
		b.WriteByte('}')
	default:
		return "Cannot serialise " + v.Type().String() + ": type not supported"
	}
	return ""
}

// arrayLength reports whether t is an array as lua-cjson decides (only
// positive integer keys, not excessively sparse) and its length; -1 for an
// excessively sparse one.
func arrayLength(t *lua.LTable) (int, bool) {
	maxKey, items := 0, 0
	isArray := true
	t.ForEach(func(k, _ lua.LValue) {
		n, ok := k.(lua.LNumber)
		if !ok || float64(n) != math.Floor(float64(n)) || n < 1 {
			isArray = false
			return
		}
		if int(n) > maxKey {
			maxKey = int(n)
		}
		items++
	})
	if !isArray {
		return 0, false
	}
	if maxKey > 10 && maxKey > items*2 {
		return -1, false
	}
	return maxKey, true
}

func jsonString(b *bytes.Buffer, s string) {
	b.WriteByte('"')
	for i := 0; i < len(s); i++ {
		ch := s[i]
		switch ch {
		case '"':
			b.WriteString(`\"`)
		case '\\':
			b.WriteString(`\\`)
		case '/':
			b.WriteString(`\/`)
		case '\b':
			b.WriteString(`\b`)
		case '\f':
			b.WriteString(`\f`)
		case '\n':
			b.WriteString(`\n`)
		case '\r':
			b.WriteString(`\r`)
		case '\t':
			b.WriteString(`\t`)
		default:
			if ch < 0x20 || ch == 0x7f {
				b.WriteString(`\u00`)
				b.WriteByte("0123456789abcdef"[ch>>4])
				b.WriteByte("0123456789abcdef"[ch&15])
			} else {
				b.WriteByte(ch)
			}
		}
	}
	b.WriteByte('"')
}

func jsonToLua(L *lua.LState, v any, null *lua.LUserData) lua.LValue {
	switch x := v.(type) {
	case nil:
		return null
	case bool:
		return lua.LBool(x)
	case json.Number:
		f, _ := strconv.ParseFloat(string(x), 64)
		return lua.LNumber(f)
	case string:
		return lua.LString(x)
	case []any:
		t := L.CreateTable(len(x), 0)
		for i, e := range x {
			t.RawSetInt(i+1, jsonToLua(L, e, null))
		}
		return t
	case map[string]any:
		t := L.CreateTable(0, len(x))
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			t.RawSetString(k, jsonToLua(L, x[k], null))
		}
		return t
	}
	return lua.LNil
}
