package types

import (
	"bytes"
	"slices"
	"sort"
)

// ztree is an order-statistic B+tree of (score, member) items. Leaves hold
// pointer-free arrays of {score, ref} where ref locates the member in the
// sorted set's table arena; inner nodes keep the element count of every
// child so that rank operations are O(log n), and a separator (a lower
// bound) per child for navigation.

const (
	zLeafMax  = 64
	zInnerMax = 64
)

type zitem struct {
	score float64
	ref   uint64
}

type znode struct {
	items []zitem  // leaf
	kids  []*znode // inner
	cnts  []int    // inner: number of items under kids[i]
	seps  []zitem  // inner: lower bound of kids[i]
}

func (n *znode) leaf() bool { return n.kids == nil }

func (n *znode) size() int {
	if n.leaf() {
		return len(n.items)
	}
	s := 0
	for _, c := range n.cnts {
		s += c
	}
	return s
}

func (n *znode) first() zitem {
	if n.leaf() {
		return n.items[0]
	}
	return n.seps[0]
}

func (n *znode) width() int {
	if n.leaf() {
		return len(n.items)
	}
	return len(n.kids)
}

type ztree struct {
	root *znode
	t    *table
}

func newZTree(t *table) *ztree { return &ztree{root: &znode{}, t: t} }

// cmp compares item a with (score, member).
func (tr *ztree) cmp(a zitem, score float64, member []byte) int {
	if a.score < score {
		return -1
	}
	if a.score > score {
		return 1
	}
	return bytes.Compare(tr.t.keyAt(a.ref), member)
}

// childFor returns the index of the child whose range holds (score, member).
func (tr *ztree) childFor(n *znode, score float64, member []byte) int {
	// number of seps[1:] <= target
	return sort.Search(len(n.seps)-1, func(k int) bool { return tr.cmp(n.seps[k+1], score, member) > 0 })
}

func (tr *ztree) insert(it zitem, member []byte) {
	if s := tr.insertAt(tr.root, it, member); s != nil {
		old := tr.root
		tr.root = &znode{
			kids: []*znode{old, s},
			cnts: []int{old.size(), s.size()},
			seps: []zitem{old.first(), s.first()},
		}
	}
}

func (tr *ztree) insertAt(n *znode, it zitem, member []byte) *znode {
	if n.leaf() {
		pos := sort.Search(len(n.items), func(k int) bool { return tr.cmp(n.items[k], it.score, member) > 0 })
		n.items = slices.Insert(n.items, pos, it)
		if len(n.items) <= zLeafMax {
			return nil
		}
		cut := len(n.items) / 2
		if pos == len(n.items)-1 {
			cut = len(n.items) - 1
		} else if pos == 0 {
			cut = 1
		}
		right := &znode{items: slices.Clone(n.items[cut:])}
		n.items = slices.Clip(slices.Clone(n.items[:cut]))
		return right
	}
	i := tr.childFor(n, it.score, member)
	n.cnts[i]++
	s := tr.insertAt(n.kids[i], it, member)
	if s == nil {
		return nil
	}
	n.cnts[i] = n.kids[i].size()
	n.kids = slices.Insert(n.kids, i+1, s)
	n.cnts = slices.Insert(n.cnts, i+1, s.size())
	n.seps = slices.Insert(n.seps, i+1, s.first())
	if len(n.kids) <= zInnerMax {
		return nil
	}
	cut := len(n.kids) / 2
	right := &znode{
		kids: slices.Clone(n.kids[cut:]),
		cnts: slices.Clone(n.cnts[cut:]),
		seps: slices.Clone(n.seps[cut:]),
	}
	n.kids = slices.Clone(n.kids[:cut])
	n.cnts = slices.Clone(n.cnts[:cut])
	n.seps = slices.Clone(n.seps[:cut])
	return right
}

