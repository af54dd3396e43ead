// Package pubsub is the Pub/Sub registry: which subscribers listen to which
// channels, patterns and shard channels, and the fan-out of a published
// message to them in Redis 7.0's order. It knows nothing of connections or
// RESP: the server owns those and passes callbacks that format and queue
// the replies (docs/architecture.md, "Pub/Sub").
//
// Model. A Registry[T] holds Subscribers; T is the caller's handle for a
// connection (the server's *Client), carried in Subscriber.Owner. There are
// three kinds of subscription, each its own namespace: Channel (SUBSCRIBE),
// Pattern (PSUBSCRIBE, a Redis glob matched against ordinary channels) and
// Shard (SSUBSCRIBE; SPUBLISH reaches shard subscribers only).
//
// Order (what a subscriber observes):
//   - Publish delivers first to the channel's subscribers in the order they
//     subscribed, then, for an ordinary channel, to each matching pattern in
//     the order the patterns were first subscribed, each pattern's
//     subscribers in the order they subscribed. A client that has both a
//     channel and a matching pattern gets "message" before "pmessage", as in
//     Redis. Redis 7.0 visits its pattern dict in hash order; ours is a
//     fixed order, which is one of those Redis may show.
//   - Unsubscribing from everything of a kind confirms the names in the
//     order the subscriber subscribed to them.
//   - The confirm callbacks of Subscribe and Unsubscribe run while the
//     registry is held exclusively, and deliver callbacks of Publish while
//     it is held shared. So a confirmation queued by confirm precedes every
//     message on that name, and no message on a name follows the queued
//     confirmation of its unsubscription.
//
// Concurrency and locking:
//   - Every method is safe from any goroutine. One RWMutex guards the
//     registry and every Subscriber's set of names: Publish and the counts
//     take it shared, changes take it exclusively.
//   - Subscriber's Count, Total and Subscribed read atomics and are safe
//     without the lock (CLIENT LIST from another goroutine); they are exact
//     only under the lock or on the goroutine that alone changes that
//     subscriber.
//   - Lock order: the caller's locks (a script's or EXEC's shard locks) ->
//     Registry.mu -> whatever the callbacks take. Callbacks must not call
//     back into the Registry (its mutex is not reentrant) and must not take
//     a lock that anyone holds while calling the Registry. The Registry
//     itself takes no other lock and does no I/O.
package pubsub

import (
	"slices"
	"sync"
	"sync/atomic"

	"github.com/damselflydb/damselfly/glob"
)

// Kind is a subscription's namespace.
type Kind uint8

const (
	Channel Kind = iota // SUBSCRIBE / PUBLISH
	Pattern             // PSUBSCRIBE: receives PUBLISH to matching channels
	Shard               // SSUBSCRIBE / SPUBLISH
	numKinds
)

// Subscriber is one connection's subscriptions. The zero value is ready
// once Owner is set (it may be embedded in the connection); set Owner
// before the first Subscribe and never change it after. Do not copy.
type Subscriber[T comparable] struct {
	Owner T

	names [numKinds]ordSet[string] // guarded by the registry's mutex
	total atomic.Int32             // all kinds
	kinds [numKinds]atomic.Int32   // by kind
}

// Subscribed reports whether s has any subscription (Pub/Sub mode).
func (s *Subscriber[T]) Subscribed() bool { return s.total.Load() > 0 }

// Count is the number of s's subscriptions of kind k.
func (s *Subscriber[T]) Count(k Kind) int { return int(s.kinds[k].Load()) }

// replyCount is the count Redis puts in (un)subscribe confirmations:
// channels and patterns together, shard channels apart.
func (s *Subscriber[T]) replyCount(k Kind) int {
	if k == Shard {
		return s.names[Shard].len()
	}
	return s.names[Channel].len() + s.names[Pattern].len()
}

// subs is the ordered set of one name's subscribers.
type subs[T comparable] = ordSet[*Subscriber[T]]

