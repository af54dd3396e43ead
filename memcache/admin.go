package memcache

import (
	"os"
	"runtime"
	"strconv"
	"syscall"
	"time"
)

// cmdFlushAll: flush_all [delay] [noreply]. A delay schedules the flush;
// a later flush_all replaces the pending one.
func (c *conn) cmdFlushAll(t [][]byte) {
	nr := noreply(t)
	args := len(t) - 1
	if nr {
		args--
	}
	var delay int64
	if args > 0 {
		d, ok := parseExptime(t[1])
		if !ok {
			c.replyUnless(nr, "CLIENT_ERROR invalid exptime argument\r\n")
			return
		}
		delay = d
	}
	c.s.stats.cmdFlush.Add(1)
	c.s.mu.Lock()
	if c.s.flushT != nil {
		c.s.flushT.Stop()
		c.s.flushT = nil
	}
	// Like memcached, items older than realtime(delay)-1 become invalid,
	// so a delay of 1 flushes at once.
	if delay > 1 {
		at := exptimeToDeadline(delay, nowMs()) - 1000
		if at > nowMs() {
			c.s.flushT = time.AfterFunc(time.Duration(at-nowMs())*time.Millisecond, c.s.flush)
		}
	}
	pendingFlush := c.s.flushT != nil
	c.s.mu.Unlock()
	if !pendingFlush {
		c.s.flush()
	}
	c.replyUnless(nr, "OK\r\n")
}

// flush empties database 0 atomically (all shards locked) and journals
// FLUSHDB.
func (s *Server) flush() {
	set := s.store.All()
	s.store.LockMany(&set)
	defer s.store.UnlockMany(&set)
	for _, sh := range s.store.Shards() {
		sh.FlushDB(db, false)
	}
	if j := s.cfg.Journal; j != nil {
		j(db, [][]byte{[]byte("FLUSHDB")})
	}
}

// itemStats counts live items and their bytes in database 0.
func (s *Server) itemStats() (items, bytes int64) {
	for _, sh := range s.store.Shards() {
		sh.Lock()
		if d := sh.PeekDB(db); d != nil {
			items += int64(d.Len())
			bytes += d.MemoryUsed()
		}
		sh.Unlock()
	}
	return
}

func (c *conn) cmdStats(t [][]byte) {
	if len(t) > 1 {
		if string(t[1]) == "reset" && len(t) == 2 {
			c.s.resetStats()
			c.reply("RESET\r\n")
			return
		}
		c.reply("ERROR\r\n")
		return
	}
	s := c.s
	st := &s.stats
	now := time.Now()
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	items, bytes := s.itemStats()
	stat := func(name string, v int64) {
		c.out = append(c.out, "STAT "...)
		c.out = append(c.out, name...)
		c.out = append(c.out, ' ')
		c.out = strconv.AppendInt(c.out, v, 10)
		c.out = append(c.out, "\r\n"...)
	}
	stats := func(name, v string) { c.out = append(c.out, "STAT "+name+" "+v+"\r\n"...) }
	tv := func(t syscall.Timeval) string {
		return strconv.FormatInt(t.Sec, 10) + "." + leftPad(strconv.FormatInt(int64(t.Usec), 10), 6)
	}
	stat("pid", int64(os.Getpid()))
	stat("uptime", int64(now.Sub(s.started).Seconds()))
	stat("time", now.Unix())
	stats("version", Version)
	stats("libevent", "none")
	stat("pointer_size", 64)
	stats("rusage_user", tv(ru.Utime))
	stats("rusage_system", tv(ru.Stime))
	stat("max_connections", 0)
	stat("curr_connections", st.currConns.Load())
	stat("total_connections", st.totalConns.Load())
	stat("rejected_connections", st.rejectedConns.Load())
	stat("connection_structures", st.currConns.Load())
	stat("cmd_get", st.cmdGet.Load())
	stat("cmd_set", st.cmdSet.Load())
	stat("cmd_flush", st.cmdFlush.Load())
	stat("cmd_touch", st.cmdTouch.Load())
	stat("cmd_meta", st.metaCmds.Load())
	stat("get_hits", st.getHits.Load())
	stat("get_misses", st.getMisses.Load())
	stat("get_expired", st.getExpired.Load())
	stat("get_flushed", st.getFlushed.Load())
	stat("delete_misses", st.deleteMisses.Load())
	stat("delete_hits", st.deleteHits.Load())
	stat("incr_misses", st.incrMisses.Load())
	stat("incr_hits", st.incrHits.Load())
	stat("decr_misses", st.decrMisses.Load())
	stat("decr_hits", st.decrHits.Load())
	stat("cas_misses", st.casMisses.Load())
	stat("cas_hits", st.casHits.Load())
	stat("cas_badval", st.casBadval.Load())
	stat("touch_hits", st.touchHits.Load())
	stat("touch_misses", st.touchMisses.Load())
	stat("store_too_large", st.storeTooLarge.Load())
	stat("store_no_memory", st.storeNoMem.Load())
	stat("bytes_read", st.bytesRead.Load())
	stat("bytes_written", st.bytesWritten.Load())
	stat("limit_maxbytes", callOr(s.cfg.MaxBytes))
	stat("evictions", callOr(s.cfg.Evictions))
	stat("threads", int64(runtime.GOMAXPROCS(0)))
	stat("conn_yields", st.connYields.Load())
	stat("bytes", bytes)
	stat("curr_items", items)
	stat("total_items", st.totalItems.Load())
	stat("item_size_max", int64(s.cfg.MaxItemSize))
	c.reply("END\r\n")
}

func leftPad(s string, n int) string {
	for len(s) < n {
		s = "0" + s
	}
	return s
}

// resetStats zeroes the counters that memcached's "stats reset" zeroes.
func (s *Server) resetStats() {
	st := &s.stats
	for _, v := range []interface{ Store(int64) }{&st.totalConns, &st.cmdGet, &st.cmdSet, &st.cmdFlush, &st.cmdTouch,
		&st.getHits, &st.getMisses, &st.getExpired, &st.touchHits, &st.touchMisses, &st.deleteHits, &st.deleteMisses,
		&st.incrHits, &st.incrMisses, &st.decrHits, &st.decrMisses, &st.casHits, &st.casMisses, &st.casBadval,
		&st.totalItems, &st.bytesRead, &st.bytesWritten, &st.rejectedConns, &st.connYields, &st.metaCmds,
		&st.getFlushed, &st.storeTooLarge, &st.storeNoMem} {
		v.Store(0)
	}
}

// callOr is f() or 0 without f.
func callOr(f func() int64) int64 {
	if f == nil {
		return 0
	}
	return f()
}
