package server

import (
	"math/big"
	"strings"
)

// INCRBYFLOAT and HINCRBYFLOAT do their arithmetic in C's long double,
// which on x86-64 is the x87 80-bit format: a 64-bit mantissa and an
// exponent range far beyond float64's. Redis parses both operands with
// strtold, adds, and prints the exact sum with "%.17Lf", trailing zeros
// trimmed. float64 arithmetic gives different digits (0.1+0.2) and
// overflows where Redis does not (1e308+1e308), so these commands compute
// in big.Float at 64 bits of precision, rounding to nearest even as the
// x87 does, with the x87 exponent limit.
//
// Invariant: a value these commands store is the exact text Redis would
// store for the same operations.

const (
	ldPrec = 64
	// ldMaxExp is the largest big.Float exponent (mantissa in [0.5, 1))
	// of a finite long double: LDBL_MAX = (1-2^-64) * 2^16384.
	ldMaxExp = 16384
	// ldMinExp bounds the smallest subnormal long double, 2^-16445.
	ldMinExp = -16444
	// ldMaxChars is Redis's MAX_LONG_DOUBLE_CHARS: longer input is refused.
	ldMaxChars = 5 * 1024
)

// parseLongDouble parses b as Redis's string2ld does (strtold, no leading
// space, nothing after the number, no NaN, no overflow or underflow to
// zero). Infinities parse: callers refuse them where Redis does.
func parseLongDouble(b []byte) (*big.Float, bool) {
	if len(b) == 0 || len(b) >= ldMaxChars || isSpace(b[0]) {
		return nil, false
	}
	s := string(b)
	neg := false
	body := s
	if body[0] == '+' || body[0] == '-' {
		neg = body[0] == '-'
		body = body[1:]
	}
	f := new(big.Float).SetPrec(ldPrec).SetMode(big.ToNearestEven)
	switch low := strings.ToLower(body); {
	case low == "inf" || low == "infinity":
		return f.SetInf(neg), true
	case strings.HasPrefix(low, "nan"):
		return nil, false
	case strings.HasPrefix(low, "0x"):
		if !validHexFloat(low[2:]) {
			return nil, false
		}
		if _, _, err := f.Parse(low, 0); err != nil { // binary exponent: exact, rounded once
			return nil, false
		}
	default:
		exp10, ok := decimalExp(low)
		if !ok {
			return nil, false
		}
		if allZeroDigits(low) {
			f.SetInt64(0)
			break
		}
		if exp10 > 20000 || exp10 < -20000 {
			return nil, false // overflow or underflow to zero: ERANGE
		}
		r, ok := new(big.Rat).SetString(low) // exact, then rounded once
		if !ok {
			return nil, false
		}
		f.SetRat(r)
	}
	if f.Sign() != 0 && !f.IsInf() {
		if e := f.MantExp(nil); e > ldMaxExp {
			return nil, false
		} else if e < ldMinExp {
			return nil, false
		}
	}
	if neg {
		f.Neg(f)
	}
	return f, true
}

// decimalExp checks a decimal float (digits with at most one '.', then
// an optional exponent) and returns its exponent, capped at +-100000.
func decimalExp(s string) (int, bool) {
	i, digits, dot := 0, 0, false
	for ; i < len(s); i++ {
		if ch := s[i]; ch >= '0' && ch <= '9' {
			digits++
		} else if ch == '.' && !dot {
			dot = true
		} else {
			break
		}
	}
	if digits == 0 {
		return 0, false
	}
	if i == len(s) {
		return 0, true
	}
	if s[i] != 'e' {
		return 0, false
	}
	i++
	neg := false
	if i < len(s) && (s[i] == '+' || s[i] == '-') {
		neg = s[i] == '-'
		i++
	}
	if i == len(s) {
		return 0, false
	}
	exp := 0
	for ; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return 0, false
		}
		if exp < 100000 {
			exp = exp*10 + int(s[i]-'0')
		}
	}
	if neg {
		exp = -exp
	}
	return exp, true
}

func allZeroDigits(s string) bool {
	for i := 0; i < len(s) && s[i] != 'e'; i++ {
		if s[i] >= '1' && s[i] <= '9' {
			return false
		}
	}
	return true
}

// validHexFloat accepts the part after "0x" of a C hex float: hex digits
// with an optional '.', then an optional binary exponent.
func validHexFloat(s string) bool {
	i, digits := 0, 0
	dot := false
	for ; i < len(s); i++ {
		ch := s[i]
		if ch >= '0' && ch <= '9' || ch >= 'a' && ch <= 'f' {
			digits++
		} else if ch == '.' && !dot {
			dot = true
		} else {
			break
		}
	}
	if digits == 0 {
		return false
	}
	if i == len(s) {
		return true
	}
	if s[i] != 'p' {
		return false
	}
	i++
	if i < len(s) && (s[i] == '+' || s[i] == '-') {
		i++
	}
	if i == len(s) || len(s)-i > 6 {
		return false
	}
	for ; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// addLongDouble is a+b in long double; ok is false when the sum is
// infinite (or NaN: inf + -inf), where Redis refuses the increment.
func addLongDouble(a, b *big.Float) (sum *big.Float, ok bool) {
	if a.IsInf() || b.IsInf() {
		return nil, false
	}
	sum = new(big.Float).SetPrec(ldPrec).SetMode(big.ToNearestEven).Add(a, b)
	if sum.Sign() != 0 && sum.MantExp(nil) > ldMaxExp {
		return nil, false
	}
	return sum, true
}

// appendLongDouble formats f as Redis's ld2string in human mode: "%.17Lf"
// with trailing zeros (and a bare '.') removed, and "-0" written "0".
func appendLongDouble(b []byte, f *big.Float) []byte {
	s := f.Text('f', 17)
	if strings.IndexByte(s, '.') >= 0 {
		s = strings.TrimRight(s, "0")
		s = strings.TrimSuffix(s, ".")
	}
	if s == "-0" {
		s = "0"
	}
	return append(b, s...)
}
