package rdb

import "github.com/damselflydb/damselfly/listpack"

// Listpack-encoded values (hashes, sets, sorted sets, quicklist 2 nodes)
// are checked whole with package listpack before they are handed to the
// value decoder, so that a corrupt dump or RESTORE payload is an error that
// says what is wrong, at its offset, and never reaches a decoder that could
// panic or misread it.

// listpackValue reads the string at the current offset as a listpack and
// validates it: its structure, and an element count that is a multiple of
// group (2 for a hash's field-value pairs or a sorted set's member-score
// pairs, 3 for a hash with field TTLs). what names the string in messages
// ("value" and "quicklist node" build them without allocating).
func (s *skimmer) listpackValue(what string, group int) error {
	off := s.off
	lp, err := s.strDec(what, &s.lpBuf)
	if err != nil {
		return err
	}
	n, err := listpack.Validate(lp)
	if err != nil {
		return s.errorf(off, "%s listpack: %v", what, err)
	}
	if n%group != 0 {
		return s.errorf(off, "%s listpack: %d elements, not a multiple of %d", what, n, group)
	}
	return nil
}
