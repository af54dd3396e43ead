package server

// Client-side caching: CLIENT TRACKING, CACHING, GETREDIR, TRACKINGINFO and
// the invalidation messages, as Redis 7.0 does them.
//
// Design and invariants:
//   - Every shard has a tracking table (trackShard.keys: key -> IDs of the
//     clients that read it), guarded by the shard's lock like its data. Keys
//     are recorded only by read-only commands of clients with tracking on
//     (default or OPTIN/OPTOUT mode), before the command runs: a write that
//     lands between the recording and the read sends an invalidation that is
//     merely early, never one that is missed. Like Redis's table the key name
//     alone counts, whatever the database.
//   - While at least one client has tracking on, every shard has the hook
//     (shard.SetTrackHook) that the data layer calls before any key changes
//     (writes, expiry, eviction, the primary's stream). The hook only moves
//     the key's readers (and matching BCAST prefixes) to the shard's pending
//     list; whoever holds the lock delivers them before unlocking (flush):
//     the writing client (unlockKey, unlock), the expiry cron. So a client
//     that pays nothing while nobody tracks: a write checks one nil func.
//   - A tracking client switches to queued output with a writer goroutine
//     (as a subscriber does, pubsub.go) so that invalidations from other
//     clients' goroutines can be pushed to it at any time; CLIENT TRACKING
//     detaches its connection from the event loop for that. Invalidations of
//     the client's own writes are kept until its reply is written, as
//     Redis 7.0 does (tracking_pending_keys). Order: from a tracked read
//     until its batch of replies is queued, other goroutines' invalidations
//     for the client wait behind it (clientTrack.deferred), so an
//     invalidation never precedes the old value it invalidates
//     (TestTrackingNoStaleCache).
//   - With REDIRECT the message goes to the target: a RESP3 push, or for a
//     RESP2 target in Pub/Sub mode a message on __redis__:invalidate. A
//     target gone marks the redirect broken (flag R) and a RESP3 tracker gets
//     tracking-redir-broken. A RESP3 target that is neither subscribed nor
//     tracking (still on an event loop) cannot be pushed to: not delivered.
//   - Lock order: shard lock -> tracking.mu -> Server.clientsMu -> outQueue.mu.
//     Nothing takes a shard lock while holding tracking.mu.

import (
	"bytes"
	"errors"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/tidwall/redcon"

	"github.com/damselflydb/damselfly/shard"
)

// trackMode is a client's CLIENT TRACKING ON options (immutable once
// published in Client.track.mode).
type trackMode struct {
	redirect                     int64
	bcast, optin, optout, noloop bool
	prefixes                     []string
}

// clientTrack is a client's tracking state.
type clientTrack struct {
	mode   atomic.Pointer[trackMode] // nil: tracking off
	broken atomic.Bool               // the redirect target is gone
	// Touched by the client's own goroutine only:
	on      bool       // mode != nil (the dispatcher's cheap check)
	caching bool       // CLIENT CACHING YES|NO given for the next command
	own     []ownInval // invalidations of its own writes, sent after the reply
	keyBuf  [][]byte
	// Between a tracked read and the moment its reply is queued (busy),
	// invalidations from other goroutines wait in deferred: sent before the
	// reply, one could precede the old value it invalidates and the client
	// would cache that value for good. queueOutput releases them.
	pmu      sync.Mutex
	busy     bool
	deferred []byte
}

// pushInvalidation queues frame f for c, after the replies of a tracked
// read c is running.
func (c *Client) pushInvalidation(q *outQueue, f []byte) {
	c.track.pmu.Lock()
	defer c.track.pmu.Unlock()
	if c.track.busy {
		c.track.deferred = append(c.track.deferred, f...)
		return
	}
	q.push(c, f)
}

// trackReleaseDeferred runs once c's replies are queued (queueOutput).
func (c *Client) trackReleaseDeferred(q *outQueue) {
	c.track.pmu.Lock()
	if len(c.track.deferred) > 0 {
		q.push(c, c.track.deferred)
		c.track.deferred = nil
	}
	c.track.busy = false
	c.track.pmu.Unlock()
}

