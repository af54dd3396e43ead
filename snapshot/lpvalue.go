package snapshot

import (
	"github.com/damselflydb/damselfly/listpack"
	"github.com/damselflydb/damselfly/shard/types"
)

// Hashes and sets stored as listpacks arrive undecoded (rdb.Options.
// Listpacks: Entry.Listpack, already validated by the reader, which named
// the file and offset of anything corrupt) and are decoded here, once,
// straight into the shard's objects under the server's live limits: a
// sizing walk reserves the compact encoding's memory, then every element is
// added as a command would add it (duplicates overwrite, limits convert).

// compactSize is what lp's elements take in types' compact encoding
// (integers as their decimal text).
func compactSize(lp []byte) int {
	size := 0
	for off := listpack.First; off < listpack.End(lp); {
		s, v, isInt, next := listpack.Elem(lp, off)
		n := len(s)
		if isInt {
			n = digits(v)
		}
		size += types.CompactEntrySize(n)
		off = next
	}
	return size
}

func digits(v int64) int {
	n := 1
	if v < 0 {
		n++ // the sign; -v may overflow, so count on the negative side
		for v <= -10 {
			v /= 10
			n++
		}
		return n
	}
	for v >= 10 {
		v /= 10
		n++
	}
	return n
}

// hashFromListpack builds a hash of validated lp's n/2 field-value pairs
// (nil when empty).
func hashFromListpack(lp []byte, n int, lim *types.Limits) *types.Hash {
	if n == 0 {
		return nil
	}
	h, w := types.NewHashSized(n/2, lim)
	h.Reserve(w, compactSize(lp))
	var buf [48]byte // two integers' text
	for off := listpack.First; off < listpack.End(lp); {
		scratch := buf[:0]
		var f, v []byte
		f, off = listpack.Bytes(lp, off, &scratch)
		v, off = listpack.Bytes(lp, off, &scratch)
		h.Set(w, f, v, lim)
	}
	return h
}

// setFromListpack builds a set of validated lp's n members (nil when
// empty), its encoding chosen from its first member and size as RESTORE's.
func setFromListpack(lp []byte, n int, lim *types.Limits) *types.Set {
	if n == 0 {
		return nil
	}
	var buf [24]byte
	scratch := buf[:0]
	first, _ := listpack.Bytes(lp, listpack.First, &scratch)
	s, w := types.NewSetSized(first, n, lim)
	s.Reserve(w, compactSize(lp), n)
	for off := listpack.First; off < listpack.End(lp); {
		scratch = buf[:0]
		var m []byte
		m, off = listpack.Bytes(lp, off, &scratch)
		s.Add(w, m, lim)
	}
	return s
}
