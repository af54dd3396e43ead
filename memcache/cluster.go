package memcache

// Cluster mode: memcached has no redirection, so a request for a key whose
// slot this node does not serve is answered, whole, with one line
//
//	SERVER_ERROR <the Redis error the RESP front end would give>
//
// e.g. "SERVER_ERROR MOVED 866 10.0.0.2:6379" (the owner's address as the
// topology names it: its Redis-protocol port, the only one the control
// plane knows), "SERVER_ERROR TRYAGAIN ..." during a migration's write
// pause, "SERVER_ERROR CLUSTERDOWN Hash slot not served". This is what
// Dragonfly does (its memcached commands go through the same cluster check
// and errors are rendered as SERVER_ERROR); a client library surfaces the
// line in its error, so the misrouted request fails loudly instead of
// looking like a miss. A multi-key get (get/gets/gat/gats a b c) is checked
// before any key is read: if one key is elsewhere, the answer is only the
// SERVER_ERROR line for the first such key, never a partial list that a
// client would take for misses. Keys of different slots that are all
// served here are fine (memcached has no CROSSSLOT). A storage command's
// data block is swallowed. noreply suppresses the line, as it does every
// classic error.

import "strconv"

// clusterRefuses checks the keys of command line t against Config.Route
// and answers the refusal; it reports whether it did.
func (c *conn) clusterRefuses(t [][]byte) bool {
	route := c.s.cfg.Route
	if len(t) < 2 {
		return false
	}
	refuse := func(key []byte, write bool) string {
		if !validKey(key) {
			return "" // the command's own checks answer
		}
		return route(key, write)
	}
	var msg string
	quiet, swallow := false, -1
	switch string(t[0]) {
	case "get", "gets", "gat", "gats":
		keys, touch := t[1:], t[0][1] == 'a'
		if touch {
			keys = t[2:]
		}
		for _, k := range keys {
			if msg = refuse(k, touch); msg != "" {
				break
			}
		}
	case "set", "add", "replace", "append", "prepend", "cas":
		if len(t) < 5 {
			return false
		}
		n, err := strconv.Atoi(string(t[4]))
		if err != nil || n < 0 {
			return false
		}
		quiet, swallow = noreply(t), n+2
		msg = refuse(t[1], true)
	case "incr", "decr", "delete", "touch":
		quiet = noreply(t)
		msg = refuse(t[1], true)
	case "mg":
		msg = refuse(t[1], metaWrites(t[2:]))
	case "ms":
		if len(t) < 3 {
			return false
		}
		n, err := strconv.Atoi(string(t[2]))
		if err != nil || n < 0 {
			return false
		}
		swallow = n + 2
		msg = refuse(t[1], true)
	case "md", "ma":
		msg = refuse(t[1], true)
	}
	if msg == "" {
		return false
	}
	if swallow >= 0 {
		c.swallow = swallow
	}
	if !quiet {
		c.reply("SERVER_ERROR " + msg + "\r\n")
	}
	return true
}

// metaWrites reports whether mg's flags make it write (touch, vivify).
func metaWrites(flags [][]byte) bool {
	for _, f := range flags {
		if len(f) > 0 && (f[0] == 'T' || f[0] == 'N') {
			return true
		}
	}
	return false
}
