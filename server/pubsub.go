package server

// Pub/Sub: SUBSCRIBE/PSUBSCRIBE/SSUBSCRIBE, their UNSUBSCRIBEs, PUBLISH,
// SPUBLISH and PUBSUB.
//
// Design and invariants:
//   - The registry is package pubsub's (its doc has the invariants): it
//     maps channels, patterns and shard channels to subscribers under its
//     own RWMutex and never takes a shard lock, so PUBLISH from a script or
//     EXEC (which hold shard locks) cannot deadlock. This file keeps the
//     connection side: confirmations and message frames (RESP2 arrays or
//     RESP3 pushes), the outbound queue and the output limits. Everything
//     that publishes (PUBLISH, SPUBLISH, scripts, keyspace notifications)
//     goes through Server.publish.
//   - A connection normally writes its replies itself, synchronously. The
//     first time it subscribes it switches to an outbound queue (outQueue)
//     drained by a writer goroutine of its own; from then on both its command
//     replies and messages published by other goroutines are appended to the
//     queue, so PUBLISH never waits for a subscriber's socket.
//   - Order: a (un)subscribe confirmation is queued while the registry is
//     held exclusively, after everything the connection replied before, so a
//     message for a channel always follows its confirmation. A client
//     publishing to itself (RESP3) gets the message in its own reply buffer,
//     before the PUBLISH reply, as in Redis.
//   - A subscriber whose queued output passes client-output-buffer-limit
//     for the pubsub class (hard 32 MB, or over the soft 8 MB for 60 s) is
//     disconnected instead of growing memory.

import (
	"errors"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tidwall/redcon"

	"github.com/damselflydb/damselfly/pubsub"
)

func registerPubSub(reg registrar) {
	reg("subscribe", -2, "pubsub|noscript|loading|stale|x-detach|x-no-data|x-pubsub-context", 0, 0, 0, "pubsub", func(c *Client, a [][]byte) { c.subscribe(kindChannel, a[1:]) })
	reg("psubscribe", -2, "pubsub|noscript|loading|stale|x-detach|x-no-data|x-pubsub-context", 0, 0, 0, "pubsub", func(c *Client, a [][]byte) { c.subscribe(kindPattern, a[1:]) })
	reg("ssubscribe", -2, "pubsub|noscript|loading|stale|x-detach|x-pubsub-context", 1, -1, 1, "pubsub", func(c *Client, a [][]byte) { c.subscribe(kindShard, a[1:]) })
	reg("unsubscribe", -1, "pubsub|noscript|loading|stale|x-no-data|x-pubsub-context", 0, 0, 0, "pubsub", func(c *Client, a [][]byte) { c.unsubscribe(kindChannel, a[1:]) })
	reg("punsubscribe", -1, "pubsub|noscript|loading|stale|x-no-data|x-pubsub-context", 0, 0, 0, "pubsub", func(c *Client, a [][]byte) { c.unsubscribe(kindPattern, a[1:]) })
	reg("sunsubscribe", -1, "pubsub|noscript|loading|stale|x-pubsub-context", 1, -1, 1, "pubsub", func(c *Client, a [][]byte) { c.unsubscribe(kindShard, a[1:]) })
	reg("publish", 3, "pubsub|loading|stale|fast|may_replicate|x-no-data", 0, 0, 0, "pubsub", cmdPublish)
	reg("spublish", 3, "pubsub|loading|stale|fast|may_replicate", 1, 1, 1, "pubsub", cmdSPublish)
	reg("pubsub", -2, "x-no-data", 0, 0, 0, "pubsub", cmdPubSub)
	reg("pubsub|channels", -2, "pubsub|loading|stale", 0, 0, 0, "pubsub", cmdPubSub)
	reg("pubsub|shardchannels", -2, "pubsub|loading|stale", 0, 0, 0, "pubsub", cmdPubSub)
	reg("pubsub|numsub", -2, "pubsub|loading|stale", 0, 0, 0, "pubsub", cmdPubSub)
	reg("pubsub|shardnumsub", -2, "pubsub|loading|stale", 0, 0, 0, "pubsub", cmdPubSub)
	reg("pubsub|numpat", 2, "pubsub|loading|stale", 0, 0, 0, "pubsub", cmdPubSub)
	reg("pubsub|help", 2, "loading|stale", 0, 0, 0, "pubsub", cmdPubSub)
}

type subKind = pubsub.Kind

const (
	kindChannel = pubsub.Channel
	kindPattern = pubsub.Pattern
	kindShard   = pubsub.Shard
)

var (
	subVerb   = [3]string{"subscribe", "psubscribe", "ssubscribe"}
	unsubVerb = [3]string{"unsubscribe", "punsubscribe", "sunsubscribe"}
)

// pubsubRegistry holds every subscription of the server (package pubsub).
type pubsubRegistry = pubsub.Registry[*Client]