// ownInval is one pending invalidation for the running client: keys, or
// null (FLUSHALL) when null is set.
type ownInval struct {
	keys [][]byte
	null bool
}

// trackPend is an invalidation recorded by the hook, delivered at flush:
// to client id (a tracked key), or to client c for its BCAST prefix.
type trackPend struct {
	id     int64
	c      *Client
	prefix string
	key    string
}

// trackShard is one shard's tracking state (under the shard's lock).
type trackShard struct {
	keys map[string][]int64
	pend []trackPend
}

// tracking is the server's tracking state.
type tracking struct {
	users  atomic.Int64 // clients with tracking on
	shards []trackShard
	total  atomic.Int64 // keys in all tables
	// maxKeys is tracking-table-max-keys (0: no limit).
	maxKeys atomic.Int64

	mu       sync.Mutex
	clients  map[int64]*Client               // tracking on
	prefixes map[string]map[*Client]struct{} // BCAST prefix -> clients
	nbcast   atomic.Int64                    // len(prefixes)
}

const defaultTrackingMaxKeys = 1000000

func (s *Server) initTracking() {
	t := &s.track
	t.shards = make([]trackShard, len(s.store.Shards()))
	t.clients = map[int64]*Client{}
	t.prefixes = map[string]map[*Client]struct{}{}
	t.maxKeys.Store(defaultTrackingMaxKeys)
}

// setHooks installs or removes the change hook on every shard, depending on
// whether anyone tracks when the shard is locked (so concurrent switches
// settle on the final count). held shards (EXEC) are not locked again.
func (c *Client) setTrackHooks() {
	s := c.srv
	for _, sh := range s.store.Shards() {
		c.lockShard(sh)
		if s.track.users.Load() > 0 {
			id := sh.ID()
			sh.SetTrackHook(func(_ int, key []byte) { s.track.changed(id, key) })
		} else {
			sh.SetTrackHook(nil)
			s.track.total.Add(-int64(len(s.track.shards[sh.ID()].keys)))
			s.track.shards[sh.ID()].keys = nil
			s.track.shards[sh.ID()].pend = nil
		}
		c.unlockShard(sh)
	}
}

// changed is the shard hook: key of shard id is about to change.
func (t *tracking) changed(id int, key []byte) {
	ts := &t.shards[id]
	if ids, ok := ts.keys[string(key)]; ok {
		k := string(key)
		for _, cid := range ids {
			ts.pend = append(ts.pend, trackPend{id: cid, key: k})
		}
		delete(ts.keys, k)
		t.total.Add(-1)
	}
	if t.nbcast.Load() > 0 {
		t.mu.Lock()
		for p, set := range t.prefixes {
			if bytes.HasPrefix(key, []byte(p)) {
				for tc := range set {
					ts.pend = append(ts.pend, trackPend{c: tc, prefix: p, key: string(key)})
				}
			}
		}
		t.mu.Unlock()
	}
}

// trackFlush delivers what the hook recorded in sh (locked by the caller)
// while from (nil: the server itself) held it.
func (s *Server) trackFlush(sh *shard.Shard, from *Client) {
	if s.track.shards == nil {
		return
	}
	ts := &s.track.shards[sh.ID()]
	if len(ts.pend) == 0 {
		return
	}
	pend := ts.pend
	ts.pend = nil
	s.deliverPending(pend, from)
}

// trackFlushSet is trackFlush for every shard of set.
func (s *Server) trackFlushSet(set *shard.Set, from *Client) {
	shards := s.store.Shards()
	for _, id := range set.IDs() {
		s.trackFlush(shards[id], from)
	}
}

