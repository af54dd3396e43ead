package server

// CLIENT's administrative subcommands: PAUSE/UNPAUSE, NO-EVICT, NO-TOUCH,
// SETINFO, KILL with every filter, LIST TYPE/ID, and the client-side
// caching ones (tracking.go), with Redis 7.0's replies and errors (7.2's for
// NO-TOUCH and SETINFO, 7.4's for KILL MAXAGE).
//
// CLIENT PAUSE design and invariants:
//   - The pause (kind and end time) is two atomics read by the dispatcher
//     once per command: one load when no pause is in force.
//   - A paused command never blocks an event loop: a loop-owned client is
//     detached and its own goroutine waits (until the end, UNPAUSE, or a
//     longer pause's end), as for a busy script.
//   - Like Redis, WRITE pauses commands flagged write or may_replicate
//     (EVAL, FCALL, PUBLISH...) and EXEC of such; ALL pauses every command.
//     Either way keys stop expiring (lookups report them missing but keep
//     them; the cron deletes nothing) and eviction stops, so the dataset
//     stays constant; both resume when the pause ends.

import (
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/damselflydb/damselfly/shard"
)

const (
	pauseOff   = 0
	pauseWrite = 1
	pauseAll   = 2
)

// pauseState is the CLIENT PAUSE in force.
type pauseState struct {
	kind atomic.Int32 // pauseOff, pauseWrite, pauseAll
	end  atomic.Int64 // unix ms

	mu      sync.Mutex
	changed chan struct{} // closed when the pause is lifted or changed
	timer   *time.Timer
}

// clientAdmin is a connection's CLIENT switches. noEvict, noTouch, libName
// and libVer are written by the client's goroutine and read by CLIENT
// LIST through atomics.
type clientAdmin struct {
	noEvict atomic.Bool
	noTouch atomic.Bool
	lib     atomic.Pointer[[2]string] // lib-name, lib-ver
	// skipTouch: the running command must not update access times
	// (NO-TOUCH, and the command is not TOUCH); own goroutine only.
	skipTouch bool
}

// initClientFeatures prepares tracking, pause and the config file.
func (s *Server) initClientFeatures(cfg Config) {
	s.initTracking()
	switch {
	case cfg.TrackingTableMaxKeys > 0:
		s.track.maxKeys.Store(cfg.TrackingTableMaxKeys)
	case cfg.TrackingTableMaxKeys < 0:
		s.track.maxKeys.Store(0)
	}
	s.pause.changed = make(chan struct{})
	s.confFile = cfg.ConfigFile
	s.captureConfigDefaults()
}

// active reports the pause kind in force now (pauseOff when its time has
// passed).
func (p *pauseState) active() int32 {
	k := p.kind.Load()
	if k == pauseOff || time.Now().UnixMilli() >= p.end.Load() {
		return pauseOff
	}
	return k
}

// expiryPaused reports whether expiry and eviction are suspended.
func (p *pauseState) expiryPaused() bool { return p.active() != pauseOff }

// set starts (or extends, as Redis does: the more restrictive kind and the
// later end win) a pause.
func (s *Server) pauseClients(kind int32, end int64) {
	p := &s.pause
	p.mu.Lock()
	if p.active() != pauseOff {
		kind = max(kind, p.kind.Load())
		end = max(end, p.end.Load())
	}
	p.end.Store(end)
	p.kind.Store(kind)
	close(p.changed)
	p.changed = make(chan struct{})
	if p.timer != nil {
		p.timer.Stop()
	}
	p.timer = time.AfterFunc(time.Until(time.UnixMilli(end)), s.pauseExpired)
	p.mu.Unlock()
	s.setExpiryPaused(true)
}

// unpauseClients lifts the pause (CLIENT UNPAUSE, or its end).
func (s *Server) unpauseClients() {
	p := &s.pause
	p.mu.Lock()
	p.kind.Store(pauseOff)
	close(p.changed)
	p.changed = make(chan struct{})
	if p.timer != nil {
		p.timer.Stop()
		p.timer = nil
	}
	p.mu.Unlock()
	s.setExpiryPaused(false)
}