// delete removes the item equal to (score, member); it reports success.
func (tr *ztree) delete(score float64, member []byte) bool {
	ok := tr.deleteAt(tr.root, score, member)
	for !tr.root.leaf() && len(tr.root.kids) == 1 {
		tr.root = tr.root.kids[0]
	}
	return ok
}

func (tr *ztree) deleteAt(n *znode, score float64, member []byte) bool {
	if n.leaf() {
		pos := sort.Search(len(n.items), func(k int) bool { return tr.cmp(n.items[k], score, member) >= 0 })
		if pos == len(n.items) || tr.cmp(n.items[pos], score, member) != 0 {
			return false
		}
		n.items = slices.Delete(n.items, pos, pos+1)
		return true
	}
	i := tr.childFor(n, score, member)
	if !tr.deleteAt(n.kids[i], score, member) {
		return false
	}
	n.cnts[i]--
	tr.rebalance(n, i)
	return true
}

// rebalance fixes an underfull kids[i] by merging with or borrowing from a
// sibling.
func (tr *ztree) rebalance(n *znode, i int) {
	k := n.kids[i]
	maxw := zInnerMax
	if k.leaf() {
		maxw = zLeafMax
	}
	if k.width() >= maxw/4 || len(n.kids) < 2 {
		if k.width() == 0 && len(n.kids) >= 2 {
			n.removeKid(i)
		}
		return
	}
	a := i
	if i+1 >= len(n.kids) {
		a = i - 1
	}
	b := a + 1
	ka, kb := n.kids[a], n.kids[b]
	wa, wb := ka.width(), kb.width()
	if wa+wb <= maxw {
		if ka.leaf() {
			ka.items = append(ka.items, kb.items...)
		} else {
			ka.kids = append(ka.kids, kb.kids...)
			ka.cnts = append(ka.cnts, kb.cnts...)
			ka.seps = append(ka.seps, kb.seps...)
		}
		n.cnts[a] += n.cnts[b]
		n.removeKid(b)
		return
	}
	want := (wa + wb) / 2
	if ka.leaf() {
		if wa < want {
			m := want - wa
			ka.items = append(ka.items, kb.items[:m]...)
			kb.items = slices.Delete(kb.items, 0, m)
		} else {
			m := wa - want
			kb.items = slices.Insert(kb.items, 0, ka.items[wa-m:]...)
			ka.items = ka.items[:wa-m]
		}
	} else {
		if wa < want {
			m := want - wa
			ka.kids = append(ka.kids, kb.kids[:m]...)
			ka.cnts = append(ka.cnts, kb.cnts[:m]...)
			ka.seps = append(ka.seps, kb.seps[:m]...)
			kb.kids = slices.Delete(kb.kids, 0, m)
			kb.cnts = slices.Delete(kb.cnts, 0, m)
			kb.seps = slices.Delete(kb.seps, 0, m)
		} else {
			m := wa - want
			kb.kids = slices.Insert(kb.kids, 0, ka.kids[wa-m:]...)
			kb.cnts = slices.Insert(kb.cnts, 0, ka.cnts[wa-m:]...)
			kb.seps = slices.Insert(kb.seps, 0, ka.seps[wa-m:]...)
			clear(ka.kids[wa-m:])
			ka.kids = ka.kids[:wa-m]
			ka.cnts = ka.cnts[:wa-m]
			ka.seps = ka.seps[:wa-m]
		}
	}
	n.cnts[a], n.cnts[b] = ka.size(), kb.size()
	n.seps[b] = kb.first()
}

func (n *znode) removeKid(i int) {
	n.kids = slices.Delete(n.kids, i, i+1)
	n.cnts = slices.Delete(n.cnts, i, i+1)
	n.seps = slices.Delete(n.seps, i, i+1)
}

// rankWhere returns how many leading items satisfy pred, which must hold for
// a prefix of the order.
func (tr *ztree) rankWhere(pred func(it zitem) bool) int {
	r := 0
	n := tr.root
	for !n.leaf() {
		i := sort.Search(len(n.seps)-1, func(k int) bool { return !pred(n.seps[k+1]) })
		for k := 0; k < i; k++ {
			r += n.cnts[k]
		}
		n = n.kids[i]
	}
	return r + sort.Search(len(n.items), func(k int) bool { return !pred(n.items[k]) })
}