func (s *Server) deliverPending(pend []trackPend, from *Client) {
	t := &s.track
	type bkey struct {
		c      *Client
		prefix string
	}
	var bcast map[bkey][][]byte
	var order []bkey
	t.mu.Lock()
	for _, p := range pend {
		if p.c != nil {
			m := p.c.track.mode.Load()
			if m == nil || !m.bcast || (m.noloop && p.c == from) {
				continue
			}
			k := bkey{p.c, p.prefix}
			if bcast == nil {
				bcast = map[bkey][][]byte{}
			}
			if _, ok := bcast[k]; !ok {
				order = append(order, k)
			}
			bcast[k] = append(bcast[k], []byte(p.key))
			continue
		}
		tc := t.clients[p.id]
		if tc == nil {
			continue
		}
		m := tc.track.mode.Load()
		if m == nil || m.bcast || (m.noloop && tc == from) {
			continue
		}
		keys := [][]byte{[]byte(p.key)}
		if tc == from && m.redirect == 0 {
			from.track.own = append(from.track.own, ownInval{keys: keys})
			continue
		}
		s.sendInvalidation(tc, m, keys, false)
	}
	for _, k := range order {
		m := k.c.track.mode.Load()
		if k.c == from && m.redirect == 0 {
			from.track.own = append(from.track.own, ownInval{keys: bcast[k]})
			continue
		}
		s.sendInvalidation(k.c, m, bcast[k], false)
	}
	t.mu.Unlock()
}

// sendInvalidation sends keys (or null) to tracking client tc or its
// redirect target, from any goroutine but tc's own.
func (s *Server) sendInvalidation(tc *Client, m *trackMode, keys [][]byte, null bool) {
	dst := tc
	if m.redirect != 0 {
		s.clientsMu.Lock()
		dst = s.clients[m.redirect]
		s.clientsMu.Unlock()
		if dst == nil {
			tc.track.broken.Store(true)
			if q := tc.view.outq.Load(); q != nil && q.proto.Load() == 3 {
				b := append([]byte(">2\r\n"), "$21\r\ntracking-redir-broken\r\n:"...)
				b = strconv.AppendInt(b, m.redirect, 10)
				q.push(tc, append(b, '\r', '\n'))
			}
			return
		}
	}
	q := dst.view.outq.Load()
	if q == nil {
		return // on an event loop, neither tracking nor subscribed: see the package doc
	}
	trackerProto := int(tc.view.proto.Load())
	if f := invalidationFrame(int(q.proto.Load()), m.redirect != 0 && dst.subscribed(), trackerProto, keys, null); f != nil {
		dst.pushInvalidation(q, f)
	}
}

// invalidationFrame encodes an invalidation for a connection speaking
// proto; asMessage allows the RESP2 form (a message on __redis__:invalidate
// to a subscribed redirect target). nil: the connection cannot receive it.
func invalidationFrame(proto int, asMessage bool, trackerProto int, keys [][]byte, null bool) []byte {
	var b []byte
	switch {
	case proto == 3:
		b = append(b, ">2\r\n$10\r\ninvalidate\r\n"...)
	case asMessage:
		b = append(b, "*3\r\n$7\r\nmessage\r\n$20\r\n__redis__:invalidate\r\n"...)
	default:
		return nil
	}
	if null {
		// Redis writes the tracking client's null, whatever the target speaks.
		if trackerProto == 3 {
			return append(b, "_\r\n"...)
		}
		return append(b, "$-1\r\n"...)
	}
	b = redcon.AppendArray(b, len(keys))
	for _, k := range keys {
		b = redcon.AppendBulk(b, k)
	}
	return b
}

// trackBefore runs before each command of a tracking client (execute,
// EXEC's queued commands, a script's redis.call): a read-only command
// records its keys for the client.
func (c *Client) trackBefore(cmd *command, args [][]byte) {
	m := c.track.mode.Load()
	if m == nil || m.bcast || (m.optin && !c.track.caching) || (m.optout && c.track.caching) {
		return
	}
	if !cmd.hasFlag("readonly") || cmd.group == "pubsub" {
		return
	}
	switch cmd.name {
	case "eval_ro", "evalsha_ro", "fcall_ro":
		return // the script's own reads are recorded instead
	}
	caller := c
	c.track.pmu.Lock()
	c.track.busy = true
	c.track.pmu.Unlock()
	keys := cmd.appendKeys(c.track.keyBuf[:0], args)
	c.track.keyBuf = keys[:0]
	t := &c.srv.track
	for _, k := range keys {
		sh, _ := c.srv.store.ShardOf(k)
		c.lockShard(sh)
		ts := &t.shards[sh.ID()]
		if ts.keys == nil {
			ts.keys = map[string][]int64{}
		}
		ids, ok := ts.keys[string(k)]
		if !ok {
			t.total.Add(1)
		}
		dup := false
		for _, id := range ids {
			if id == caller.id {
				dup = true
				break
			}
		}
		if !dup {
			ts.keys[string(k)] = append(ids, caller.id)
		}
		c.unlockShard(sh)
	}
}

