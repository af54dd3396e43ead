package server

// Keyspace notifications (notify-keyspace-events), as Redis 7.0 emits them:
// a write publishes "<event>" on __keyspace@<db>__:<key> (class K) and
// "<key>" on __keyevent@<db>__:<event> (class E), for the classes enabled.
//
// Design and invariants:
//   - Off costs one atomic load: notify returns at once when the event's
//     class is not enabled (flags is an atomic word), and the drain hook in
//     execute returns at once when nothing is queued.
//   - Events are raised where the change happens, often under shard locks
//     (a command, lazy or active expiry, eviction, a new key). There they
//     are only appended, with a copy of the key, to one server-wide queue
//     under a leaf mutex (kse.mu) that guards nothing else: no I/O, no
//     registry lock, no other lock is taken under it. Appending under the
//     shard locks puts the queue in commit order.
//   - Publishing happens later, holding no shard lock: after the command
//     that raised the events returns (execute's hook; inside EXEC or a
//     script, after the whole transaction), before a blocking command waits,
//     and from the cron (active expiry, memcached evictions). The cron
//     leaves the queue alone for a tick while it holds a running command's
//     events (owned): that command's own drain, at its end, takes them in
//     order. Drains are serialized by kse.drainMu, which is taken with no
//     shard held, so subscribers see events in the order they were queued.
//     Publishing is the ordinary Pub/Sub path (publish), which never takes
//     a shard lock.
//   - A RESP3 client subscribed to its own events gets each before or after
//     its command's reply, as the command raised it (Redis's commands
//     notify before they reply, after it, or some of each). A push never
//     goes inside a reply: an event raised while the reply was partly
//     written goes before it, where Redis 7.0 breaks RESP3's framing
//     (ZPOPMIN after its deferred length, XAUTOCLAIM, EXEC's queued
//     commands). A script's events go before its reply, as in Redis. An
//     event another drain takes first (a concurrent command's, the cron's
//     after its tick) goes out through the queue like anyone else's, ahead
//     of the reply.
//   - An event records its client (by) only until the client's own drain,
//     which takes the whole queue (a command that panics disowns its
//     events instead), so a queued event never refers to a finished
//     command or a gone client, and a drained batch is cleared before reuse.
//   - Queuing allocates nothing per event (keys go back to back into one
//     buffer, recycled with the batch); a drained batch nobody could receive
//     (kseListened) is dropped before any channel name is built.
//   - keymiss (class m) is raised by the read lookups only, where Redis's
//     lookupKeyRead misses (keyMiss): never for a wrong type, never by the
//     writers' lookups.

import (
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/damselflydb/damselfly/pubsub"
)

// Notification classes (Redis's NOTIFY_* values).
const (
	kseKeyspace uint32 = 1 << 0  // K
	kseKeyevent uint32 = 1 << 1  // E
	kseGeneric  uint32 = 1 << 2  // g
	kseString   uint32 = 1 << 3  // $
	kseList     uint32 = 1 << 4  // l
	kseSet      uint32 = 1 << 5  // s
	kseHash     uint32 = 1 << 6  // h
	kseZSet     uint32 = 1 << 7  // z
	kseExpired  uint32 = 1 << 8  // x
	kseEvicted  uint32 = 1 << 9  // e
	kseStream   uint32 = 1 << 10 // t
	kseKeyMiss  uint32 = 1 << 11 // m (not part of A)
	kseModule   uint32 = 1 << 13 // d
	kseNew      uint32 = 1 << 14 // n (not part of A)
	kseAll             = kseGeneric | kseString | kseList | kseSet | kseHash | kseZSet | kseExpired | kseEvicted | kseStream | kseModule
)

