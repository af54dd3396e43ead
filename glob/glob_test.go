package glob

import (
	"bytes"
	"math/rand"
	"testing"
	"time"
)

// reference is a plain backtracking matcher written to follow Redis's
// stringmatchlen step by step (without its early exit), reading a NUL past
// the end of the pattern as C does. It is exponential, so only small inputs
// are given to it.
func reference(pat, str []byte, nocase bool) bool {
	at := func(i int) byte {
		if i < len(pat) {
			return pat[i]
		}
		return 0
	}
	pi, plen := 0, len(pat)
	si, slen := 0, len(str)
	for plen > 0 && slen > 0 {
		switch at(pi) {
		case '*':
			for plen > 1 && at(pi+1) == '*' {
				pi++
				plen--
			}
			if plen == 1 {
				return true
			}
			for slen > 0 {
				if reference(pat[pi+1:pi+plen], str[si:si+slen], nocase) {
					return true
				}
				si++
				slen--
			}
			return false
		case '?':
			si++
			slen--
		case '[':
			pi++
			plen--
			not := at(pi) == '^'
			if not {
				pi++
				plen--
			}
			match := false
			for {
				if at(pi) == '\\' && plen >= 2 {
					pi++
					plen--
					if at(pi) == str[si] {
						match = true
					}
				} else if at(pi) == ']' {
					break
				} else if plen == 0 {
					pi--
					plen++
					break
				} else if plen >= 3 && at(pi+1) == '-' {
					start, end, c := at(pi), at(pi+2), str[si]
					if start > end {
						start, end = end, start
					}
					if nocase {
						start, end, c = lower(start), lower(end), lower(c)
					}
					pi += 2
					plen -= 2
					if c >= start && c <= end {
						match = true
					}
				} else if at(pi) == str[si] || (nocase && lower(at(pi)) == lower(str[si])) {
					match = true
				}
				pi++
				plen--
			}
			if not {
				match = !match
			}
			if !match {
				return false
			}
			si++
			slen--
		case '\\':
			if plen >= 2 {
				pi++
				plen--
			}
			fallthrough
		default:
			if at(pi) != str[si] && !(nocase && lower(at(pi)) == lower(str[si])) {
				return false
			}
			si++
			slen--
		}
		pi++
		plen--
		if slen == 0 {
			for plen > 0 && at(pi) == '*' {
				pi++
				plen--
			}
			break
		}
	}
	return plen == 0 && slen == 0
}

func TestKnownCases(t *testing.T) {
	cases := []struct {
		pat, s string
		nocase bool
		want   bool
	}{
		{"*", "", false, false}, // Redis: an empty subject matches only ""
		{"", "", false, true},
		{"*", "abc", false, true},
		{"a*", "a", false, true},
		{"a*b", "a", false, false},
		{"h?llo", "hello", false, true},
		{"h[ae]llo", "hallo", false, true},
		{"h[^e]llo", "hello", false, false},
		{"h[a-b]llo", "hbllo", false, true},
		{"h[b-a]llo", "hallo", false, true}, // reversed range is swapped
		{"[A-Z]", "q", true, true},
		{"\\*", "*", false, true},
		{"\\*", "a", false, false},
		{"a\\", "a\\", false, true}, // a trailing backslash is literal
		{"[", "a", false, false},
		{"[^", "a", false, true}, // unterminated negated empty set: any byte, then the end
		{"a[bc", "ab", false, true},
		{"a[bc", "abx", false, false},
		{"[a-]", "]", false, true}, // "a-]" is a range up to ']' and leaves the set open
		{"[\\]]", "]", false, true},
		{"[\\A]", "a", true, false}, // escaped bytes in a set compare exactly
		{"HELLO", "hello", true, true},
		{"*a*a*a*b", "aaaaaaaaaaaaaaaaaaaaab", false, true},
	}
	for _, c := range cases {
		if got := MatchString(c.pat, c.s, c.nocase); got != c.want {
			t.Errorf("Match(%q, %q, %v) = %v, want %v", c.pat, c.s, c.nocase, got, c.want)
		}
		if got := reference([]byte(c.pat), []byte(c.s), c.nocase); got != c.want {
			t.Errorf("reference(%q, %q, %v) = %v, want %v", c.pat, c.s, c.nocase, got, c.want)
		}
	}
}

// TestAgainstReference compares Match with the reference on many random
// small patterns and subjects over an alphabet rich in special bytes.
func TestAgainstReference(t *testing.T) {
	rng := rand.New(rand.NewSource(1))
	patAlpha := []byte("ab*?[]^-\\A")
	strAlpha := []byte("abA]-\\^*")
	gen := func(alpha []byte, max int) []byte {
		b := make([]byte, rng.Intn(max+1))
		for i := range b {
			b[i] = alpha[rng.Intn(len(alpha))]
		}
		return b
	}
	n := 200000
	if testing.Short() {
		n = 20000
	}
	for i := 0; i < n; i++ {
		p, s := gen(patAlpha, 9), gen(strAlpha, 8)
		nocase := i%2 == 1
		if got, want := Match(p, s, nocase), reference(p, s, nocase); got != want {
			t.Fatalf("Match(%q, %q, %v) = %v, reference says %v", p, s, nocase, got, want)
		}
	}
}

// TestPathologicalIsFast is issue 13's reproduction: a pattern of nested stars
// that never matches must be answered at once.
func TestPathologicalIsFast(t *testing.T) {
	subject := bytes.Repeat([]byte("a"), 40)
	pattern := append(bytes.Repeat([]byte("a*"), 20), 'b')
	big := bytes.Repeat([]byte("a"), 100000)
	bigPat := append(bytes.Repeat([]byte("*a"), 1000), '*', 'b')
	start := time.Now()
	if Match(pattern, subject, false) || Match(bigPat, big, false) {
		t.Fatal("matched a pattern ending in b")
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Fatalf("took %v", d)
	}
}

func FuzzMatch(f *testing.F) {
	f.Add([]byte("a*a*a*b"), []byte("aaaa"), false)
	f.Add([]byte("h[^a-c]llo"), []byte("hello"), true)
	f.Add([]byte("[\\"), []byte("\\"), false)
	f.Fuzz(func(t *testing.T, p, s []byte, nocase bool) {
		got := Match(p, s, nocase)
		// The reference is exponential: compare only where it stays cheap.
		if len(p) <= 12 && len(s) <= 12 && bytes.Count(p, []byte("*")) <= 4 {
			if want := reference(p, s, nocase); got != want {
				t.Fatalf("Match(%q, %q, %v) = %v, reference says %v", p, s, nocase, got, want)
			}
		}
	})
}