// trackAfter runs after each top-level command of a tracking client: it
// sends the invalidations of its own writes (after the reply, as Redis
// does) and forgets CLIENT CACHING unless it was that command or a
// transaction is being queued.
func (c *Client) trackAfter(cmd *command) {
	if len(c.track.own) > 0 {
		for _, o := range c.track.own {
			if f := invalidationFrame(c.proto, false, c.proto, o.keys, o.null); f != nil {
				c.out = append(c.out, f...)
			}
		}
		c.track.own = c.track.own[:0]
	}
	if c.track.caching && c.sess.tx == nil && (cmd.parent == nil || cmd.parent.name != "client") && cmd.name != "client" {
		c.track.caching = false
	}
}

// trackFlushed sends the null invalidation of FLUSHDB/FLUSHALL to every
// tracking client and empties the tables (every shard held by c).
func (c *Client) trackFlushed() { c.srv.trackInvalidateAll(c) }

// trackInvalidateAll is trackFlushed for any replacement of the dataset
// (FLUSHDB, FLUSHALL, DEBUG RELOAD, a replica's full sync), as Redis's
// emptyData does; from (nil: the server) is the client running it. Every
// shard is held by the caller.
func (s *Server) trackInvalidateAll(c *Client) {
	if s.track.users.Load() == 0 {
		return
	}
	for i := range s.track.shards {
		s.track.shards[i].keys = nil
	}
	s.track.total.Store(0)
	t := &s.track
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, tc := range t.clients {
		m := tc.track.mode.Load()
		if m == nil {
			continue
		}
		if tc == c && m.redirect == 0 {
			c.track.own = append(c.track.own, ownInval{null: true})
			continue
		}
		s.sendInvalidation(tc, m, nil, true)
	}
}

// trackCron delivers what writers that do not flush left (memcached,
// loading) and applies tracking-table-max-keys.
func (s *Server) trackCron() {
	if s.track.users.Load() == 0 {
		return
	}
	for _, sh := range s.store.Shards() {
		sh.Lock()
		s.trackFlush(sh, nil)
		sh.Unlock()
	}
	s.trackLimit()
}

// trackLimit evicts tracked keys (sending their invalidations) while the
// tables hold more than tracking-table-max-keys (the cron calls it).
func (s *Server) trackLimit() {
	t := &s.track
	maxKeys := t.maxKeys.Load()
	if t.users.Load() == 0 || maxKeys <= 0 || t.total.Load() <= maxKeys {
		return
	}
	for _, sh := range s.store.Shards() {
		sh.Lock()
		ts := &t.shards[sh.ID()]
		for k := range ts.keys { // map order is random enough (Redis walks randomly)
			if t.total.Load() <= maxKeys {
				break
			}
			t.changed(sh.ID(), []byte(k))
		}
		s.trackFlush(sh, nil)
		sh.Unlock()
		if t.total.Load() <= maxKeys {
			return
		}
	}
}

// trackOff disables tracking for c (CLIENT TRACKING OFF, RESET, disconnect).
func (c *Client) trackOff() {
	m := c.track.mode.Load()
	if m == nil {
		return
	}
	t := &c.srv.track
	t.mu.Lock()
	delete(t.clients, c.id)
	for _, p := range m.prefixes {
		if set := t.prefixes[p]; set != nil {
			delete(set, c)
			if len(set) == 0 {
				delete(t.prefixes, p)
			}
		}
	}
	t.nbcast.Store(int64(len(t.prefixes)))
	c.track.mode.Store(nil)
	c.track.on = false
	c.track.broken.Store(false)
	c.track.caching = false
	t.mu.Unlock()
	if t.users.Add(-1) == 0 {
		c.setTrackHooks()
	}
}

func prefixOverlap(a, b string) bool {
	return strings.HasPrefix(a, b) || strings.HasPrefix(b, a)
}