// keyspaceEvents is the server's notification state.
type keyspaceEvents struct {
	flags  atomic.Uint32
	queued atomic.Bool // q is not empty
	mu     sync.Mutex  // guards q, keys and owned; a leaf lock
	q      []kseEvent
	keys   []byte // the queued events' keys, back to back (no allocation per event)
	owned  int    // events in q with a client (by), whose command's end drains them
	// cronWaited: the cron found owned events and left them for a tick.
	cronWaited bool
	// drainMu serializes publishing so events leave in queue order; never
	// taken with a shard lock held.
	drainMu   sync.Mutex
	spare     []kseEvent
	spareKeys []byte
	ch, msg   []byte // drainMu's scratch: a channel name, an event name
	tail      []byte // drainMu's scratch: a reply set aside (kseDrain)
}

type kseEvent struct {
	db     int
	event  string
	off, n int // the key: keys[off:off+n]
	// by raised the event in a command (nil: outside one), at 1 + the
	// length of its out then (1 inside a script): whether a RESP3 client
	// subscribed to its own keys gets the push before or after its reply
	// (kseDrain).
	by *Client
	at int
}

// parseKeyspaceEvents turns Redis's class letters into flags; ok is false
// for a letter that is not a class.
func parseKeyspaceEvents(s string) (uint32, bool) {
	var f uint32
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case 'A':
			f |= kseAll
		case 'g':
			f |= kseGeneric
		case '$':
			f |= kseString
		case 'l':
			f |= kseList
		case 's':
			f |= kseSet
		case 'h':
			f |= kseHash
		case 'z':
			f |= kseZSet
		case 'x':
			f |= kseExpired
		case 'e':
			f |= kseEvicted
		case 'K':
			f |= kseKeyspace
		case 'E':
			f |= kseKeyevent
		case 't':
			f |= kseStream
		case 'm':
			f |= kseKeyMiss
		case 'd':
			f |= kseModule
		case 'n':
			f |= kseNew
		default:
			return 0, false
		}
	}
	return f, true
}

// formatKeyspaceEvents is the CONFIG GET form of flags (Redis's order).
func formatKeyspaceEvents(f uint32) string {
	var b []byte
	if f&kseAll == kseAll {
		b = append(b, 'A')
	} else {
		for _, c := range []struct {
			flag uint32
			ch   byte
		}{{kseGeneric, 'g'}, {kseString, '$'}, {kseList, 'l'}, {kseSet, 's'}, {kseHash, 'h'}, {kseZSet, 'z'},
			{kseExpired, 'x'}, {kseEvicted, 'e'}, {kseStream, 't'}, {kseModule, 'd'}, {kseNew, 'n'}} {
			if f&c.flag != 0 {
				b = append(b, c.ch)
			}
		}
	}
	if f&kseKeyspace != 0 {
		b = append(b, 'K')
	}
	if f&kseKeyevent != 0 {
		b = append(b, 'E')
	}
	if f&kseKeyMiss != 0 {
		b = append(b, 'm')
	}
	return string(b)
}

func notifyParams(m map[string]configParam) {
	m["notify-keyspace-events"] = configParam{
		get: func(s *Server) string { return formatKeyspaceEvents(s.kse.flags.Load()) },
		set: func(s *Server, v string) error {
			f, ok := parseKeyspaceEvents(v)
			if !ok {
				return errString("Invalid event class character. Use 'Ag$lshzxeKEtmdn'.")
			}
			s.setKeyspaceEvents(f)
			return nil
		},
	}
}

type errString string

func (e errString) Error() string { return string(e) }

// setKeyspaceEvents enables the classes in f (and the shards' new-key hook
// when n is among them).
func (s *Server) setKeyspaceEvents(f uint32) {
	s.kse.flags.Store(f)
	s.store.SetNewKeyEvents(f&kseNew != 0 && f&(kseKeyspace|kseKeyevent) != 0)
}

// notify raises event for key in the client's database. Called before the
// command's reply, the client itself, if subscribed (RESP3), receives the
// push before the reply; called after it, after: call it where Redis's
// t_*.c calls notifyKeyspaceEvent.
func (c *Client) notify(class uint32, event string, key []byte) {
	c.notifyDB(c.db, class, event, key)
}

