package server

// globMatch reports whether s matches the Redis glob pattern: * ? [set]
// [^set] [a-z] and \ escapes, optionally ignoring ASCII case.
func globMatch(pattern, s []byte, nocase bool) bool {
	return globMatchDepth(pattern, s, nocase, 0)
}

func lowerByte(b byte) byte {
	if b >= 'A' && b <= 'Z' {
		return b + 'a' - 'A'
	}
	return b
}

func globMatchDepth(p, s []byte, nocase bool, depth int) bool {
	if depth > 1000 {
		return false // pathological pattern: refuse rather than recurse without bound
	}
	for len(p) > 0 {
		switch p[0] {
		case '*':
			for len(p) > 1 && p[1] == '*' {
				p = p[1:]
			}
			if len(p) == 1 {
				return true
			}
			for i := 0; i <= len(s); i++ {
				if globMatchDepth(p[1:], s[i:], nocase, depth+1) {
					return true
				}
			}
			return false
		case '?':
			if len(s) == 0 {
				return false
			}
			s = s[1:]
		case '[':
			if len(s) == 0 {
				return false
			}
			p = p[1:]
			not := len(p) > 0 && p[0] == '^'
			if not {
				p = p[1:]
			}
			matched := false
			for {
				if len(p) == 0 {
					break
				}
				if p[0] == '\\' && len(p) >= 2 {
					p = p[1:]
					if p[0] == s[0] {
						matched = true
					}
				} else if p[0] == ']' {
					break
				} else if len(p) >= 3 && p[1] == '-' {
					lo, hi := p[0], p[2]
					if lo > hi {
						lo, hi = hi, lo
					}
					ch := s[0]
					if nocase {
						lo, hi, ch = lowerByte(lo), lowerByte(hi), lowerByte(ch)
					}
					if ch >= lo && ch <= hi {
						matched = true
					}
					p = p[2:]
				} else {
					if p[0] == s[0] || (nocase && lowerByte(p[0]) == lowerByte(s[0])) {
						matched = true
					}
				}
				p = p[1:]
			}
			if not {
				matched = !matched
			}
			if !matched {
				return false
			}
			s = s[1:]
			if len(p) == 0 {
				// Unterminated set: Redis treats the end of the pattern as
				// the end of the set.
				return len(s) == 0
			}
		case '\\':
			if len(p) >= 2 {
				p = p[1:]
			}
			fallthrough
		default:
			if len(s) == 0 {
				return false
			}
			if p[0] != s[0] && !(nocase && lowerByte(p[0]) == lowerByte(s[0])) {
				return false
			}
			s = s[1:]
		}
		p = p[1:]
	}
	return len(s) == 0
}
