// Package glob matches strings against Redis glob patterns (KEYS, SCAN MATCH,
// PSUBSCRIBE, PUBSUB CHANNELS, CONFIG GET, COMMAND LIST).
//
// The syntax and every corner case follow Redis 7.0's matcher: '*' matches any
// run of bytes, '?' one byte, '[abc]' '[^abc]' '[a-z]' one byte from a set
// (a reversed range is swapped, an unterminated set ends the pattern), and '\'
// escapes the next byte (a trailing '\' is literal). An empty subject matches
// only the empty pattern, exactly as in Redis.
//
// Invariant: Match runs in O(len(pattern) × len(subject)) time and constant
// space, whatever the pattern. Only '*' matches a variable number of bytes,
// so when the text after a star fails at every position, no earlier star can
// help; the matcher therefore only ever remembers the most recent star (the
// same observation as Redis's fix for CVE-2022-36021) and never recurses.
package glob

// Match reports whether subject matches pattern; nocase folds ASCII letters.
func Match(pattern, subject []byte, nocase bool) bool {
	if len(subject) == 0 {
		return len(pattern) == 0
	}
	p, s := 0, 0
	starP, starS := -1, 0 // the last star seen and where its match ends
	for {
		if s == len(subject) {
			for p < len(pattern) && pattern[p] == '*' {
				p++
			}
			if p == len(pattern) {
				return true
			}
		} else if p < len(pattern) {
			if pattern[p] == '*' {
				for p+1 < len(pattern) && pattern[p+1] == '*' {
					p++
				}
				if p+1 == len(pattern) {
					return true
				}
				starP, starS = p, s
				p++
				continue
			}
			if next, ok := single(pattern, p, subject[s], nocase); ok {
				p, s = next, s+1
				continue
			}
		}
		// Mismatch: let the last star swallow one more byte. It never needs
		// to swallow the whole rest, since what follows it matches at least
		// one byte.
		if starP < 0 {
			return false
		}
		starS++
		if starS >= len(subject) {
			return false
		}
		p, s = starP+1, starS
	}
}

// MatchString is Match for strings.
func MatchString(pattern, subject string, nocase bool) bool {
	return Match([]byte(pattern), []byte(subject), nocase)
}

func lower(b byte) byte {
	if b >= 'A' && b <= 'Z' {
		return b + 'a' - 'A'
	}
	return b
}

// single matches the one-byte token at pattern[p] (not a star) against c and
// returns the index after it.
func single(pattern []byte, p int, c byte, nocase bool) (int, bool) {
	switch pattern[p] {
	case '?':
		return p + 1, true
	case '[':
		return set(pattern, p+1, c, nocase)
	case '\\':
		if p+1 < len(pattern) {
			p++
		}
	}
	if pattern[p] == c || (nocase && lower(pattern[p]) == lower(c)) {
		return p + 1, true
	}
	return p + 1, false
}

// set matches c against the set whose body starts at pattern[p] (just after
// '[') and returns the index after its ']', or len(pattern) when the set is
// not terminated.
func set(pattern []byte, p int, c byte, nocase bool) (int, bool) {
	not := p < len(pattern) && pattern[p] == '^'
	if not {
		p++
	}
	match := false
	for p < len(pattern) && pattern[p] != ']' {
		switch {
		case pattern[p] == '\\' && p+1 < len(pattern):
			p++
			if pattern[p] == c { // an escaped byte is compared exactly, as Redis does
				match = true
			}
		case p+2 < len(pattern) && pattern[p+1] == '-':
			lo, hi, ch := pattern[p], pattern[p+2], c
			if lo > hi {
				lo, hi = hi, lo
			}
			if nocase {
				lo, hi, ch = lower(lo), lower(hi), lower(ch)
			}
			if ch >= lo && ch <= hi {
				match = true
			}
			p += 2
		default:
			if pattern[p] == c || (nocase && lower(pattern[p]) == lower(c)) {
				match = true
			}
		}
		p++
	}
	if p < len(pattern) {
		p++ // past ']'
	}
	return p, match != not
}