// notifyDB is notify for key in database db (COPY ... DB, MOVE).
func (c *Client) notifyDB(db int, class uint32, event string, key []byte) {
	f := c.srv.kse.flags.Load()
	if f&class == 0 || f&(kseKeyspace|kseKeyevent) == 0 {
		return
	}
	at := len(c.out) + 1
	if c.sess.inScript {
		at = 1 // out is redis.call's scratch: the script's reply comes after, as in Redis
	}
	if c.kseMark == 0 || at < c.kseMark {
		c.kseMark = at
	}
	c.srv.kse.push(db, event, key, c, at)
}

// notifyDB raises event for key in database db outside a command.
func (s *Server) notifyDB(db int, class uint32, event string, key []byte) {
	f := s.kse.flags.Load()
	if f&class == 0 || f&(kseKeyspace|kseKeyevent) == 0 {
		return
	}
	s.kse.push(db, event, key, nil, 0)
}

func (k *keyspaceEvents) push(db int, event string, key []byte, by *Client, at int) {
	k.mu.Lock()
	k.q = append(k.q, kseEvent{db: db, event: event, off: len(k.keys), n: len(key), by: by, at: at})
	k.keys = append(k.keys, key...)
	if by != nil {
		k.owned++
	}
	k.queued.Store(true)
	k.mu.Unlock()
}

// disown makes c's queued events ordinary ones: its command panicked and
// will not drain them itself.
func (k *keyspaceEvents) disown(c *Client) {
	k.mu.Lock()
	for i := range k.q {
		if k.q[i].by == c {
			k.q[i].by = nil
			k.owned--
		}
	}
	k.mu.Unlock()
}

// kseAfter is execute's hook: publish what the command (or anything before
// it) queued. Inside EXEC or a script (shards held) it waits for their end.
func (s *Server) kseAfter(c *Client) {
	if !s.kse.queued.Load() || c.sess.held != nil {
		c.kseMark = 0
		return
	}
	s.kseDrain(c)
	c.kseMark = 0
}

// kseDrain publishes every queued event; from is the client whose command
// is finishing (nil from the cron). No shard lock may be held.
func (s *Server) kseDrain(from *Client) {
	k := &s.kse
	k.drainMu.Lock()
	defer k.drainMu.Unlock()
	k.mu.Lock()
	if from == nil && k.owned > 0 && !k.cronWaited {
		// The cron leaves a running command's events, and what came after
		// them, to that command's own drain at its end; for one tick, so
		// that a command still running at the next (a long script) holds
		// nobody's events back for longer.
		k.cronWaited = true
		k.mu.Unlock()
		return
	}
	k.cronWaited = false
	batch, keys := k.q, k.keys
	k.q, k.spare = k.spare[:0], nil
	k.keys, k.spareKeys = k.spareKeys[:0], nil
	k.owned = 0
	k.queued.Store(false)
	k.mu.Unlock()
	if len(batch) == 0 || !s.kseListened() {
		k.recycle(batch, keys)
		return
	}
	// A subscribed client (RESP3) receives its own events around its
	// command's reply as the command raised them, as in Redis: before SET's
	// +OK, after LPOP's element, LMOVE's push before its element and its pop
	// after. When one goes before, the reply waits aside (tail) and goes
	// back after the last such event; other clients' events go where the
	// reply then stands.
	var tail []byte
	mark, done := -1, 0 // mark: where tail was in from.out; tail[:done] is back
	start, end := 0, 0  // from's reply: from.out[start:end]
	if from != nil && from.sess.outq != nil && from.kseMark > 0 {
		end = len(from.out)
		start = min(from.cmdOut, end)
		mark = ksePlace(from.kseMark, start, end) // the first event's place
		tail = append(k.tail[:0], from.out[mark:]...)
		from.out = from.out[:mark]
	}
	f := k.flags.Load()
	ch, msg := k.ch, k.msg // scratch, reused for every event and drain
	for i := range batch {
		ev := &batch[i]
		if mark >= 0 && ev.by == from {
			if at := ksePlace(ev.at, start, end) - mark; at > done {
				from.out = append(from.out, tail[done:at]...)
				done = at
			}
		}
		key := keys[ev.off : ev.off+ev.n : ev.off+ev.n]
		if f&kseKeyspace != 0 {
			ch = append(ch[:0], "__keyspace@"...)
			ch = strconv.AppendInt(ch, int64(ev.db), 10)
			ch = append(ch, "__:"...)
			ch = append(ch, key...)
			msg = append(msg[:0], ev.event...)
			s.publish(from, kindChannel, ch, msg)
		}
		if f&kseKeyevent != 0 {
			ch = append(ch[:0], "__keyevent@"...)
			ch = strconv.AppendInt(ch, int64(ev.db), 10)
			ch = append(ch, "__:"...)
			ch = append(ch, ev.event...)
			s.publish(from, kindChannel, ch, key)
		}
	}
	if mark >= 0 {
		from.out = append(from.out, tail[done:]...)
		if cap(tail) <= 64<<10 {
			k.tail = tail[:0]
		}
	}
	if cap(ch) <= 4096 {
		k.ch, k.msg = ch, msg
	}
	k.recycle(batch, keys)
}

