package memcache

import "math"

// Number parsing follows memcached's safe_strto* helpers: decimal digits,
// optional leading '+', nothing after them.

// parseUint64 parses a full-width unsigned decimal.
func parseUint64(b []byte) (uint64, bool) {
	if len(b) > 0 && b[0] == '+' {
		b = b[1:]
	}
	if len(b) == 0 || len(b) > 20 {
		return 0, false
	}
	var n uint64
	for _, ch := range b {
		if ch < '0' || ch > '9' {
			return 0, false
		}
		d := uint64(ch - '0')
		if n > (math.MaxUint64-d)/10 {
			return 0, false
		}
		n = n*10 + d
	}
	return n, true
}

// parseInt32 parses a signed decimal in int32 range (exptime, bytes).
func parseInt32(b []byte) (int64, bool) {
	neg := false
	if len(b) > 0 && (b[0] == '-' || b[0] == '+') {
		neg = b[0] == '-'
		b = b[1:]
	}
	if len(b) == 0 || len(b) > 11 {
		return 0, false
	}
	var n int64
	for _, ch := range b {
		if ch < '0' || ch > '9' {
			return 0, false
		}
		n = n*10 + int64(ch-'0')
	}
	if neg {
		n = -n
	}
	if n > math.MaxInt32 || n < math.MinInt32 {
		return 0, false
	}
	return n, true
}

// parseExptime parses an exptime as memcached 1.6 does on 64-bit builds: a
// signed decimal truncated to 32 bits (so 4000000000 becomes negative, an
// item that expires at once).
func parseExptime(b []byte) (int64, bool) {
	neg := false
	if len(b) > 0 && (b[0] == '-' || b[0] == '+') {
		neg = b[0] == '-'
		b = b[1:]
	}
	if len(b) == 0 || len(b) > 18 {
		return 0, false
	}
	var n int64
	for _, ch := range b {
		if ch < '0' || ch > '9' {
			return 0, false
		}
		n = n*10 + int64(ch-'0')
	}
	if neg {
		n = -n
	}
	return int64(int32(n)), true
}

// parseFlags parses client flags; like memcached 1.6 a value past 32 bits
// is truncated to its low 32 bits.
func parseFlags(b []byte) (uint32, bool) {
	n, ok := parseUint64(b)
	return uint32(n), ok
}

// parseNumericValue reads a stored value as incr/decr does: optional
// leading whitespace, digits, then whitespace or the end.
func parseNumericValue(b []byte) (uint64, bool) {
	i := 0
	for i < len(b) && isSpace(b[i]) {
		i++
	}
	j := i
	for j < len(b) && b[j] >= '0' && b[j] <= '9' {
		j++
	}
	if j == i || (j < len(b) && !isSpace(b[j])) {
		return 0, false
	}
	return parseUint64(b[i:j])
}

func isSpace(ch byte) bool {
	return ch == ' ' || ch == '\t' || ch == '\n' || ch == '\r' || ch == '\v' || ch == '\f'
}

const (
	maxRelativeExptime = 60 * 60 * 24 * 30 // memcached's REALTIME_MAXDELTA
	expNow             = -1                // an exptime that makes the item expired at once
)

// exptimeToDeadline turns a memcached exptime into an absolute unix-ms
// deadline: 0 = never; up to 30 days = relative seconds; larger = absolute
// unix seconds; negative, or absolute in the past = expNow.
func exptimeToDeadline(exp int64, now int64) int64 {
	switch {
	case exp == 0:
		return 0
	case exp < 0:
		return expNow
	case exp <= maxRelativeExptime:
		return now + exp*1000
	}
	at := exp * 1000
	if at <= now {
		return expNow
	}
	return at
}
