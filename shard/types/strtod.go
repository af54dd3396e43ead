package types

import (
	"math"
	"strconv"
	"strings"
)

// Strtod reads a number from the start of s as C's strtod does: it skips
// leading white space, takes an optional sign, then a decimal float, a hex
// float ("0x1.8p3", "0x10"), "inf"/"infinity" or "nan[(...)]" (case
// insensitive). It returns the value, how many bytes it consumed (0 when
// there was no number: then the value is 0) and whether the value was out
// of range (overflow to ±Inf, or a non-zero number too small to be
// represented, which reads as 0).
//
// Redis parses doubles with strtod and then checks what was consumed, so
// this is what makes Damselfly accept and refuse the same spellings.
func Strtod(s string) (v float64, n int, erange bool) {
	i := 0
	for i < len(s) && isCSpace(s[i]) {
		i++
	}
	start := i
	neg := false
	if i < len(s) && (s[i] == '+' || s[i] == '-') {
		neg = s[i] == '-'
		i++
	}
	rest := strings.ToLower(s[i:min(len(s), i+8)])
	switch {
	case strings.HasPrefix(rest, "infinity"):
		return signed(math.Inf(1), neg), i + 8, false
	case strings.HasPrefix(rest, "inf"):
		return signed(math.Inf(1), neg), i + 3, false
	case strings.HasPrefix(rest, "nan"):
		j := i + 3
		if j < len(s) && s[j] == '(' {
			k := j + 1
			for k < len(s) && (isAlnum(s[k]) || s[k] == '_') {
				k++
			}
			if k < len(s) && s[k] == ')' {
				j = k + 1
			}
		}
		return math.NaN(), j, false
	case len(rest) >= 3 && rest[0] == '0' && rest[1] == 'x' && (isHex(rest[2]) || rest[2] == '.' && len(s) > i+3 && isHex(s[i+3])):
		return hexFloat(s, i+2, neg)
	}
	// Decimal: digits [. digits] with at least one digit, then an exponent
	// only when digits follow it.
	j, digits := i, 0
	for j < len(s) && s[j] >= '0' && s[j] <= '9' {
		j, digits = j+1, digits+1
	}
	if j < len(s) && s[j] == '.' {
		j++
		for j < len(s) && s[j] >= '0' && s[j] <= '9' {
			j, digits = j+1, digits+1
		}
	}
	if digits == 0 {
		return 0, 0, false
	}
	if j < len(s) && (s[j] == 'e' || s[j] == 'E') {
		k := j + 1
		if k < len(s) && (s[k] == '+' || s[k] == '-') {
			k++
		}
		if k < len(s) && s[k] >= '0' && s[k] <= '9' {
			for k < len(s) && s[k] >= '0' && s[k] <= '9' {
				k++
			}
			j = k
		}
	}
	f, err := strconv.ParseFloat(s[start:j], 64)
	if err != nil { // only ErrRange can happen here: f is ±Inf
		return f, j, true
	}
	if f == 0 && hasNonZeroDigit(s[i:j]) {
		return f, j, true // underflow
	}
	return f, j, false
}

// hexFloat reads the hex digits and optional binary exponent at s[i:].
func hexFloat(s string, i int, neg bool) (float64, int, bool) {
	j := i
	mant := "0x"
	for j < len(s) && (isHex(s[j]) || s[j] == '.' && !strings.Contains(mant, ".")) {
		mant += string(s[j])
		j++
	}
	exp := "p0"
	if j < len(s) && (s[j] == 'p' || s[j] == 'P') {
		k := j + 1
		if k < len(s) && (s[k] == '+' || s[k] == '-') {
			k++
		}
		if k < len(s) && s[k] >= '0' && s[k] <= '9' {
			for k < len(s) && s[k] >= '0' && s[k] <= '9' {
				k++
			}
			exp = "p" + s[j+1:k]
			j = k
		}
	}
	f, err := strconv.ParseFloat(mant+exp, 64)
	erange := err != nil || f == 0 && strings.ContainsAny(mant[2:], "123456789abcdef")
	return signed(f, neg), j, erange
}

func signed(f float64, neg bool) float64 {
	if neg {
		return -f
	}
	return f
}

func isCSpace(c byte) bool { return c == ' ' || c >= '\t' && c <= '\r' }
func isHex(c byte) bool    { return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F' }
func isAlnum(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
}

func hasNonZeroDigit(s string) bool {
	for i := 0; i < len(s) && s[i] != 'e' && s[i] != 'E'; i++ {
		if s[i] >= '1' && s[i] <= '9' {
			return true
		}
	}
	return false
}

// ParseDouble parses b as Redis's getDoubleFromObject (ZADD scores,
// weights): the whole string must be a number, with no leading space, not
// NaN, not out of range.
func ParseDouble(b []byte) (float64, bool) {
	if len(b) == 0 || isCSpace(b[0]) {
		return 0, false
	}
	v, n, erange := Strtod(string(b))
	if n != len(b) || math.IsNaN(v) || erange && (math.IsInf(v, 0) || v == 0) {
		return 0, false
	}
	return v, true
}
