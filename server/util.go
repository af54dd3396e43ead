package server

import (
	"strconv"
	"strings"
	"unsafe"
)

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

// unsafeString views b as a string without copying; b must not change while
// the string is in use (map lookups only).
func unsafeString(b []byte) string { return unsafe.String(unsafe.SliceData(b), len(b)) }

// eq reports whether b equals the lower-case word s, ignoring ASCII case.
func eq(b []byte, s string) bool {
	if len(b) != len(s) {
		return false
	}
	for i := 0; i < len(b); i++ {
		ch := b[i]
		if ch >= 'A' && ch <= 'Z' {
			ch += 'a' - 'A'
		}
		if ch != s[i] {
			return false
		}
	}
	return true
}

func lower(b []byte) string { return strings.ToLower(string(b)) }
