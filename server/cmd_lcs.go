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
	a, b := strs[0], strs[1]
	getLen, getIdx, withLen := false, false, false
	minLen := int64(0)
	for j := 3; j < len(args); j++ {
		switch o := args[j]; {
		case eq(o, "idx"):
			getIdx = true
		case eq(o, "len"):
			getLen = true
		case eq(o, "withmatchlen"):
			withLen = true
		case eq(o, "minmatchlen") && j+1 < len(args):
			n, ok := parseInt(args[j+1])
			if !ok {
				c.errNotInteger()
				return
			}
			minLen = max(n, 0)
			j++
		default:
			c.errSyntax()
			return
		}
	}
	if getLen && getIdx {
		c.err("ERR If you want both the length and indexes, please just use IDX.")
		return
	}
	alen, blen := len(a), len(b)
	if int64(alen+1)*int64(blen+1)*4 > maxStringBytes {
		c.err("ERR Insufficient memory, transient memory for LCS exceeds proto-max-bulk-len")
		return
	}
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
	total := tab[alen*w+blen]
	if getLen {
		c.int(int64(total))
		return
	}
	result := make([]byte, total)
	type match struct{ a0, a1, b0, b1 int }
	var matches []match
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
				matches = append(matches, match{as, ae, bs, be})
			}
			as = unset
		}
	}
	if !getIdx {
		c.bulk(result)
		return
	}
	c.mapHeader(2)
	c.bulkString("matches")
	c.array(len(matches))
	for _, m := range matches {
		if withLen {
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
		if withLen {
			c.int(int64(m.a1 - m.a0 + 1))
		}
	}
	c.bulkString("len")
	c.int(int64(total))
}
