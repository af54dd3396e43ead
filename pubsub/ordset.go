package pubsub

// ordSet is a set that remembers insertion order: add and remove are O(1)
// amortized, iteration follows the order of the first add. Removal leaves a
// hole that iteration skips; the holes are squeezed out once they outnumber
// the members, so the slice stays within twice the set's size.
type ordSet[E comparable] struct {
	items []slot[E]
	pos   map[E]int // member -> index in items
}

type slot[E comparable] struct {
	v    E
	live bool
}

func (o *ordSet[E]) len() int { return len(o.pos) }

func (o *ordSet[E]) has(v E) bool {
	_, ok := o.pos[v]
	return ok
}

// add inserts v at the end; false if it was already there.
func (o *ordSet[E]) add(v E) bool {
	if _, ok := o.pos[v]; ok {
		return false
	}
	if o.pos == nil {
		o.pos = map[E]int{}
	}
	o.pos[v] = len(o.items)
	o.items = append(o.items, slot[E]{v: v, live: true})
	return true
}

// remove deletes v; false if it was not there.
func (o *ordSet[E]) remove(v E) bool {
	i, ok := o.pos[v]
	if !ok {
		return false
	}
	delete(o.pos, v)
	var zero E
	o.items[i] = slot[E]{v: zero}
	if len(o.pos) == 0 {
		o.items = o.items[:0]
	} else if holes := len(o.items) - len(o.pos); holes > 8 && holes > len(o.pos) {
		o.compact()
	}
	return true
}

func (o *ordSet[E]) compact() {
	j := 0
	for _, it := range o.items {
		if it.live {
			o.items[j] = it
			o.pos[it.v] = j
			j++
		}
	}
	clear(o.items[j:])
	o.items = o.items[:j]
}

// each calls fn for every member in insertion order until fn returns
// false. fn must not change the set.
func (o *ordSet[E]) each(fn func(E) bool) {
	for _, it := range o.items {
		if it.live && !fn(it.v) {
			return
		}
	}
}

// members returns the members in insertion order (a copy).
func (o *ordSet[E]) members() []E {
	out := make([]E, 0, len(o.pos))
	for _, it := range o.items {
		if it.live {
			out = append(out, it.v)
		}
	}
	return out
}
