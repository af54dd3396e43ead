package server

// MIGRATE host port key|"" destination-db timeout [COPY] [REPLACE]
// [AUTH password] [AUTH2 username password] [KEYS key ...], as Redis 7.0:
// every key found is sent as RESTORE key ttl DUMP-payload [REPLACE] (after
// AUTH and SELECT when needed) over a connection cached per target, and
// deleted here once the target accepted it (unless COPY). Replies and errors
// are Redis's: +NOKEY, -IOERR ..., "Target instance replied with error: ...".
//
// Locking: unlike Redis, which blocks the whole server during the transfer,
// the keys' shards are held only to serialize the values and, afterwards, to
// delete the moved keys; the network I/O runs with no shard held (the
// command is x-detach, so it never blocks an event loop, and x-own-locks, so
// EXEC releases its locks around it). A key changed by another client
// between the two steps is not deleted (its new value was not sent); the
// reply still reports what the target answered. Deletions are replicated as
// DEL of the moved keys.

import (
	"errors"
	"net"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/damselflydb/damselfly/resp"
	"github.com/damselflydb/damselfly/snapshot"
	"github.com/tidwall/redcon"
)

func registerMigrate(reg registrar) {
	reg("migrate", -6, "write|movablekeys|x-detach|x-own-locks", 3, 3, 1, "generic", cmdMigrate)
}

// migrateIdle is how long an unused cached connection is kept (Redis's
// MIGRATE_SOCKET_CACHE_TTL).
const migrateIdle = 10 * time.Second

// migrateConns caches one connection per target "host:port"; a MIGRATE
// takes the connection out while it uses it.
type migrateConns struct {
	mu    sync.Mutex
	conns map[string]*migrateConn
}

type migrateConn struct {
	nc     net.Conn
	rd     *resp.Reader
	lastDB int64 // -1: SELECT needed
	used   time.Time
}

// get takes the cached connection to addr (closing idle ones), or dials.
func (m *migrateConns) get(addr string, timeout time.Duration) (*migrateConn, bool, error) {
	m.mu.Lock()
	var cached *migrateConn
	for a, mc := range m.conns {
		if time.Since(mc.used) > migrateIdle {
			mc.nc.Close()
			delete(m.conns, a)
		} else if a == addr {
			cached = mc
			delete(m.conns, a)
		}
	}
	m.mu.Unlock()
	if cached != nil {
		return cached, true, nil
	}
	nc, err := net.DialTimeout("tcp", addr, timeout)
	if err != nil {
		return nil, false, err
	}
	return &migrateConn{nc: nc, rd: resp.NewReader(nc), lastDB: -1}, false, nil
}

// put returns a healthy connection to the cache.
func (m *migrateConns) put(addr string, mc *migrateConn) {
	mc.used = time.Now()
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.conns == nil {
		m.conns = map[string]*migrateConn{}
	}
	if old := m.conns[addr]; old != nil {
		old.nc.Close()
	}
	m.conns[addr] = mc
}

// closeAll drops every cached connection (server shutdown).
func (m *migrateConns) closeAll() {
	m.mu.Lock()
	defer m.mu.Unlock()
	for a, mc := range m.conns {
		mc.nc.Close()
		delete(m.conns, a)
	}
}

type migrateItem struct {
	key, payload []byte
	ttl          int64
}