// pauseExpired runs at the pause's end time.
func (s *Server) pauseExpired() {
	p := &s.pause
	p.mu.Lock()
	over := p.kind.Load() != pauseOff && time.Now().UnixMilli() >= p.end.Load()
	p.mu.Unlock()
	if over {
		s.unpauseClients()
	}
}

func (s *Server) setExpiryPaused(on bool) {
	for _, sh := range s.store.Shards() {
		sh.Lock()
		sh.SetExpiryPaused(on && s.pause.active() != pauseOff)
		sh.Unlock()
	}
}

// pausedWait is the dispatcher's check while a pause may be in force: it
// returns true when the command must not run now (the client was detached
// from its event loop to wait), false when it may run (after waiting on
// its own goroutine if need be).
func (c *Client) pausedWait(cmd *command) bool {
	if c.aofLoading || c.isReplicaLink() {
		return false
	}
	p := &c.srv.pause
	for {
		kind := p.active()
		if kind == pauseOff || kind == pauseWrite && !c.mayReplicate(cmd) {
			return false
		}
		if c.loop != nil {
			c.detach = true
			return true
		}
		p.mu.Lock()
		ch := p.changed
		p.mu.Unlock()
		d := time.Until(time.UnixMilli(p.end.Load()))
		if d <= 0 {
			continue
		}
		t := time.NewTimer(d)
		select {
		case <-ch:
		case <-t.C:
		case <-c.srv.done:
			t.Stop()
			return false
		}
		t.Stop()
		if c.closed.Load() {
			return false
		}
	}
}

// mayReplicate is Redis's is_may_replicate_command: write commands and
// those Redis 7.0 flags may_replicate (a flag COMMAND INFO hides).
func (c *Client) mayReplicate(cmd *command) bool {
	if writeOrMayReplicate(cmd) {
		return true
	}
	if cmd.name == "exec" && c.sess.tx != nil {
		for _, q := range c.sess.tx.queue {
			if writeOrMayReplicate(q.cmd) {
				return true
			}
		}
	}
	return false
}

func writeOrMayReplicate(cmd *command) bool {
	switch cmd.name {
	case "pfcount", "publish", "spublish", "eval", "evalsha", "fcall":
		return true
	}
	return cmd.write
}

// isReplicaLink reports whether c is a replica's connection (never paused).
func (c *Client) isReplicaLink() bool { return c.replPort != 0 || c.replIP != "" }

// beforeCommand runs before a command of a client with tracking or
// NO-TOUCH on (execute and EXEC's queued commands).
func (c *Client) beforeCommand(cmd *command, args [][]byte) {
	c.admin.skipTouch = c.admin.noTouch.Load() && cmd.name != "touch"
	if c.track.on {
		c.trackBefore(cmd, args)
	}
}

// noTouchLock marks sh (locked by c) as read without touching for c's
// command; noTouchUnlock undoes it before unlocking.
func (c *Client) noTouchLock(sh *shard.Shard)   { sh.SetNoTouch(true) }
func (c *Client) noTouchUnlock(sh *shard.Shard) { sh.SetNoTouch(false) }

func (c *Client) noTouchSet(set *shard.Set, on bool) {
	shards := c.srv.store.Shards()
	for _, id := range set.IDs() {
		shards[id].SetNoTouch(on)
	}
}

// clientAdminCmd serves the CLIENT subcommands of this file; false: not one.
func (c *Client) clientAdminCmd(sub string, args [][]byte) bool {
	switch sub {
	case "tracking":
		c.clientTracking(args)
	case "caching":
		c.clientCaching(args)
	case "getredir":
		c.int(c.trackRedir())
	case "trackinginfo":
		c.clientTrackingInfo()
	case "pause":
		c.clientPause(args)
	case "unpause":
		c.srv.unpauseClients()
		c.ok()
	case "no-evict":
		c.onOff(args[2], &c.admin.noEvict)
	case "no-touch":
		c.onOff(args[2], &c.admin.noTouch)
	case "setinfo":
		c.clientSetInfo(args)
	case "kill":
		c.clientKillFiltered(args)
	case "list":
		c.clientListFiltered(args)
	default:
		return false
	}
	return true
}

