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
//     script, after the whole transaction), and from the cron (active expiry,
//     memcached evictions, served blocked clients). Drains are serialized by
//     kse.drainMu, which is taken with no shard held, so subscribers see
//     events in the order they were queued. Publishing is the ordinary
//     Pub/Sub path (publish), which never takes a shard lock.
//   - A RESP3 client subscribed to its own events gets each where the
//     command raised it relative to its reply writes, as from Redis (some
//     commands notify before they reply, some after, some in between).
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
	mu     sync.Mutex  // guards q and keys; a leaf lock
	q      []kseEvent
	keys   []byte // the queued events' keys, back to back (no allocation per event)
	// drainMu serializes publishing so events leave in queue order; never
	// taken with a shard lock held.
	drainMu   sync.Mutex
	spare     []kseEvent
	spareKeys []byte
	ch, msg   []byte // drainMu's scratch: a channel name, an event name
}

type kseEvent struct {
	db     int
	event  string
	off, n int // the key: keys[off:off+n]
	// by raised the event in a command, at 1 + the length of its out then
	// (0: outside a command, or inside EXEC or a script): where a RESP3
	// client subscribed to its own keys gets the push (kseDrain).
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

// notify raises event for key in the client's database. Where it is called
// relative to the command's reply writes is where the client itself, if
// subscribed (RESP3), receives the push, as from Redis: call it where
// Redis's t_*.c calls notifyKeyspaceEvent.
func (c *Client) notify(class uint32, event string, key []byte) {
	c.notifyDB(c.db, class, event, key)
}

// notifyDB is notify for key in database db (COPY ... DB, MOVE).
func (c *Client) notifyDB(db int, class uint32, event string, key []byte) {
	f := c.srv.kse.flags.Load()
	if f&class == 0 || f&(kseKeyspace|kseKeyevent) == 0 {
		return
	}
	if c.sess.held != nil {
		c.srv.kse.push(db, event, key, nil, 0)
		return
	}
	if c.kseMark == 0 {
		c.kseMark = len(c.out) + 1
	}
	c.srv.kse.push(db, event, key, c, len(c.out)+1)
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
	k.queued.Store(true)
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
	batch, keys := k.q, k.keys
	k.q, k.spare = k.spare[:0], nil
	k.keys, k.spareKeys = k.spareKeys[:0], nil
	k.queued.Store(false)
	k.mu.Unlock()
	if len(batch) == 0 || !s.kseListened() {
		k.recycle(batch, keys)
		return
	}
	// A subscribed client (RESP3) receives its own events where the command
	// raised them, as in Redis: before SET's +OK, after the element LPOP
	// replies first, between LMOVE's push, its reply and its pop. What the
	// command wrote after its first event waits aside meanwhile, and goes
	// back piece by piece up to each of its events' offsets; other
	// clients' events go where the last piece ended.
	var tail []byte
	mark, done := -1, 0 // tail[:done] is back in from.out
	if from != nil && from.sess.outq != nil && from.kseMark > 0 && from.kseMark-1 <= len(from.out) {
		mark = from.kseMark - 1
		tail = append(tail, from.out[mark:]...)
		from.out = from.out[:mark]
	}
	f := k.flags.Load()
	ch, msg := k.ch, k.msg // scratch, reused for every event and drain
	for i := range batch {
		ev := &batch[i]
		if mark >= 0 && ev.by == from {
			if at := ev.at - 1 - mark; at > done && at <= len(tail) {
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
	}
	if cap(ch) <= 4096 {
		k.ch, k.msg = ch, msg
	}
	k.recycle(batch, keys)
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