func cmdMigrate(c *Client, args [][]byte) {
	o, ok := parseMigrate(c, args)
	if !ok {
		return
	}
	c.rewrite() // replicated as the DEL of the moved keys only (migrateDelete)

	items := c.migrateCollect(o.keys)
	if items == nil {
		c.simple("NOKEY")
		return
	}
	addr := net.JoinHostPort(string(args[1]), string(args[2]))
	var results []bool // per item: accepted by the target
	var targetErr string
	for attempt := 0; ; attempt++ {
		mc, cached, err := c.srv.migrate.get(addr, o.timeout)
		if err != nil {
			if errors.Is(err, syscall.ECONNREFUSED) {
				// Redis connects without blocking and learns of the
				// refusal only when it writes.
				c.err("IOERR error or timeout writing to target instance")
			} else {
				c.err("IOERR error or timeout connecting to the client")
			}
			return
		}
		var ioErr string
		var retry bool
		results, targetErr, ioErr, retry = migrateSend(mc, items, o.user, o.pass, o.dbid, o.replace, o.timeout)
		if ioErr == "" {
			if targetErr != "" {
				mc.lastDB = -1
			} else {
				mc.lastDB = o.dbid
			}
			c.srv.migrate.put(addr, mc)
			break
		}
		mc.nc.Close()
		// A cached connection the target closed meanwhile: like Redis,
		// retry once on a fresh one (not after a timeout).
		if retry && cached && attempt == 0 {
			continue
		}
		if !o.copyOnly {
			c.migrateDelete(items, results)
		}
		c.err(ioErr)
		return
	}
	if !o.copyOnly {
		c.migrateDelete(items, results)
	}
	if targetErr != "" {
		c.err("ERR Target instance replied with error: " + targetErr)
		return
	}
	c.ok()
}

// migrateOptions is a parsed MIGRATE host port key|"" db timeout [COPY]
// [REPLACE] [AUTH pass | AUTH2 user pass] [KEYS key...].
type migrateOptions struct {
	copyOnly, replace bool
	user, pass        []byte
	keys              [][]byte
	dbid              int64
	timeout           time.Duration
}

func parseMigrate(c *Client, args [][]byte) (o migrateOptions, ok bool) {
	o.keys = args[3:4]
	for j := 6; j < len(args); j++ {
		more := len(args) - 1 - j
		switch {
		case eq(args[j], "copy"):
			o.copyOnly = true
		case eq(args[j], "replace"):
			o.replace = true
		case eq(args[j], "auth"):
			if more < 1 {
				c.errSyntax()
				return o, false
			}
			j++
			o.pass = args[j]
		case eq(args[j], "auth2"):
			if more < 2 {
				c.errSyntax()
				return o, false
			}
			o.user, o.pass = args[j+1], args[j+2]
			j += 2
		case eq(args[j], "keys"):
			if len(args[3]) != 0 {
				c.err("ERR When using MIGRATE KEYS option, the key argument must be set to the empty string")
				return o, false
			}
			o.keys = args[j+1:]
			j = len(args)
		default:
			c.errSyntax()
			return o, false
		}
	}
	timeoutMs, ok1 := parseInt(args[5])
	dbid, ok2 := parseInt(args[4])
	if !ok1 || !ok2 {
		c.errNotInteger()
		return o, false
	}
	if timeoutMs <= 0 {
		timeoutMs = 1000
	}
	o.dbid, o.timeout = dbid, time.Duration(timeoutMs)*time.Millisecond
	return o, true
}

// migrateCollect serializes the keys that exist (shards held only for
// that); nil when none does.
func (c *Client) migrateCollect(keys [][]byte) []migrateItem {
	set := c.lockKeys(keys)
	defer c.unlock(set)
	t := now()
	var items []migrateItem
	found := false
	for _, k := range keys {
		sh, h := c.srv.store.ShardOf(k)
		e, ok := sh.Lookup(c.db, h, k, t)
		if !ok {
			continue
		}
		found = true
		var ttl int64
		if at := e.ExpireAt(); at != 0 {
			if ttl = at - t; ttl < 0 {
				continue
			}
			ttl = max(ttl, 1)
		}
		p, err := snapshot.Dump(&e)
		if err != nil {
			continue
		}
		items = append(items, migrateItem{key: k, payload: p, ttl: ttl})
	}
	if !found {
		return nil
	}
	return items
}