// ksePlace is where in out an own event raised at at (1 + the length of
// out then) goes, given the command's reply at out[start:end]: after the
// reply when the event followed all of it, else before it. Before also
// when the reply was partly written (a deferred length, a nested reply): a
// push inside a reply would break the client's parsing of it, where Redis
// 7.0 does that (ZPOPMIN's element, XAUTOCLAIM's claimed entries).
func ksePlace(at, start, end int) int {
	if at-1 >= end {
		return end
	}
	return start
}

// recycle keeps a drained batch's buffers for the next one (bounded).
func (k *keyspaceEvents) recycle(batch []kseEvent, keys []byte) {
	k.mu.Lock()
	if k.spare == nil && cap(batch) <= 1024 {
		clear(batch) // hold no client
		k.spare = batch[:0]
	}
	if k.spareKeys == nil && cap(keys) <= 64<<10 {
		k.spareKeys = keys[:0]
	}
	k.mu.Unlock()
}

// kseListened reports whether anyone could receive a keyspace event: a
// pattern subscription, or a channel subscription to a __keyspace@ or
// __keyevent@ channel. When nobody could, a drained batch is dropped
// without building a channel name. It asks the Pub/Sub registry (package
// pubsub) through its public counts.
func (s *Server) kseListened() bool {
	channels, patterns, _ := s.pubsub.Counts()
	if patterns > 0 || channels > 64 {
		return true // a pattern may match; many channels: not worth a scan
	}
	return channels > 0 && (len(s.pubsub.Channels(pubsub.Channel, []byte("__keyspace@*"))) > 0 ||
		len(s.pubsub.Channels(pubsub.Channel, []byte("__keyevent@*"))) > 0)
}

// notifyNewKey is the store's new-key hook (under the shard lock).
func (s *Server) notifyNewKey(db int, key []byte) { s.notifyDB(db, kseNew, "new", key) }

// kseAfterCron publishes what expiry, eviction outside commands (memcached)
// and served blocked clients queued (the cron, holding no shard).
func (s *Server) kseAfterCron() {
	if s.kse.queued.Load() {
		s.kseDrain(nil)
	}
}

// keyMiss raises keymiss (class m) for key: called where Redis's read
// lookup (lookupKeyRead) finds nothing, never for a wrong type.
func (c *Client) keyMiss(key []byte) { c.notify(kseKeyMiss, "keymiss", key) }