func newPubSubRegistry() *pubsubRegistry { return pubsub.NewRegistry[*Client]() }

// clientSubs is a connection's subscriptions, embedded in its session;
// its Owner is set on the first subscription.
type clientSubs = pubsub.Subscriber[*Client]

// subscribed reports whether the connection is in Pub/Sub mode.
func (c *Client) subscribed() bool { return c.sess.subs.Subscribed() }

func (c *Client) subscribe(k subKind, names [][]byte) {
	c.startAsync()
	if c.sess.subs.Owner == nil {
		c.sess.subs.Owner = c
	}
	c.srv.pubsub.Subscribe(&c.sess.subs, k, names, func(name []byte, count int) {
		c.pubsubConfirm(subVerb[k], name, count)
	})
}

func (c *Client) unsubscribe(k subKind, names [][]byte) {
	c.srv.pubsub.Unsubscribe(&c.sess.subs, k, names, func(name []byte, count int) {
		c.pubsubConfirm(unsubVerb[k], name, count)
	})
}

// pubsubConfirm queues an (un)subscribe confirmation (the registry is
// held, so it precedes every message on name); a nil name is a null.
func (c *Client) pubsubConfirm(verb string, name []byte, count int) {
	c.pushHeader(3)
	c.bulkString(verb)
	if name == nil {
		c.null()
	} else {
		c.bulk(name)
	}
	c.int(int64(count))
	c.flushToQueue()
}

// unsubscribeAll drops every subscription silently (disconnect, RESET).
func (c *Client) unsubscribeAll() { c.srv.pubsub.UnsubscribeAll(&c.sess.subs) }

func cmdPublish(c *Client, args [][]byte) {
	c.int(c.srv.publish(c, kindChannel, args[1], args[2]))
}

func cmdSPublish(c *Client, args [][]byte) {
	c.int(c.srv.publish(c, kindShard, args[1], args[2]))
}

// pushFrames encodes one message for each protocol on first use, so a
// fan-out encodes it at most twice.
type pushFrames struct {
	verb         string
	pattern      []byte // nil: not a pattern message
	channel, msg []byte
	frames       [2][]byte // RESP2, RESP3
}

func (f *pushFrames) frame(proto int) []byte {
	i := 0
	if proto == 3 {
		i = 1
	}
	if f.frames[i] == nil {
		f.frames[i] = appendPush(make([]byte, 0, 64+len(f.pattern)+len(f.channel)+len(f.msg)), proto, f.verb, f.pattern, f.channel, f.msg)
	}
	return f.frames[i]
}

// publish delivers msg to the subscribers of channel (and, for ordinary
// channels, to matching patterns) and returns how many received it. from is
// the publishing client (nil when the server publishes).
func (s *Server) publish(from *Client, k subKind, channel, msg []byte) int64 {
	direct := pushFrames{verb: "message", channel: channel, msg: msg}
	if k == kindShard {
		direct.verb = "smessage"
	}
	var byPattern pushFrames // the current pattern's frames: deliveries come pattern by pattern
	n := s.pubsub.Publish(k, channel, func(sub *clientSubs, pattern []byte) {
		if pattern == nil {
			sub.Owner.deliver(from, &direct)
			return
		}
		if byPattern.pattern == nil || string(byPattern.pattern) != string(pattern) {
			byPattern = pushFrames{verb: "pmessage", pattern: pattern, channel: channel, msg: msg}
		}
		sub.Owner.deliver(from, &byPattern)
	})
	return int64(n)
}

// appendPush encodes a message push: [verb, pattern?, channel, msg].
func appendPush(b []byte, proto int, verb string, pattern, channel, msg []byte) []byte {
	n := 3
	if pattern != nil {
		n = 4
	}
	if proto == 3 {
		b = append(b, '>')
		b = strconv.AppendInt(b, int64(n), 10)
		b = append(b, '\r', '\n')
	} else {
		b = redcon.AppendArray(b, n)
	}
	b = redcon.AppendBulkString(b, verb)
	if pattern != nil {
		b = redcon.AppendBulk(b, pattern)
	}
	b = redcon.AppendBulk(b, channel)
	return redcon.AppendBulk(b, msg)
}

// deliver hands a message to subscriber t (registry held shared).
func (t *Client) deliver(from *Client, f *pushFrames) {
	if t == from && !t.sess.inScript {
		// Our own goroutine: keep the order of our replies.
		t.out = append(t.out, f.frame(t.proto)...)
		return
	}
	q := t.sess.outq
	if q == nil {
		return
	}
	q.push(t, f.frame(int(q.proto.Load())))
}