func (c *Client) onOff(arg []byte, flag *atomic.Bool) {
	switch {
	case eq(arg, "on"):
		flag.Store(true)
	case eq(arg, "off"):
		flag.Store(false)
	default:
		c.errSyntax()
		return
	}
	c.ok()
}

// clientPause is CLIENT PAUSE timeout [WRITE|ALL].
func (c *Client) clientPause(args [][]byte) {
	if len(args) > 4 {
		c.err("ERR unknown subcommand or wrong number of arguments for '" + sanitize(args[1], 128) + "'. Try CLIENT HELP.")
		return
	}
	kind := int32(pauseAll)
	if len(args) == 4 {
		switch {
		case eq(args[3], "write"):
			kind = pauseWrite
		case eq(args[3], "all"):
		default:
			c.err("ERR CLIENT PAUSE mode must be WRITE or ALL")
			return
		}
	}
	ms, ok := parseInt(args[2])
	if !ok {
		c.err("ERR timeout is not an integer or out of range")
		return
	}
	if ms < 0 {
		c.err("ERR timeout is negative")
		return
	}
	now := time.Now().UnixMilli()
	if ms > 1<<62-now {
		c.err("ERR timeout is out of range")
		return
	}
	end := ms
	if ms > 0 {
		end += now
	}
	c.srv.pauseClients(kind, end)
	c.ok()
}

// clientSetInfo is CLIENT SETINFO LIB-NAME|LIB-VER value (Redis 7.2).
func (c *Client) clientSetInfo(args [][]byte) {
	attr := string(args[2])
	i := 0
	switch {
	case eq(args[2], "lib-name"):
	case eq(args[2], "lib-ver"):
		i = 1
	default:
		c.err("ERR Unrecognized option '" + sanitize(args[2], 128) + "'")
		return
	}
	if !validClientName(args[3]) {
		c.err("ERR " + sanitize([]byte(attr), 128) + " cannot contain spaces, newlines or special characters.")
		return
	}
	var lib [2]string
	if old := c.admin.lib.Load(); old != nil {
		lib = *old
	}
	lib[i] = string(args[3])
	c.admin.lib.Store(&lib)
	c.ok()
}

// libFields is CLIENT LIST's lib-name= lib-ver= (Redis 7.2's last fields).
func (c *Client) libFields() string {
	var lib [2]string
	if l := c.admin.lib.Load(); l != nil {
		lib = *l
	}
	return " lib-name=" + lib[0] + " lib-ver=" + lib[1]
}

// adminListFlags adds CLIENT LIST's flags of tracking (t R B), NO-EVICT (e)
// and NO-TOUCH (T), in Redis's order.
func (c *Client) adminListFlags(f []byte) []byte {
	f = c.trackListFlags(f)
	if c.isUnix {
		f = append(f, 'U')
	}
	if c.admin.noEvict.Load() {
		f = append(f, 'e')
	}
	if c.admin.noTouch.Load() {
		f = append(f, 'T')
	}
	return f
}

// clientType is Redis's getClientType: master, replica, pubsub or normal.
func (c *Client) clientType() string {
	switch {
	case c.fromPrimary:
		return "master"
	case c.isReplicaLink():
		return "replica"
	case c.subscribed():
		return "pubsub"
	}
	return "normal"
}

// clientTypeByName is Redis's getClientTypeByName ("" when unknown).
func clientTypeByName(b []byte) string {
	switch strings.ToLower(string(b)) {
	case "normal":
		return "normal"
	case "slave", "replica":
		return "replica"
	case "pubsub":
		return "pubsub"
	case "master":
		return "master"
	}
	return ""
}

// userExists reports whether an ACL user of that name exists.
func (s *Server) userExists(name string) bool { return s.acl.users.Get(name) != nil }