// pattern is one subscribed pattern with its subscribers.
type pattern[T comparable] struct {
	name  string
	glob  []byte // name as bytes (never nil), for the matcher and deliver
	subs  subs[T]
	order int // position in Registry.patOrder
}

// Registry is every subscription of a server. Make it with NewRegistry.
type Registry[T comparable] struct {
	mu       sync.RWMutex
	chans    [numKinds]map[string]*subs[T] // Channel and Shard
	pats     map[string]*pattern[T]
	patOrder ordSet[*pattern[T]] // patterns in order of first subscription
}

// NewRegistry makes an empty registry.
func NewRegistry[T comparable]() *Registry[T] {
	r := &Registry[T]{pats: map[string]*pattern[T]{}}
	r.chans[Channel] = map[string]*subs[T]{}
	r.chans[Shard] = map[string]*subs[T]{}
	return r
}

// Confirm is told of each (un)subscription with the subscriber's count of
// subscriptions after it (Redis's third element of the confirmation). name
// is nil only for an UNSUBSCRIBE of everything when there was nothing to
// unsubscribe from.
type Confirm func(name []byte, count int)

// Subscribe subscribes s to names of kind k (a repeated name is confirmed
// again but counted once), calling confirm for each name under the lock.
func (r *Registry[T]) Subscribe(s *Subscriber[T], k Kind, names [][]byte, confirm Confirm) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, n := range names {
		r.add(s, k, string(n))
		if confirm != nil {
			confirm(n, s.replyCount(k))
		}
	}
}

// Unsubscribe drops s's subscriptions of kind k to names, or to everything
// of kind k when names is empty (in the order s subscribed), calling
// confirm for each name under the lock. A name s was not subscribed to is
// confirmed all the same, as Redis does.
func (r *Registry[T]) Unsubscribe(s *Subscriber[T], k Kind, names [][]byte, confirm Confirm) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(names) == 0 {
		all := s.names[k].members()
		if len(all) == 0 && confirm != nil {
			confirm(nil, s.replyCount(k))
		}
		for _, n := range all {
			r.remove(s, k, n)
			if confirm != nil {
				confirm(append(make([]byte, 0, len(n)), n...), s.replyCount(k))
			}
		}
		return
	}
	for _, n := range names {
		r.remove(s, k, string(n))
		if confirm != nil {
			confirm(n, s.replyCount(k))
		}
	}
}