func cmdPubSub(c *Client, args [][]byte) {
	sub := lower(args[1])
	r := c.srv.pubsub
	switch sub {
	case "channels", "shardchannels":
		if len(args) > 3 {
			c.err("ERR unknown subcommand or wrong number of arguments for '" + sanitize(args[1], 128) + "'. Try PUBSUB HELP.")
			return
		}
		k := kindChannel
		if sub == "shardchannels" {
			k = kindShard
		}
		var pat []byte
		if len(args) == 3 {
			pat = args[2]
		}
		names := r.Channels(k, pat)
		c.array(len(names))
		for _, n := range names {
			c.bulkString(n)
		}
	case "numsub", "shardnumsub":
		k := kindChannel
		if sub == "shardnumsub" {
			k = kindShard
		}
		c.mapHeader(len(args) - 2)
		for _, ch := range args[2:] {
			c.bulk(ch)
			c.int(int64(r.NumSub(k, ch)))
		}
	case "numpat":
		if len(args) != 2 {
			c.err("ERR wrong number of arguments for 'pubsub|" + sub + "' command")
			return
		}
		c.int(int64(r.NumPat()))
	case "help":
		c.pubsubHelp()
	default:
		c.err("ERR unknown subcommand '" + sanitize(args[1], 128) + "'. Try PUBSUB HELP.")
	}
}

func (c *Client) pubsubHelp() {
	lines := []string{
		"PUBSUB <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
		"CHANNELS [<pattern>]",
		"    Return the currently active channels matching a <pattern> (default: '*').",
		"NUMPAT",
		"    Return number of subscriptions to patterns.",
		"NUMSUB [<channel> ...]",
		"    Return the number of subscribers for the specified channels, excluding",
		"    pattern subscriptions(default: no channels).",
		"SHARDCHANNELS [<pattern>]",
		"    Return the currently active shard level channels matching a <pattern> (default: '*').",
		"SHARDNUMSUB [<shardchannel> ...]",
		"    Return the number of subscribers for the specified shard level channel(s)",
		"HELP",
		"    Prints this help.",
	}
	c.array(len(lines))
	for _, l := range lines {
		c.simple(l)
	}
}

// pubsubCounts reports the INFO fields pubsub_channels and pubsub_patterns.
func (s *Server) pubsubCounts() (channels, patterns int) {
	channels, patterns, _ = s.pubsub.Counts()
	return channels, patterns
}

// rejectInPubSub answers a command a RESP2 subscriber may not run.
func (c *Client) rejectInPubSub(cmd *command, args [][]byte) bool {
	if c.proto != 2 || !c.subscribed() || cmd.pubsubContext {
		return false
	}
	c.err("ERR Can't execute '" + cmd.name + "': only (P|S)SUBSCRIBE / (P|S)UNSUBSCRIBE / PING / QUIT / RESET are allowed in this context")
	return true
}

// ---- outbound queue ----

// outLimit is one client class's output buffer limit.
type outLimit struct {
	hard, soft int64
	softSecs   int64
}

// outLimits are the client-output-buffer-limit classes.
type outLimits struct {
	normal, replica, pubsub outLimit
}

var defaultOutLimits = outLimits{
	replica: outLimit{hard: 256 << 20, soft: 64 << 20, softSecs: 60},
	pubsub:  outLimit{hard: 32 << 20, soft: 8 << 20, softSecs: 60},
}

func (l *outLimits) String() string {
	f := func(name string, o outLimit) string {
		return name + " " + strconv.FormatInt(o.hard, 10) + " " + strconv.FormatInt(o.soft, 10) + " " + strconv.FormatInt(o.softSecs, 10)
	}
	return f("normal", l.normal) + " " + f("slave", l.replica) + " " + f("pubsub", l.pubsub)
}

// parseOutLimits applies a CONFIG SET value ("class hard soft secs"...)
// to a copy of cur.
func parseOutLimits(cur outLimits, v string) (outLimits, error) {
	f := strings.Fields(v)
	if len(f)%4 != 0 || len(f) == 0 {
		return cur, errors.New("Wrong number of arguments in buffer limit configuration.")
	}
	for i := 0; i < len(f); i += 4 {
		hard, err1 := ParseMemory(f[i+1])
		soft, err2 := ParseMemory(f[i+2])
		secs, err3 := strconv.ParseInt(f[i+3], 10, 64)
		if err1 != nil || err2 != nil || err3 != nil || secs < 0 {
			return cur, errors.New("Error in hard, soft or soft_seconds setting in buffer limit configuration.")
		}
		o := outLimit{hard: hard, soft: soft, softSecs: secs}
		switch strings.ToLower(f[i]) {
		case "normal":
			cur.normal = o
		case "slave", "replica":
			cur.replica = o
		case "pubsub":
			cur.pubsub = o
		default:
			return cur, errors.New("Invalid client class specified in buffer limit configuration.")
		}
	}
	return cur, nil
}

