package server

import (
	"time"

	"github.com/damselflydb/damselfly/shard"
)

// now is the clock expiry is judged by (unix ms).
func now() int64 { return time.Now().UnixMilli() }

// keyOp locks the shard of key and returns it with the key's hash; the
// caller must call sh.Unlock (normally deferred).
func (c *Client) lockKey(key []byte) (*shard.Shard, uint64) {
	sh, h := c.srv.store.ShardOf(key)
	sh.Lock()
	return sh, h
}

// lockKeys locks the shards of all keys in ascending order.
func (c *Client) lockKeys(keys ...[][]byte) *shard.Set {
	set := &shard.Set{}
	for _, ks := range keys {
		for _, k := range ks {
			c.srv.store.Add(set, k)
		}
	}
	c.srv.store.LockMany(set)
	return set
}

func (c *Client) unlock(set *shard.Set) { c.srv.store.UnlockMany(set) }

// lookup finds key in the client's database (shard locked by the caller).
func (c *Client) lookup(key []byte) (*shard.Shard, shard.Entry, bool) {
	sh, h := c.srv.store.ShardOf(key)
	e, ok := sh.Lookup(c.db, h, key, now())
	return sh, e, ok
}