// UnsubscribeAll drops every subscription of s without confirmations
// (disconnection, RESET).
func (r *Registry[T]) UnsubscribeAll(s *Subscriber[T]) {
	if s.total.Load() == 0 {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	for k := range numKinds {
		for _, n := range s.names[k].members() {
			r.remove(s, k, n)
		}
	}
}

// UnsubscribeShardWhere drops every shard channel for which drop is true,
// with all its subscribers, calling confirm for each subscriber and
// channel under the lock (Redis Cluster drops the shard channels of a slot
// the node stops serving, telling their subscribers with SUNSUBSCRIBE).
func (r *Registry[T]) UnsubscribeShardWhere(drop func(channel string) bool, confirm func(s *Subscriber[T], channel []byte, count int)) {
	r.mu.Lock()
	defer r.mu.Unlock()
	var names []string
	for n := range r.chans[Shard] {
		if drop(n) {
			names = append(names, n)
		}
	}
	slices.Sort(names)
	for _, n := range names {
		for _, s := range r.chans[Shard][n].members() {
			r.remove(s, Shard, n)
			if confirm != nil {
				confirm(s, []byte(n), s.replyCount(Shard))
			}
		}
	}
}

// add records s on name; the registry is held exclusively.
func (r *Registry[T]) add(s *Subscriber[T], k Kind, name string) {
	if !s.names[k].add(name) {
		return
	}
	s.total.Add(1)
	s.kinds[k].Add(1)
	if k == Pattern {
		p := r.pats[name]
		if p == nil {
			p = &pattern[T]{name: name, glob: append(make([]byte, 0, len(name)), name...)}
			r.pats[name] = p
			r.patOrder.add(p)
		}
		p.subs.add(s)
		return
	}
	set := r.chans[k][name]
	if set == nil {
		set = &subs[T]{}
		r.chans[k][name] = set
	}
	set.add(s)
}

// remove drops s from name; the registry is held exclusively.
func (r *Registry[T]) remove(s *Subscriber[T], k Kind, name string) {
	if !s.names[k].remove(name) {
		return
	}
	s.total.Add(-1)
	s.kinds[k].Add(-1)
	if k == Pattern {
		if p := r.pats[name]; p != nil {
			p.subs.remove(s)
			if p.subs.len() == 0 {
				delete(r.pats, name)
				r.patOrder.remove(p)
			}
		}
		return
	}
	if set := r.chans[k][name]; set != nil {
		set.remove(s)
		if set.len() == 0 {
			delete(r.chans[k], name)
		}
	}
}

// Publish hands a message on channel (kind Channel or Shard) to every
// receiver, in the order the package doc gives, and returns how many
// deliveries there were. deliver runs with the registry held shared;
// pattern is nil for a channel subscriber and the matching pattern
// (non-nil, even when empty) for a pattern subscriber: the registry's own
// bytes, to read during the call only, never to change or keep.
func (r *Registry[T]) Publish(k Kind, channel []byte, deliver func(s *Subscriber[T], pattern []byte)) int {
	n := 0
	r.mu.RLock()
	defer r.mu.RUnlock()
	if set := r.chans[k][string(channel)]; set != nil {
		for _, it := range set.items {
			if it.live {
				deliver(it.v, nil)
				n++
			}
		}
	}
	if k != Channel {
		return n
	}
	for _, pit := range r.patOrder.items {
		if !pit.live {
			continue
		}
		p := pit.v
		if !glob.Match(p.glob, channel, false) {
			continue
		}
		for _, it := range p.subs.items {
			if it.live {
				deliver(it.v, p.glob)
				n++
			}
		}
	}
	return n
}

// Channels returns the active channels of kind k (Channel or Shard)
// matching the glob pattern match (every channel when match is nil),
// sorted (PUBSUB CHANNELS, SHARDCHANNELS).
func (r *Registry[T]) Channels(k Kind, match []byte) []string {
	r.mu.RLock()
	var names []string
	for n := range r.chans[k] {
		if match == nil || glob.Match(match, []byte(n), false) {
			names = append(names, n)
		}
	}
	r.mu.RUnlock()
	slices.Sort(names)
	return names
}

// NumSub returns the number of subscribers of channel of kind k (Channel
// or Shard), pattern subscribers not counted (PUBSUB NUMSUB, SHARDNUMSUB).
func (r *Registry[T]) NumSub(k Kind, channel []byte) int {
	r.mu.RLock()
	defer r.mu.RUnlock()
	if set := r.chans[k][string(channel)]; set != nil {
		return set.len()
	}
	return 0
}

// NumPat returns the number of distinct subscribed patterns (PUBSUB
// NUMPAT).
func (r *Registry[T]) NumPat() int {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return len(r.pats)
}

// Counts returns the number of active channels, patterns and shard
// channels (INFO's pubsub_channels and pubsub_patterns).
func (r *Registry[T]) Counts() (channels, patterns, shardChannels int) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return len(r.chans[Channel]), len(r.pats), len(r.chans[Shard])
}

// AnyName reports whether pred holds for one of s's subscriptions, visited
// under the shared lock in kind then subscription order (ACL: is s
// subscribed to something its user may no longer see?).
func (r *Registry[T]) AnyName(s *Subscriber[T], pred func(k Kind, name string) bool) bool {
	r.mu.RLock()
	defer r.mu.RUnlock()
	found := false
	for k := range numKinds {
		s.names[k].each(func(n string) bool {
			found = pred(k, n)
			return !found
		})
		if found {
			return true
		}
	}
	return false
}
