package server

import (
	"bytes"
	"math"
	"slices"
	"strconv"

	"github.com/damselflydb/damselfly/shard"
	"github.com/damselflydb/damselfly/shard/types"
)

// SORT and SORT_RO, with Redis 7.0's options and quirks. BY and GET
// patterns name other keys, which may live on any shard: a SORT that uses
// them locks every shard, so it sees one consistent instant.

func registerSort(reg registrar) {
	reg("sort", -2, "write|denyoom", 1, 1, 1, "generic", func(c *Client, a [][]byte) { sortGeneric(c, a, false) })
	reg("sort_ro", -2, "readonly", 1, 1, 1, "generic", func(c *Client, a [][]byte) { sortGeneric(c, a, true) })
}

// sortItem is one element being sorted, with its weight.
type sortItem struct {
	val    []byte
	score  float64
	cmp    []byte // ALPHA weight from a BY pattern
	hasCmp bool
}

// sortPatternKey splits a BY/GET pattern applied to subst into the key to
// read and the hash field (if "->field" follows the '*'); ok is false when
// the pattern has no '*' (a constant pattern reads nothing).
func sortPatternKey(pat, subst []byte) (key, field []byte, ok bool) {
	star := bytes.IndexByte(pat, '*')
	if star < 0 {
		return nil, nil, false
	}
	post := pat[star+1:]
	if arrow := bytes.Index(post, []byte("->")); arrow >= 0 && arrow+2 < len(post) {
		field = post[arrow+2:]
		post = post[:arrow]
	}
	key = make([]byte, 0, star+len(subst)+len(post))
	key = append(append(append(key, pat[:star]...), subst...), post...)
	return key, field, true
}

// sortLookup returns what pattern pat yields for element subst: the
// element itself for "#", a string key's value, or a hash field; ok is
// false for anything missing or of another type.
func sortLookup(c *Client, pat, subst []byte, t int64) ([]byte, bool) {
	if len(pat) == 1 && pat[0] == '#' {
		return subst, true
	}
	key, field, ok := sortPatternKey(pat, subst)
	if !ok {
		return nil, false
	}
	sh, h := c.srv.store.ShardOf(key)
	e, found := sh.Lookup(c.db, h, key, t)
	if !found {
		c.keyMiss(key)
		return nil, false
	}
	if field != nil {
		if e.Type() != shard.TypeHash {
			return nil, false
		}
		return e.Obj().(*types.Hash).Get(field)
	}
	if e.Type() != shard.TypeString {
		return nil, false
	}
	return e.Str(), true
}