// ascend calls fn for the items of ranks [from, to) of the subtree n.
func ascend(n *znode, from, to int, fn func(zitem) bool) bool {
	if n.leaf() {
		for k := from; k < to; k++ {
			if !fn(n.items[k]) {
				return false
			}
		}
		return true
	}
	base := 0
	for i, c := range n.cnts {
		if base >= to {
			break
		}
		if base+c > from {
			if !ascend(n.kids[i], max(from-base, 0), min(to-base, c), fn) {
				return false
			}
		}
		base += c
	}
	return true
}

// descend calls fn for the items of ranks [from, to) in reverse order.
func descend(n *znode, from, to int, fn func(zitem) bool) bool {
	if n.leaf() {
		for k := to - 1; k >= from; k-- {
			if !fn(n.items[k]) {
				return false
			}
		}
		return true
	}
	base := 0
	for _, c := range n.cnts {
		base += c
	}
	for i := len(n.cnts) - 1; i >= 0; i-- {
		c := n.cnts[i]
		base -= c
		if base+c <= from {
			break
		}
		if base < to {
			if !descend(n.kids[i], max(from-base, 0), min(to-base, c), fn) {
				return false
			}
		}
	}
	return true
}

// walkRefs lets fn rewrite every leaf ref (arena compaction) and then
// recomputes the separators.
func (tr *ztree) walkRefs(fn func(uint64) uint64) {
	var walk func(n *znode) zitem
	walk = func(n *znode) zitem {
		if n.leaf() {
			for k := range n.items {
				n.items[k].ref = fn(n.items[k].ref)
			}
			if len(n.items) == 0 {
				return zitem{}
			}
			return n.items[0]
		}
		for i, k := range n.kids {
			n.seps[i] = walk(k)
		}
		return n.seps[0]
	}
	walk(tr.root)
}

func cloneZNode(n *znode) *znode {
	c := &znode{}
	if n.leaf() {
		c.items = slices.Clone(n.items)
		return c
	}
	c.kids = make([]*znode, len(n.kids))
	for i, k := range n.kids {
		c.kids[i] = cloneZNode(k)
	}
	c.cnts = slices.Clone(n.cnts)
	c.seps = slices.Clone(n.seps)
	return c
}

func zNodeMem(n *znode) int {
	m := 96
	if n.leaf() {
		return m + 16*cap(n.items)
	}
	m += 8*cap(n.kids) + 8*cap(n.cnts) + 16*cap(n.seps)
	for _, k := range n.kids {
		m += zNodeMem(k)
	}
	return m
}

// check verifies the tree invariants (tests).
func (tr *ztree) check() error {
	var prev *zitem
	var err error
	var walk func(n *znode, lo *zitem) int
	walk = func(n *znode, lo *zitem) int {
		if n.leaf() {
			for k := range n.items {
				it := n.items[k]
				if prev != nil && tr.cmp(*prev, it.score, tr.t.keyAt(it.ref)) >= 0 && err == nil {
					err = errTree("order")
				}
				if lo != nil && tr.cmp(*lo, it.score, tr.t.keyAt(it.ref)) > 0 && err == nil {
					err = errTree("separator")
				}
				prev = &n.items[k]
			}
			return len(n.items)
		}
		tot := 0
		for i, k := range n.kids {
			var l *zitem
			if i > 0 || lo != nil {
				l = &n.seps[i]
			}
			c := walk(k, l)
			if c != n.cnts[i] && err == nil {
				err = errTree("count")
			}
			if c == 0 && err == nil {
				err = errTree("empty kid")
			}
			tot += c
		}
		return tot
	}
	walk(tr.root, nil)
	return err
}

type errTree string

func (e errTree) Error() string { return "ztree: " + string(e) }