func outLimitParam() configParam {
	return configParam{
		get: func(s *Server) string { return s.outLimits.Load().String() },
		set: func(s *Server, v string) error {
			l, err := parseOutLimits(*s.outLimits.Load(), v)
			if err == nil {
				s.outLimits.Store(&l)
				s.repl.SetOutputLimits(l.replica.forReplication())
			}
			return err
		},
	}
}

// outQueue is a subscribed connection's pending output and its writer.
type outQueue struct {
	mu        sync.Mutex
	buf       []byte // queued, not yet taken by the writer
	spare     []byte
	inflight  int       // bytes the writer is writing now
	softSince time.Time // when the output first went over the soft limit
	dead      bool
	wake      chan struct{}
	done      chan struct{}
	exited    chan struct{}
	proto     atomic.Int32 // the connection's protocol, for pushes
	monitor   atomic.Bool  // a MONITOR's queue: the normal class's limit (monitor.go)
}

// startAsync switches the connection to queued output with a writer
// goroutine (first subscription).
func (c *Client) startAsync() {
	if c.sess.outq != nil {
		c.sess.outq.proto.Store(int32(c.proto))
		return
	}
	q := &outQueue{wake: make(chan struct{}, 1), done: make(chan struct{}), exited: make(chan struct{})}
	q.proto.Store(int32(c.proto))
	c.sess.outq = q
	c.view.outq.Store(q)
	go q.writer(c)
	c.flushToQueue()
}

// flushToQueue moves the reply buffer to the queue.
func (c *Client) flushToQueue() {
	if len(c.out) == 0 || c.sess.outq == nil {
		return
	}
	c.sess.outq.push(c, c.out) // copies
	if cap(c.out) > keepOutBytes {
		c.releaseOut()
		c.out = nil
	} else {
		c.out = c.out[:0]
	}
}

// queueOutput is the serve loop's write for a connection in queued mode;
// false means the connection is finished.
func (c *Client) queueOutput() bool {
	q := c.sess.outq
	q.proto.Store(int32(c.proto))
	c.flushToQueue()
	c.trackReleaseDeferred(q) // tracking.go: invalidations held back behind a tracked read's reply
	q.mu.Lock()
	dead := q.dead
	q.mu.Unlock()
	return !dead
}

// push appends b unless that passes the pubsub output limit, in which case
// the client is disconnected.
// pending is how many bytes wait to be written (CLIENT LIST omem).
func (q *outQueue) pending() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return len(q.buf) + q.inflight
}

func (q *outQueue) push(c *Client, b []byte) {
	lim := c.srv.outLimits.Load().pubsub
	if q.monitor.Load() {
		lim = c.srv.monitorLimit()
	}
	q.mu.Lock()
	if q.dead {
		q.mu.Unlock()
		return
	}
	size := int64(len(q.buf) + q.inflight + len(b))
	over := false
	if lim.hard > 0 && size > lim.hard {
		over = true
	} else if lim.soft > 0 && size > lim.soft {
		now := time.Now()
		if q.softSince.IsZero() {
			q.softSince = now
		} else if now.Sub(q.softSince) >= time.Duration(lim.softSecs)*time.Second {
			over = true
		}
	} else {
		q.softSince = time.Time{}
	}
	if over {
		q.dead = true
		q.buf, q.spare = nil, nil
		q.mu.Unlock()
		c.srv.log.Warn("client closed for overcoming of output buffer limits", "client", c.id, "addr", c.addr, "class", "pubsub", "bytes", size)
		c.kill()
		return
	}
	q.buf = append(q.buf, b...)
	q.mu.Unlock()
	select {
	case q.wake <- struct{}{}:
	default:
	}
}

func (q *outQueue) writer(c *Client) {
	defer close(q.exited)
	for {
		select {
		case <-q.wake:
		case <-q.done:
			_ = c.nc.SetWriteDeadline(time.Now().Add(2 * time.Second))
			q.drain(c)
			return
		}
		if !q.drain(c) {
			return
		}
	}
}

// drain writes everything queued; false when the connection failed.
func (q *outQueue) drain(c *Client) bool {
	for {
		q.mu.Lock()
		if q.dead || len(q.buf) == 0 {
			q.mu.Unlock()
			return !q.dead
		}
		out := q.buf
		q.buf, q.spare = q.spare[:0], nil
		q.inflight = len(out)
		q.mu.Unlock()
		n, err := c.nc.Write(out)
		c.netWrote(n) // netstats.go
		q.mu.Lock()
		q.inflight = 0
		if cap(out) <= keepOutBytes {
			q.spare = out[:0]
		}
		if err != nil {
			q.dead = true
			q.buf = nil
		}
		q.mu.Unlock()
		if err != nil {
			c.kill()
			return false
		}
	}
}

// stop flushes what is queued (bounded by a deadline) and ends the writer.
func (q *outQueue) stop() {
	close(q.done)
	<-q.exited
}
