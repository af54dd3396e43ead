package server

import (
	"crypto/sha1"
	"encoding/binary"
	"encoding/hex"
	"math"
	"strconv"

	"github.com/damselflydb/damselfly/shard"
	"github.com/damselflydb/damselfly/shard/types"
)

// DEBUG DIGEST and DEBUG DIGEST-VALUE compute the same SHA1-based digests as
// Redis 7.0 (debug.c), so that a Damselfly and a redis-server holding the
// same data report the same digest whatever the order of their keys:
//   - xorDigest(d, s): d ^= sha1(s) (order-independent "addition");
//   - mixDigest(d, s): xorDigest(d, s) then d = sha1(d) (order-dependent);
//   - per key: mix(key), mix(htonl(type)), the value (strings and list
//     elements mixed in order; set members xored; hash fields and zset
//     members digested pairwise, then xored), xor("!!expire!!") if the key
//     has a TTL; the key digests are xored into the database digest after
//     mixing in htonl(db) for every non-empty database.

type digest [20]byte

func (d *digest) xor(b []byte) {
	h := sha1.Sum(b)
	for i := range d {
		d[i] ^= h[i]
	}
}

func (d *digest) mix(b []byte) {
	d.xor(b)
	*d = sha1.Sum(d[:])
}

func (d *digest) hex() string {
	return hex.EncodeToString(d[:])
}

// Redis object type numbers (server.h), which the digest includes.
var redisTypeCode = map[shard.Type]uint32{
	shard.TypeString: 0, shard.TypeList: 1, shard.TypeSet: 2, shard.TypeZSet: 3, shard.TypeHash: 4, shard.TypeStream: 6,
}

// formatScore prints a score as C's "%.17g".
func formatScore(f float64) []byte {
	switch {
	case math.IsInf(f, 1):
		return []byte("inf")
	case math.IsInf(f, -1):
		return []byte("-inf")
	case math.IsNaN(f):
		return []byte("nan")
	}
	return strconv.AppendFloat(nil, f, 'g', 17, 64)
}

// valueDigest is Redis's xorObjectDigest for entry e (shard locked).
func valueDigest(d *digest, e *shard.Entry) {
	var t [4]byte
	binary.BigEndian.PutUint32(t[:], redisTypeCode[e.Type()])
	d.mix(t[:])
	switch e.Type() {
	case shard.TypeString:
		d.mix(e.Str())
	case shard.TypeList:
		e.Obj().(*types.List).Iterate(func(v []byte) bool { d.mix(v); return true })
	case shard.TypeSet:
		e.Obj().(*types.Set).Iterate(func(m []byte) bool { d.xor(m); return true })
	case shard.TypeZSet:
		e.Obj().(*types.ZSet).Iterate(func(m []byte, score float64) bool {
			var ed digest
			ed.mix(m)
			ed.mix(formatScore(score))
			d.xor(ed[:])
			return true
		})
	case shard.TypeHash:
		hs := e.Obj().(*types.Hash)
		hs.Iterate(func(f, v []byte) bool {
			var ed digest
			ed.mix(f)
			ed.mix(v)
			if hs.FieldExpireAt(f) != 0 {
				ed.xor([]byte("!!hexpire!!")) // Redis 7.4: a field with a TTL
			}
			d.xor(ed[:])
			return true
		})
	case shard.TypeStream:
		// Entries in order: "ms.seq", then each field and value (groups
		// are not part of Redis's digest).
		var idb []byte
		e.Obj().(*types.Stream).Range(types.StreamID{}, types.MaxStreamID, false, func(id types.StreamID, fv [][]byte) bool {
			idb = strconv.AppendUint(idb[:0], id.Ms, 10)
			idb = append(idb, '.')
			idb = strconv.AppendUint(idb, id.Seq, 10)
			d.mix(idb)
			for _, b := range fv {
				d.mix(b)
			}
			return true
		})
	}
	if e.ExpireAt() != 0 {
		d.xor([]byte("!!expire!!"))
	}
}

// datasetDigest is Redis's computeDatasetDigest. Each shard is locked in
// turn, so under concurrent writes the result mixes instants; it is meant
// for quiescent comparisons (tests, replica checks).
func (s *Server) datasetDigest() digest {
	var final digest
	for db := 0; db < s.store.DBNum(); db++ {
		var dbDigest digest
		nonEmpty := false
		for _, sh := range s.store.Shards() {
			sh.Lock()
			if d := sh.PeekDB(db); d != nil && d.Len() > 0 {
				nonEmpty = true
				var cursor uint64
				for {
					cursor = d.Scan(cursor, func(e *shard.Entry) {
						var kd digest
						kd.mix(e.Key())
						valueDigest(&kd, e)
						dbDigest.xor(kd[:])
					})
					if cursor == 0 {
						break
					}
				}
			}
			sh.Unlock()
		}
		if !nonEmpty {
			continue
		}
		// mix(htonl(db)) comes before the keys are xored in: since xor is
		// commutative, final = sha1(final ^ sha1(db)) ^ keys.
		var id [4]byte
		binary.BigEndian.PutUint32(id[:], uint32(db))
		final.mix(id[:])
		for i := range final {
			final[i] ^= dbDigest[i]
		}
	}
	return final
}

func debugDigest(c *Client) {
	d := c.srv.datasetDigest()
	c.simple(d.hex())
}

func debugDigestValue(c *Client, keys [][]byte) {
	c.array(len(keys))
	for _, k := range keys {
		var d digest
		sh, h := c.srv.store.ShardOf(k)
		sh.Lock()
		// Like Redis: no lookup, so a logically expired key still counts.
		if db := sh.PeekDB(c.db); db != nil {
			if e, ok := db.Find(h, k); ok {
				valueDigest(&d, &e)
			}
		}
		sh.Unlock()
		c.simple(d.hex())
	}
}
