package server

import "bytes"

// The per-client command cache (issue 20): the command name as last sent
// (exact bytes, before lower-casing) and the command it named. A pipeline
// sends the same name again and again; a byte comparison then replaces
// lower-casing and the command table's map lookup. The table (s.cmds) is
// built once in New and never changes, so an entry never goes stale.
type cmdCache struct {
	name []byte
	cmd  *command
}

// cmdCacheMax is the longest name cached (command names are short).
const cmdCacheMax = 32

// lookupCommand is the command args0 names, or nil.
func (c *Client) lookupCommand(name []byte) *command {
	k := &c.cmdCache
	if k.cmd != nil && bytes.Equal(name, k.name) {
		return k.cmd
	}
	cmd := c.srv.cmds[c.lowerName(name)]
	if cmd != nil && len(name) <= cmdCacheMax {
		k.name = append(k.name[:0], name...)
		k.cmd = cmd
	}
	return cmd
}
