package server

import "github.com/damselflydb/damselfly/glob"

// globMatch reports whether s matches the Redis glob pattern; see package
// glob, whose matcher cannot backtrack exponentially.
func globMatch(pattern, s []byte, nocase bool) bool {
	return glob.Match(pattern, s, nocase)
}