// sortScore parses a weight as C's strtod does for SORT: leading spaces
// allowed, nothing after the number, no NaN, no overflow; "" is 0.
func sortScore(b []byte) (float64, bool) {
	i := 0
	for i < len(b) && isSpace(b[i]) {
		i++
	}
	s := string(b[i:])
	if s == "" {
		return 0, i == 0
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil {
		// C also reads hexadecimal integers ("0x1f").
		t := s
		neg := false
		if t[0] == '-' || t[0] == '+' {
			neg, t = t[0] == '-', t[1:]
		}
		if len(t) > 2 && t[0] == '0' && (t[1] == 'x' || t[1] == 'X') {
			if u, err2 := strconv.ParseUint(t[2:], 16, 64); err2 == nil {
				f = float64(u)
				if neg {
					f = -f
				}
				return f, true
			}
		}
		return 0, false
	}
	if math.IsNaN(f) {
		return 0, false
	}
	return f, true
}

func sortGeneric(c *Client, args [][]byte, readonly bool) {
	desc, alpha, dontsort := false, false, false
	limitStart, limitCount := int64(0), int64(-1)
	var sortBy, storeKey []byte
	var gets [][]byte
	patterns := false
	for j := 2; j < len(args); j++ {
		left := len(args) - j - 1
		switch a := args[j]; {
		case eq(a, "asc"):
			desc = false
		case eq(a, "desc"):
			desc = true
		case eq(a, "alpha"):
			alpha = true
		case eq(a, "limit") && left >= 2:
			var ok1, ok2 bool
			limitStart, ok1 = parseInt(args[j+1])
			if ok1 {
				limitCount, ok2 = parseInt(args[j+2])
			}
			if !ok1 || !ok2 {
				c.errNotInteger()
				return
			}
			j += 2
		case !readonly && eq(a, "store") && left >= 1:
			storeKey = args[j+1]
			j++
		case eq(a, "by") && left >= 1:
			sortBy = args[j+1]
			if bytes.IndexByte(sortBy, '*') < 0 {
				dontsort = true
			} else {
				patterns = true
			}
			j++
		case eq(a, "get") && left >= 1:
			gets = append(gets, args[j+1])
			if !(len(args[j+1]) == 1 && args[j+1][0] == '#') {
				patterns = true
			}
			j++
		default:
			c.errSyntax()
			return
		}
	}
	var set *shard.Set
	if patterns {
		set = c.lockAll()
	} else if storeKey != nil {
		set = c.lockKeys([][]byte{args[1], storeKey})
	} else {
		set = c.lockKeys(args[1:2])
	}
	defer c.unlock(set)
	t := now()
	sh, h := c.srv.store.ShardOf(args[1])
	e, found := sh.Lookup(c.db, h, args[1], t)
	typ := shard.TypeList
	if !found {
		c.keyMiss(args[1])
	}
	if found {
		typ = e.Type()
		if typ != shard.TypeList && typ != shard.TypeSet && typ != shard.TypeZSet {
			c.errWrongType()
			return
		}
	}
	if dontsort && typ == shard.TypeSet && (storeKey != nil || c.sess.inScript) {
		// A set's own order is not deterministic: replicas and scripts
		// need a sorted result.
		dontsort, alpha, sortBy = false, true, nil
	}
	n := int64(0)
	if found {
		switch typ {
		case shard.TypeList:
			n = int64(e.Obj().(*types.List).Len())
		case shard.TypeSet:
			n = int64(e.Obj().(*types.Set).Len())
		case shard.TypeZSet:
			n = int64(e.Obj().(*types.ZSet).Len())
		}
	}
	start := min(max(limitStart, 0), n)
	limitCount = min(max(limitCount, -1), n)
	end := n - 1
	if limitCount >= 0 {
		end = start + limitCount - 1
	}
	if start >= n {
		start, end = n-1, n-2
	}
	if end >= n {
		end = n - 1
	}
	var items []sortItem
	add := func(v []byte) bool {
		items = append(items, sortItem{val: slices.Clone(v)})
		return true
	}
	if found {
		switch obj := e.Obj().(type) {
		case *types.List:
			if dontsort {
				// The list's own order (reversed for DESC), LIMIT applied
				// while reading.
				if end >= start {
					if desc {
						obj.Range(-1-end, -1-start, add)
						slices.Reverse(items)
					} else {
						obj.Range(start, end, add)
					}
					end -= start
					start = 0
				}
			} else {
				obj.Iterate(add)
			}
		case *types.Set:
			obj.Iterate(add)
		case *types.ZSet:
			if dontsort {
				if end >= start {
					obj.RangeByRank(start, end, desc, func(m []byte, _ float64) bool { return add(m) })
					end -= start
					start = 0
				}
			} else {
				obj.Iterate(func(m []byte, _ float64) bool { return add(m) })
			}
		}
	}
	if !dontsort {
		convErr := false
		for i := range items {
			it := &items[i]
			w := it.val
			if sortBy != nil {
				v, ok := sortLookup(c, sortBy, it.val, t)
				if !ok {
					continue
				}
				w = v
			}
			if alpha {
				if sortBy != nil {
					it.cmp, it.hasCmp = slices.Clone(w), true
				}
				continue
			}
			f, ok := sortScore(w)
			if !ok {
				convErr = true
			}
			it.score = f
		}
		if convErr {
			c.err("ERR One or more scores can't be converted into double")
			return
		}
		byPattern := sortBy != nil
		slices.SortStableFunc(items, func(a, b sortItem) int {
			var r int
			switch {
			case !alpha:
				r = cmpFloat(a.score, b.score)
				if r == 0 {
					r = bytes.Compare(a.val, b.val)
				}
			case byPattern:
				switch {
				case !a.hasCmp && !b.hasCmp:
					r = 0
				case !a.hasCmp:
					r = -1
				case !b.hasCmp:
					r = 1
				default:
					r = bytes.Compare(a.cmp, b.cmp)
				}
			default:
				r = bytes.Compare(a.val, b.val)
			}
			if desc {
				return -r
			}
			return r
		})
	}
	count := max(end-start+1, 0)
	var picked []sortItem
	if count > 0 {
		picked = items[start : start+count]
	}
	outLen := count
	if len(gets) > 0 {
		outLen = int64(len(gets)) * count
	}
	if storeKey == nil {
		c.array(int(outLen))
		for _, it := range picked {
			if len(gets) == 0 {
				c.bulk(it.val)
			}
			for _, g := range gets {
				if v, ok := sortLookup(c, g, it.val, t); ok {
					c.bulk(v)
				} else {
					c.null()
				}
			}
		}
		return
	}
	vals := make([][]byte, 0, outLen)
	for _, it := range picked {
		if len(gets) == 0 {
			vals = append(vals, it.val)
		}
		for _, g := range gets {
			v, _ := sortLookup(c, g, it.val, t)
			vals = append(vals, slices.Clone(v)) // missing: ""
		}
	}
	l, w := types.NewList()
	if len(vals) > 0 {
		l.PushBack(w, c.lim(), vals...)
	}
	c.storeColl(storeKey, shard.TypeList, l, l.Len(), kseList, "sortstore")
	c.int(outLen)
}