// migrateSend writes the whole batch and reads the replies. results tells
// which RESTOREs the target accepted; targetErr is the first error the
// target answered (without its '-'); ioErr is Redis's reply for a socket
// failure, with retry set when nothing was read and it was no timeout.
func migrateSend(mc *migrateConn, items []migrateItem, user, pass []byte, dbid int64, replace bool, timeout time.Duration) (results []bool, targetErr, ioErr string, retry bool) {
	var buf []byte
	if pass != nil {
		if user != nil {
			buf = redcon.AppendArray(buf, 3)
			buf = redcon.AppendBulkString(buf, "AUTH")
			buf = redcon.AppendBulk(buf, user)
		} else {
			buf = redcon.AppendArray(buf, 2)
			buf = redcon.AppendBulkString(buf, "AUTH")
		}
		buf = redcon.AppendBulk(buf, pass)
	}
	selectDB := mc.lastDB != dbid
	if selectDB {
		buf = redcon.AppendArray(buf, 2)
		buf = redcon.AppendBulkString(buf, "SELECT")
		buf = redcon.AppendBulkString(buf, strconv.FormatInt(dbid, 10))
	}
	for _, it := range items {
		n := 4
		if replace {
			n = 5
		}
		buf = redcon.AppendArray(buf, n)
		buf = redcon.AppendBulkString(buf, "RESTORE")
		buf = redcon.AppendBulk(buf, it.key)
		buf = redcon.AppendBulkString(buf, strconv.FormatInt(it.ttl, 10))
		buf = redcon.AppendBulk(buf, it.payload)
		if replace {
			buf = redcon.AppendBulkString(buf, "REPLACE")
		}
	}
	deadline := time.Now().Add(timeout)
	_ = mc.nc.SetDeadline(deadline)
	if _, err := mc.nc.Write(buf); err != nil {
		return nil, "", "IOERR error or timeout writing to target instance", !isTimeout(err)
	}
	readLine := func() (string, error) {
		_ = mc.nc.SetReadDeadline(time.Now().Add(timeout))
		l, err := mc.rd.ReadLine()
		return string(l), err
	}
	var authReply, selReply string
	var err error
	readErr := func(err error, first bool) (string, bool) {
		return "IOERR error or timeout reading to target instance", first && !isTimeout(err)
	}
	if pass != nil {
		if authReply, err = readLine(); err != nil {
			e, r := readErr(err, true)
			return nil, "", e, r
		}
	}
	if selectDB {
		if selReply, err = readLine(); err != nil {
			e, r := readErr(err, true)
			return nil, "", e, r
		}
	}
	results = make([]bool, len(items))
	for j := range items {
		l, err := readLine()
		if err != nil {
			if targetErr != "" {
				return results, targetErr, "", false
			}
			e, r := readErr(err, j == 0)
			return results, "", e, r
		}
		switch {
		case pass != nil && len(authReply) > 0 && authReply[0] == '-':
			if targetErr == "" {
				targetErr = authReply[1:]
			}
		case selectDB && len(selReply) > 0 && selReply[0] == '-':
			if targetErr == "" {
				targetErr = selReply[1:]
			}
		case len(l) > 0 && l[0] == '-':
			if targetErr == "" {
				targetErr = l[1:]
			}
		default:
			results[j] = true
		}
	}
	return results, targetErr, "", false
}

func isTimeout(err error) bool {
	ne, ok := err.(net.Error)
	return ok && ne.Timeout()
}

// migrateDelete deletes the moved keys (those the target accepted and that
// nobody changed since they were serialized) and replicates it as DEL.
func (c *Client) migrateDelete(items []migrateItem, results []bool) {
	var keys [][]byte
	for i, it := range items {
		if i < len(results) && results[i] {
			keys = append(keys, it.key)
		}
	}
	if len(keys) == 0 {
		return
	}
	set := c.lockKeys(keys)
	defer c.unlock(set)
	del := [][]byte{[]byte("DEL")}
	t := now()
	for i, it := range items {
		if i >= len(results) || !results[i] {
			continue
		}
		sh, h := c.srv.store.ShardOf(it.key)
		e, ok := sh.Lookup(c.db, h, it.key, t)
		if !ok {
			continue
		}
		if p, err := snapshot.Dump(&e); err != nil || string(p) != string(it.payload) {
			continue // changed meanwhile: keep the newer value
		}
		sh.DB(c.db).Delete(&e)
		c.notify(kseGeneric, "del", it.key)
		del = append(del, it.key)
	}
	if len(del) > 1 {
		c.rewrite(del...)
	} else {
		c.rewrite()
	}
}