// clientTracking is CLIENT TRACKING ON|OFF [REDIRECT id] [PREFIX p ...]
// [BCAST] [OPTIN] [OPTOUT] [NOLOOP].
func (c *Client) clientTracking(args [][]byte) {
	m, prefixes, ok := c.parseTrackingOptions(args)
	if !ok {
		return
	}
	switch {
	case eq(args[2], "on"):
	case eq(args[2], "off"):
		c.trackOff()
		c.ok()
		return
	default:
		c.errSyntax()
		return
	}
	old := c.track.mode.Load()
	if msg := trackModeConflict(&m, old, prefixes); msg != "" {
		c.err(msg)
		return
	}
	if m.bcast {
		// Redis adds to the prefixes already registered; no prefix at all
		// means every key.
		if old != nil {
			m.prefixes = append(m.prefixes, old.prefixes...)
		}
		m.prefixes = append(m.prefixes, prefixes...)
		if len(m.prefixes) == 0 {
			m.prefixes = []string{""}
		}
	}
	c.trackOn(&m, old)
	c.ok()
}

// parseTrackingOptions parses CLIENT TRACKING's options after ON|OFF; the
// PREFIX arguments are returned apart from the mode.
func (c *Client) parseTrackingOptions(args [][]byte) (m trackMode, prefixes []string, ok bool) {
	for j := 3; j < len(args); j++ {
		more := len(args) - 1 - j
		switch {
		case eq(args[j], "redirect") && more > 0:
			j++
			if m.redirect != 0 {
				c.err("ERR A client can only redirect to a single other client")
				return m, nil, false
			}
			id, ok := parseInt(args[j])
			if !ok {
				c.errNotInteger()
				return m, nil, false
			}
			c.srv.clientsMu.Lock()
			target := c.srv.clients[id]
			c.srv.clientsMu.Unlock()
			if target == nil {
				c.err("ERR The client ID you want redirect to does not exist")
				return m, nil, false
			}
			m.redirect = id
		case eq(args[j], "bcast"):
			m.bcast = true
		case eq(args[j], "optin"):
			m.optin = true
		case eq(args[j], "optout"):
			m.optout = true
		case eq(args[j], "noloop"):
			m.noloop = true
		case eq(args[j], "prefix") && more > 0:
			j++
			prefixes = append(prefixes, string(args[j]))
		default:
			c.errSyntax()
			return m, nil, false
		}
	}
	return m, prefixes, true
}

// trackModeConflict is Redis's error for a mode m that cannot replace the
// client's current mode old (nil: tracking is off) or whose new prefixes
// overlap, or "" when m is acceptable.
func trackModeConflict(m, old *trackMode, prefixes []string) string {
	if !m.bcast && len(prefixes) > 0 {
		return "ERR PREFIX option requires BCAST mode to be enabled"
	}
	if old != nil && old.bcast != m.bcast {
		return "ERR You can't switch BCAST mode on/off before disabling tracking for this client, and then re-enabling it with a different mode."
	}
	if m.bcast && (m.optin || m.optout) {
		return "ERR OPTIN and OPTOUT are not compatible with BCAST"
	}
	if m.optin && m.optout {
		return "ERR You can't specify both OPTIN mode and OPTOUT mode"
	}
	if old != nil && (m.optin && old.optout || m.optout && old.optin) {
		return "ERR You can't switch OPTIN/OPTOUT mode before disabling tracking for this client, and then re-enabling it with a different mode."
	}
	if !m.bcast {
		return ""
	}
	for i, p := range prefixes {
		if old != nil {
			for _, q := range old.prefixes {
				if prefixOverlap(q, p) {
					return "ERR Prefix '" + p + "' overlaps with an existing prefix '" + q + "'. Prefixes for a single client must not overlap."
				}
			}
		}
		for _, q := range prefixes[i+1:] {
			if prefixOverlap(p, q) {
				return "ERR Prefix '" + p + "' overlaps with another provided prefix '" + q + "'. Prefixes for a single client must not overlap."
			}
		}
	}
	return ""
}

