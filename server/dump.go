package server

import (
	"errors"
	"strconv"
	"time"

	"github.com/damselflydb/damselfly/snapshot"
	"github.com/damselflydb/damselfly/snapshot/rdb"
)

// DUMP and RESTORE with Redis's payload format (snapshot/rdb): the RDB
// encoding of the value, the RDB version and a CRC64.

func registerDump(reg registrar) {
	reg("dump", 2, "readonly", 1, 1, 1, "generic", cmdDump)
	reg("restore", -4, "write|denyoom", 1, 1, 1, "generic", cmdRestore)
}

func cmdDump(c *Client, args [][]byte) {
	sh, h := c.lockKey(args[1])
	defer c.unlockKey(sh)
	e, ok := sh.Lookup(c.db, h, args[1], now())
	if !ok {
		c.keyMiss(args[1])
		c.null()
		return
	}
	p, err := snapshot.Dump(&e)
	if err != nil {
		c.err("ERR " + err.Error())
		return
	}
	c.bulk(p)
}

// RESTORE key ttl serialized-value [REPLACE] [ABSTTL] [IDLETIME seconds] [FREQ frequency]
func cmdRestore(c *Client, args [][]byte) {
	key := args[1]
	replace, absTTL := false, false
	idle, freq := false, false
	var idleSecs, freqVal int64
	for j := 4; j < len(args); j++ {
		more := len(args) - j - 1
		switch {
		case eq(args[j], "replace"):
			replace = true
		case eq(args[j], "absttl"):
			absTTL = true
		case eq(args[j], "idletime") && more >= 1 && !freq:
			v, ok := parseInt(args[j+1])
			if !ok {
				c.errNotInteger()
				return
			}
			if v < 0 {
				c.err("ERR Invalid IDLETIME value, must be >= 0")
				return
			}
			idle, idleSecs = true, v
			j++
		case eq(args[j], "freq") && more >= 1 && !idle:
			v, ok := parseInt(args[j+1])
			if !ok {
				c.errNotInteger()
				return
			}
			if v < 0 || v > 255 {
				c.err("ERR Invalid FREQ value, must be >= 0 and <= 255")
				return
			}
			freq, freqVal = true, v
			j++
		default:
			c.errSyntax()
			return
		}
	}
	sh, h := c.lockKey(key)
	defer c.unlockKey(sh)
	e, exists := sh.Lookup(c.db, h, key, now())
	if exists && !replace {
		c.err("BUSYKEY Target key name already exists.")
		return
	}
	ttl, ok := parseInt(args[2])
	if !ok {
		c.errNotInteger()
		return
	}
	if ttl < 0 {
		c.err("ERR Invalid TTL value, must be >= 0")
		return
	}
	re, err := rdb.Restore(args[3])
	if err != nil {
		if errors.Is(err, rdb.ErrDumpPayload) {
			c.err("ERR DUMP payload version or checksum are wrong")
		} else {
			c.err("ERR Bad data format")
		}
		return
	}
	v, err := snapshot.ValueWith(re, c.lim())
	if err != nil || (v.Type != 0 && v.Obj == nil) {
		c.err("ERR Bad data format")
		return
	}
	d := sh.DB(c.db)
	if ttl > 0 && !absTTL {
		ttl += time.Now().UnixMilli()
	}
	if ttl > 0 && ttl <= now() {
		// Already expired: like Redis, only delete what it replaces.
		if exists {
			d.Delete(&e)
			c.rewrite([]byte("DEL"), key)
			c.notify(kseGeneric, "del", key)
		}
		c.ok()
		return
	}
	v.ExpireAt = ttl
	ne := d.Put(h, key, v)
	if idle && !c.srv.lfuOn() {
		d.SetIdle(&ne, idleSecs)
	}
	if freq {
		d.SetFreq(&ne, int(freqVal)) // only under an LFU policy, as Redis
	}
	c.notify(kseGeneric, "restore", key)
	c.srv.signalIfBlockable(c.db, key, v.Type) // a restored list may serve BLPOP
	if ttl > 0 {
		c.rewrite([]byte("RESTORE"), key, []byte(strconv.FormatInt(ttl, 10)), args[3], []byte("REPLACE"), []byte("ABSTTL"))
	}
	c.ok()
}
