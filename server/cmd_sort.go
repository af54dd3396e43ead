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

// sortOpts are SORT's options as parsed.
type sortOpts struct {
	desc, alpha, dontsort  bool
	limitStart, limitCount int64
	sortBy, storeKey       []byte
	gets                   [][]byte
	patterns               bool // BY or GET read other keys: every shard is locked
}

// parseSortOpts parses SORT's options (args[2:]), replying the error when
// they are bad.
func parseSortOpts(c *Client, args [][]byte, readonly bool) (o sortOpts, ok bool) {
	o.limitCount = -1
	for j := 2; j < len(args); j++ {
		left := len(args) - j - 1
		switch a := args[j]; {
		case eq(a, "asc"):
			o.desc = false
		case eq(a, "desc"):
			o.desc = true
		case eq(a, "alpha"):
			o.alpha = true
		case eq(a, "limit") && left >= 2:
			var ok1, ok2 bool
			o.limitStart, ok1 = parseInt(args[j+1])
			if ok1 {
				o.limitCount, ok2 = parseInt(args[j+2])
			}
			if !ok1 || !ok2 {
				c.errNotInteger()
				return o, false
			}
			j += 2
		case !readonly && eq(a, "store") && left >= 1:
			o.storeKey = args[j+1]
			j++
		case eq(a, "by") && left >= 1:
			o.sortBy = args[j+1]
			if bytes.IndexByte(o.sortBy, '*') < 0 {
				o.dontsort = true
			} else {
				o.patterns = true
			}
			j++
		case eq(a, "get") && left >= 1:
			o.gets = append(o.gets, args[j+1])
			if !(len(args[j+1]) == 1 && args[j+1][0] == '#') {
				o.patterns = true
			}
			j++
		default:
			c.errSyntax()
			return o, false
		}
	}
	return o, true
}

// lock locks what the sort reads and writes: every shard when patterns
// name other keys, else the source and the STORE destination.
func (o *sortOpts) lock(c *Client, key []byte) *shard.Set {
	switch {
	case o.patterns:
		return c.lockAll()
	case o.storeKey != nil:
		return c.lockKeys([][]byte{key, o.storeKey})
	}
	return c.lockKeys([][]byte{key})
}

// window is LIMIT applied to n elements: the first and last rank picked
// (end < start: none).
func (o *sortOpts) window(n int64) (start, end int64) {
	start = min(max(o.limitStart, 0), n)
	limitCount := min(max(o.limitCount, -1), n)
	end = n - 1
	if limitCount >= 0 {
		end = start + limitCount - 1
	}
	if start >= n {
		start, end = n-1, n-2
	}
	if end >= n {
		end = n - 1
	}
	return start, end
}

func sortGeneric(c *Client, args [][]byte, readonly bool) {
	o, ok := parseSortOpts(c, args, readonly)
	if !ok {
		return
	}
	defer c.unlock(o.lock(c, args[1]))
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
	if o.dontsort && typ == shard.TypeSet && (o.storeKey != nil || c.sess.inScript) {
		// A set's own order is not deterministic: replicas and scripts
		// need a sorted result.
		o.dontsort, o.alpha, o.sortBy = false, true, nil
	}
	var items []sortItem
	start, end := int64(0), int64(-1)
	if found {
		items, start, end = o.collect(e.Obj())
	}
	if !o.dontsort {
		if !o.weigh(c, items, t) {
			c.err("ERR One or more scores can't be converted into double")
			return
		}
		o.sort(items)
	}
	count := max(end-start+1, 0)
	var picked []sortItem
	if count > 0 {
		picked = items[start : start+count]
	}
	if o.storeKey == nil {
		o.reply(c, picked, t)
		return
	}
	o.store(c, picked, t)
}

// collect copies the elements of obj (a list, set or sorted set) to sort,
// and returns the window of them to pick. Without sorting, only the window
// is read, in the collection's own order (reversed for DESC).
func (o *sortOpts) collect(obj any) (items []sortItem, start, end int64) {
	add := func(v []byte) bool {
		items = append(items, sortItem{val: slices.Clone(v)})
		return true
	}
	switch obj := obj.(type) {
	case *types.List:
		start, end = o.window(int64(obj.Len()))
		if !o.dontsort {
			obj.Iterate(add)
			break
		}
		if end >= start {
			if o.desc {
				obj.Range(-1-end, -1-start, add)
				slices.Reverse(items)
			} else {
				obj.Range(start, end, add)
			}
			start, end = 0, end-start
		}
	case *types.Set:
		start, end = o.window(int64(obj.Len()))
		obj.Iterate(add)
	case *types.ZSet:
		start, end = o.window(int64(obj.Len()))
		if !o.dontsort {
			obj.Iterate(func(m []byte, _ float64) bool { return add(m) })
			break
		}
		if end >= start {
			obj.RangeByRank(start, end, o.desc, func(m []byte, _ float64) bool { return add(m) })
			start, end = 0, end-start
		}
	}
	return items, start, end
}

// weigh gives every item its weight: itself or what BY reads for it, as a
// number (false: one is not a number) or, with ALPHA and BY, as bytes.
func (o *sortOpts) weigh(c *Client, items []sortItem, t int64) bool {
	convErr := false
	for i := range items {
		it := &items[i]
		w := it.val
		if o.sortBy != nil {
			v, ok := sortLookup(c, o.sortBy, it.val, t)
			if !ok {
				continue
			}
			w = v
		}
		if o.alpha {
			if o.sortBy != nil {
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
	return !convErr
}

// sort orders the weighed items (stable, as Redis's sort of equal weights
// by the element).
func (o *sortOpts) sort(items []sortItem) {
	alpha, desc, byPattern := o.alpha, o.desc, o.sortBy != nil
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

// outLen is the number of values picked items give: one each, or one per
// GET pattern.
func (o *sortOpts) outLen(picked []sortItem) int64 {
	if len(o.gets) > 0 {
		return int64(len(o.gets) * len(picked))
	}
	return int64(len(picked))
}

// reply sends the picked items, or what the GET patterns read for them
// (a missing one as a null).
func (o *sortOpts) reply(c *Client, picked []sortItem, t int64) {
	c.array(int(o.outLen(picked)))
	for _, it := range picked {
		if len(o.gets) == 0 {
			c.bulk(it.val)
		}
		for _, g := range o.gets {
			if v, ok := sortLookup(c, g, it.val, t); ok {
				c.bulk(v)
			} else {
				c.null()
			}
		}
	}
}

// store writes the picked items (or what the GET patterns read, a missing
// one as "") as a list at STORE's key and replies its length.
func (o *sortOpts) store(c *Client, picked []sortItem, t int64) {
	outLen := o.outLen(picked)
	vals := make([][]byte, 0, outLen)
	for _, it := range picked {
		if len(o.gets) == 0 {
			vals = append(vals, it.val)
		}
		for _, g := range o.gets {
			v, _ := sortLookup(c, g, it.val, t)
			vals = append(vals, slices.Clone(v)) // missing: ""
		}
	}
	l, w := types.NewList()
	if len(vals) > 0 {
		l.PushBack(w, c.lim(), vals...)
	}
	c.storeColl(o.storeKey, shard.TypeList, l, l.Len(), kseList, "sortstore").raise(c) // before the reply, as Redis
	c.int(outLen)
}