// clientKillFiltered is CLIENT KILL addr:port, or CLIENT KILL with filters
// ID, TYPE, USER, ADDR, LADDR, SKIPME, MAXAGE.
func (c *Client) clientKillFiltered(args [][]byte) {
	var (
		addr, laddr, typ, user string
		hasAddr, hasLaddr      bool
		id, maxAge             int64
		skipMe                 = true
	)
	old := len(args) == 3
	if old {
		addr, hasAddr, skipMe = string(args[2]), true, false
	} else {
		for i := 2; i < len(args); i += 2 {
			if i+1 >= len(args) {
				c.errSyntax()
				return
			}
			v := args[i+1]
			switch {
			case eq(args[i], "id"):
				n, ok := parseInt(v)
				if !ok || n < 1 {
					c.err("ERR client-id should be greater than 0")
					return
				}
				id = n
			case eq(args[i], "maxage"):
				n, ok := parseInt(v)
				if !ok {
					c.err("ERR maxage is not an integer or out of range")
					return
				}
				if n <= 0 {
					c.err("ERR maxage should be greater than 0")
					return
				}
				maxAge = n
			case eq(args[i], "type"):
				if typ = clientTypeByName(v); typ == "" {
					c.err("ERR Unknown client type '" + sanitize(v, 128) + "'")
					return
				}
			case eq(args[i], "addr"):
				addr, hasAddr = string(v), true
			case eq(args[i], "laddr"):
				laddr, hasLaddr = string(v), true
			case eq(args[i], "user"):
				if !c.srv.userExists(string(v)) {
					c.err("ERR No such user '" + sanitize(v, 128) + "'")
					return
				}
				user = string(v)
			case eq(args[i], "skipme"):
				switch {
				case eq(v, "yes"):
					skipMe = true
				case eq(v, "no"):
					skipMe = false
				default:
					c.errSyntax()
					return
				}
			default:
				c.errSyntax()
				return
			}
		}
	}
	now := time.Now()
	var killed int64
	for _, o := range c.srv.clientList() {
		switch {
		case hasAddr && o.addr != addr,
			hasLaddr && o.laddr != laddr,
			typ != "" && o.clientType() != typ,
			id != 0 && o.id != id,
			user != "" && o.userName() != user,
			maxAge != 0 && int64(now.Sub(o.created).Seconds()) < maxAge,
			o == c && skipMe:
			continue
		}
		if o == c {
			c.closed.Store(true) // closed after this reply is written
		} else {
			o.kill()
		}
		killed++
	}
	if !old {
		c.int(killed)
	} else if killed == 0 {
		c.err("ERR No such client")
	} else {
		c.ok()
	}
}

// clientListFiltered is CLIENT LIST [TYPE type | ID id ...].
func (c *Client) clientListFiltered(args [][]byte) {
	var list []*Client
	switch {
	case len(args) == 4 && eq(args[2], "type"):
		typ := clientTypeByName(args[3])
		if typ == "" {
			c.err("ERR Unknown client type '" + sanitize(args[3], 128) + "'")
			return
		}
		for _, o := range c.srv.clientList() {
			if o.clientType() == typ {
				list = append(list, o)
			}
		}
	case len(args) > 3 && eq(args[2], "id"):
		for _, a := range args[3:] {
			id, ok := parseInt(a)
			if !ok {
				c.err("ERR Invalid client ID")
				return
			}
			c.srv.clientsMu.Lock()
			o := c.srv.clients[id]
			c.srv.clientsMu.Unlock()
			if o != nil {
				list = append(list, o)
			}
		}
	case len(args) != 2:
		c.errSyntax()
		return
	default:
		list = c.srv.clientList()
	}
	if len(args) == 2 || eq(args[2], "type") {
		sortClients(list) // connection order, as Redis lists them
	}
	var sb strings.Builder
	for _, o := range list {
		sb.WriteString(o.info())
		sb.WriteByte('\n')
	}
	c.verbatim(sb.String())
}

func sortClients(list []*Client) {
	for i := 1; i < len(list); i++ {
		for j := i; j > 0 && list[j].id < list[j-1].id; j-- {
			list[j], list[j-1] = list[j-1], list[j]
		}
	}
}
