package server

import (
	"github.com/damselflydb/damselfly/shard"
)

func registerLCS(reg registrar) {
	reg("lcs", -3, "readonly", 1, 2, 1, "string", cmdLCS)
}

// cmdLCS is LCS key1 key2 [LEN] [IDX] [MINMATCHLEN n] [WITHMATCHLEN]: the
// longest common subsequence by the classic dynamic programme, walked back
// from the end exactly as Redis does, so that IDX reports the same ranges.
func cmdLCS(c *Client, args [][]byte) {
	set := c.lockKeys(args[1:3])
	defer c.unlock(set)
	var strs [2][]byte
	t := now()
	for i, k := range args[1:3] {
		sh, h := c.srv.store.ShardOf(k)
		e, found := sh.Lookup(c.db, h, k, t)
		if !found {
			c.keyMiss(k)
			continue
		}
		if e.Type() != shard.TypeString {
			c.err("ERR The specified keys must contain string values")
			return
		}
		strs[i] = e.Str()
	}
	o, ok := parseLCSOptions(c, args)
	if !ok {
		return
	}
	a, b := strs[0], strs[1]
	if int64(len(a)+1)*int64(len(b)+1)*4 > maxStringBytes {
		c.err("ERR Insufficient memory, transient memory for LCS exceeds proto-max-bulk-len")
		return
	}
	tab := lcsTable(a, b)
	total := tab[len(tab)-1]
	if o.getLen {
		c.int(int64(total))
		return
	}
	result, matches := lcsWalk(a, b, tab, o.minLen)
	if !o.getIdx {
		c.bulk(result)
		return
	}
	c.mapHeader(2)
	c.bulkString("matches")
	c.array(len(matches))
	for _, m := range matches {
		if o.withLen {
			c.array(3)
		} else {
			c.array(2)
		}
		c.array(2)
		c.int(int64(m.a0))
		c.int(int64(m.a1))
		c.array(2)
		c.int(int64(m.b0))
		c.int(int64(m.b1))
		if o.withLen {
			c.int(int64(m.a1 - m.a0 + 1))
		}
	}
	c.bulkString("len")
	c.int(int64(total))
}

// lcsOptions are LCS's LEN, IDX, MINMATCHLEN and WITHMATCHLEN.
type lcsOptions struct {
	getLen, getIdx, withLen bool
	minLen                  int64
}

func parseLCSOptions(c *Client, args [][]byte) (o lcsOptions, ok bool) {
	for j := 3; j < len(args); j++ {
		switch a := args[j]; {
		case eq(a, "idx"):
			o.getIdx = true
		case eq(a, "len"):
			o.getLen = true
		case eq(a, "withmatchlen"):
			o.withLen = true
		case eq(a, "minmatchlen") && j+1 < len(args):
			n, ok := parseInt(args[j+1])
			if !ok {
				c.errNotInteger()
				return o, false
			}
			o.minLen = max(n, 0)
			j++
		default:
			c.errSyntax()
			return o, false
		}
	}
	if o.getLen && o.getIdx {
		c.err("ERR If you want both the length and indexes, please just use IDX.")
		return o, false
	}
	return o, true
}

// lcsTable is the dynamic programme's table, (len(a)+1) rows of
// len(b)+1: cell [i][j] is the LCS length of a[:i] and b[:j], so the last
// cell is the whole LCS's.
func lcsTable(a, b []byte) []uint32 {
	alen, blen := len(a), len(b)
	w := blen + 1
	tab := make([]uint32, (alen+1)*w)
	for i := 1; i <= alen; i++ {
		for j := 1; j <= blen; j++ {
			if a[i-1] == b[j-1] {
				tab[i*w+j] = tab[(i-1)*w+j-1] + 1
			} else {
				tab[i*w+j] = max(tab[(i-1)*w+j], tab[i*w+j-1])
			}
		}
	}
	return tab
}

// lcsMatch is one common run: a[a0..a1] equals b[b0..b1] (inclusive).
type lcsMatch struct{ a0, a1, b0, b1 int }

// lcsWalk walks tab back from the end as Redis does: the LCS itself and
// its runs of at least minLen bytes (0: all), last run first.
func lcsWalk(a, b []byte, tab []uint32, minLen int64) (result []byte, matches []lcsMatch) {
	alen, blen := len(a), len(b)
	w := blen + 1
	total := tab[alen*w+blen]
	result = make([]byte, total)
	idx := int(total)
	const unset = -1
	as, ae, bs, be := unset, 0, 0, 0
	for i, j := alen, blen; i > 0 && j > 0; {
		emit := false
		if a[i-1] == b[j-1] {
			result[idx-1] = a[i-1]
			if as == unset {
				as, ae, bs, be = i-1, i-1, j-1, j-1
			} else if as == i && bs == j {
				as--
				bs--
			} else {
				emit = true
			}
			if as == 0 || bs == 0 {
				emit = true
			}
			idx--
			i--
			j--
		} else {
			if tab[(i-1)*w+j] > tab[i*w+j-1] {
				i--
			} else {
				j--
			}
			if as != unset {
				emit = true
			}
		}
		if emit {
			if n := ae - as + 1; minLen == 0 || int64(n) >= minLen {
				matches = append(matches, lcsMatch{as, ae, bs, be})
			}
			as = unset
		}
	}
	return result, matches
}