// trackOn installs mode m (replacing old, nil when tracking was off) and
// registers the client under its broadcast prefixes.
func (c *Client) trackOn(m, old *trackMode) {
	c.startAsync() // invalidations arrive from other goroutines (the package doc)
	t := &c.srv.track
	t.mu.Lock()
	t.clients[c.id] = c
	for _, p := range m.prefixes {
		set := t.prefixes[p]
		if set == nil {
			set = map[*Client]struct{}{}
			t.prefixes[p] = set
		}
		set[c] = struct{}{}
	}
	t.nbcast.Store(int64(len(t.prefixes)))
	c.track.mode.Store(m)
	c.track.on = true
	c.track.broken.Store(false)
	t.mu.Unlock()
	if old == nil && t.users.Add(1) == 1 {
		c.setTrackHooks()
	}
}

// clientCaching is CLIENT CACHING YES|NO.
func (c *Client) clientCaching(args [][]byte) {
	m := c.track.mode.Load()
	if m == nil {
		c.err("ERR CLIENT CACHING can be called only when the client is in tracking mode with OPTIN or OPTOUT mode enabled")
		return
	}
	switch {
	case eq(args[2], "yes"):
		if !m.optin {
			c.err("ERR CLIENT CACHING YES is only valid when tracking is enabled in OPTIN mode.")
			return
		}
	case eq(args[2], "no"):
		if !m.optout {
			c.err("ERR CLIENT CACHING NO is only valid when tracking is enabled in OPTOUT mode.")
			return
		}
	default:
		c.errSyntax()
		return
	}
	c.track.caching = true
	c.ok()
}

// clientTrackingInfo is CLIENT TRACKINGINFO.
func (c *Client) clientTrackingInfo() {
	m := c.track.mode.Load()
	flags := []string{"off"}
	redirect := int64(-1)
	var prefixes []string
	if m != nil {
		flags[0] = "on"
		if m.bcast {
			flags = append(flags, "bcast")
		}
		if m.optin {
			flags = append(flags, "optin")
			if c.track.caching {
				flags = append(flags, "caching-yes")
			}
		}
		if m.optout {
			flags = append(flags, "optout")
			if c.track.caching {
				flags = append(flags, "caching-no")
			}
		}
		if m.noloop {
			flags = append(flags, "noloop")
		}
		if c.track.broken.Load() {
			flags = append(flags, "broken_redirect")
		}
		redirect = m.redirect
		if m.bcast {
			prefixes = slices.Clone(m.prefixes)
			slices.Sort(prefixes) // Redis lists its radix tree's order
		}
	}
	c.mapHeader(3)
	c.bulkString("flags")
	c.setHeader(len(flags))
	for _, f := range flags {
		c.bulkString(f)
	}
	c.bulkString("redirect")
	c.int(redirect)
	c.bulkString("prefixes")
	c.array(len(prefixes))
	for _, p := range prefixes {
		c.bulkString(p)
	}
}

// trackListFields are CLIENT LIST's tracking flags (t R B) and redir.
func (c *Client) trackListFlags(f []byte) []byte {
	if m := c.track.mode.Load(); m != nil {
		f = append(f, 't')
		if c.track.broken.Load() {
			f = append(f, 'R')
		}
		if m.bcast {
			f = append(f, 'B')
		}
	}
	return f
}

func (c *Client) trackRedir() int64 {
	if m := c.track.mode.Load(); m != nil {
		return m.redirect
	}
	return -1
}

// trackingParams is tracking-table-max-keys.
func trackingParams(m map[string]configParam) {
	m["tracking-table-max-keys"] = configParam{
		get: func(s *Server) string { return strconv.FormatInt(s.track.maxKeys.Load(), 10) },
		set: func(s *Server, v string) error {
			n, ok := parseInt([]byte(v))
			if !ok {
				return errors.New("argument couldn't be parsed into an integer")
			}
			if n < 0 {
				return errors.New("argument must be between 0 and 9223372036854775807 inclusive")
			}
			s.track.maxKeys.Store(n)
			return nil
		},
	}
}

// infoTrackingStats adds INFO stats' tracking fields (Redis 7.0's names;
// items counts one per key, as every key records its readers together).
func (s *Server) infoTrackingStats(field func(string, any)) {
	field("tracking_total_keys", s.track.total.Load())
	field("tracking_total_items", s.track.total.Load())
	field("tracking_total_prefixes", s.track.nbcast.Load())
}
