package server

import (
	"fmt"
	"math"
	"slices"
	"strconv"

	"github.com/damselflydb/damselfly/geohash"
	"github.com/damselflydb/damselfly/shard"
	"github.com/damselflydb/damselfly/shard/types"
)

// GEO commands keep points in a sorted set whose scores are Redis's 52-bit
// geohashes (package geohash), so the sorted sets are Redis's own.

func registerGeo(reg registrar) {
	reg("geoadd", -5, "write|denyoom", 1, 1, 1, "geo", cmdGeoAdd)
	reg("geodist", -4, "readonly", 1, 1, 1, "geo", cmdGeoDist)
	reg("geohash", -2, "readonly", 1, 1, 1, "geo", cmdGeoHash)
	reg("geopos", -2, "readonly", 1, 1, 1, "geo", cmdGeoPos)
	reg("georadius", -6, "write|denyoom", 1, 1, 1, "geo", func(c *Client, a [][]byte) { geoSearch(c, a, 1, geoCoords) })
	reg("georadius_ro", -6, "readonly", 1, 1, 1, "geo", func(c *Client, a [][]byte) { geoSearch(c, a, 1, geoCoords|geoNoStore) })
	reg("georadiusbymember", -5, "write|denyoom", 1, 1, 1, "geo", func(c *Client, a [][]byte) { geoSearch(c, a, 1, geoMember) })
	reg("georadiusbymember_ro", -5, "readonly", 1, 1, 1, "geo", func(c *Client, a [][]byte) { geoSearch(c, a, 1, geoMember|geoNoStore) })
	reg("geosearch", -7, "readonly", 1, 1, 1, "geo", func(c *Client, a [][]byte) { geoSearch(c, a, 1, geoSearchCmd) })
	reg("geosearchstore", -8, "write|denyoom", 1, 2, 1, "geo", func(c *Client, a [][]byte) { geoSearch(c, a, 2, geoSearchCmd|geoSearchStore) })
}

const (
	geoCoords = 1 << iota
	geoMember
	geoNoStore
	geoSearchCmd
	geoSearchStore
)

// parseLonLat parses a longitude and latitude pair with Redis's checks.
func parseLonLat(c *Client, args [][]byte) (lon, lat float64, ok bool) {
	if lon, ok = parseScore(args[0]); !ok {
		c.errNotFloat()
		return
	}
	if lat, ok = parseScore(args[1]); !ok {
		c.errNotFloat()
		return
	}
	if lon < geohash.LonMin || lon > geohash.LonMax || lat < geohash.LatMin || lat > geohash.LatMax {
		c.err(fmt.Sprintf("ERR invalid longitude,latitude pair %f,%f", lon, lat))
		return 0, 0, false
	}
	return lon, lat, true
}

// parseGeoUnit returns the meters in one unit.
func parseGeoUnit(c *Client, b []byte) (float64, bool) {
	switch {
	case eq(b, "m"):
		return 1, true
	case eq(b, "km"):
		return 1000, true
	case eq(b, "ft"):
		return 0.3048, true
	case eq(b, "mi"):
		return 1609.34, true
	}
	c.err("ERR unsupported unit provided. please use M, KM, FT, MI")
	return 0, false
}

func parseGeoNumber(c *Client, b []byte, what string) (float64, bool) {
	f, ok := parseScore(b)
	if !ok {
		c.err("ERR need numeric " + what)
	}
	return f, ok
}

func cmdGeoAdd(c *Client, args [][]byte) {
	var flags types.ZAddFlags
	ch := false
	i := 2
	for ; i < len(args); i++ {
		switch a := args[i]; {
		case eq(a, "nx"):
			flags |= types.ZAddNX
		case eq(a, "xx"):
			flags |= types.ZAddXX
		case eq(a, "ch"):
			ch = true
		default:
			goto done
		}
	}
done:
	if (len(args)-i)%3 != 0 || (flags&types.ZAddNX != 0 && flags&types.ZAddXX != 0) {
		c.errSyntax()
		return
	}
	pairs := make([][]byte, 0, (len(args)-i)/3*2)
	for j := i; j < len(args); j += 3 {
		lon, lat, ok := parseLonLat(c, args[j:j+2])
		if !ok {
			return
		}
		bits, _ := geohash.Encode(lon, lat)
		pairs = append(pairs, strconv.AppendUint(nil, bits, 10), args[j+2])
	}
	// Replicated as the ZADD it is, with the computed scores.
	prop := append([][]byte{[]byte("ZADD")}, args[1:i]...)
	c.rewrite(append(prop, pairs...)...)
	zaddGeneric(c, args[1], pairs, flags, ch)
}

// geoZSet looks key up as a sorted set; bad means an error was sent.
func geoZSet(c *Client, key []byte) (z *types.ZSet, bad bool) {
	_, _, e, found, bad := c.getCollAt(key, shard.TypeZSet)
	if bad || !found {
		if !bad {
			c.keyMiss(key)
		}
		return nil, bad
	}
	return e.Obj().(*types.ZSet), false
}

func cmdGeoDist(c *Client, args [][]byte) {
	conv := 1.0
	if len(args) == 5 {
		var ok bool
		if conv, ok = parseGeoUnit(c, args[4]); !ok {
			return
		}
	} else if len(args) > 5 {
		c.errSyntax()
		return
	}
	sh, _ := c.lockKey(args[1])
	defer c.unlockKey(sh)
	z, bad := geoZSet(c, args[1])
	if bad {
		return
	}
	if z == nil {
		c.null()
		return
	}
	s1, ok1 := z.Score(args[2])
	s2, ok2 := z.Score(args[3])
	if !ok1 || !ok2 {
		c.null()
		return
	}
	lon1, lat1 := geohash.Decode(s1)
	lon2, lat2 := geohash.Decode(s2)
	c.bulk(appendDistance(nil, geohash.Distance(lon1, lat1, lon2, lat2)/conv))
}

// appendDistance formats d with 4 decimals the way Redis's
// fixedpoint_d2string does (scale, round half to even, print).
func appendDistance(b []byte, d float64) []byte {
	if d == 0 {
		return append(b, "0.0000"...)
	}
	v := int64(math.RoundToEven(d * 10000))
	if v < 0 {
		b = append(b, '-')
		v = -v
	}
	b = strconv.AppendInt(b, v/10000, 10)
	b = append(b, '.')
	frac := v % 10000
	for div := int64(1000); div > 0; div /= 10 {
		b = append(b, byte('0'+frac/div%10))
	}
	return b
}

// appendCoord formats a coordinate as Redis's addReplyHumanLongDouble:
// 17 decimals of the exact value, trailing zeros removed.
func appendCoord(b []byte, f float64) []byte {
	start := len(b)
	b = strconv.AppendFloat(b, f, 'f', 17, 64)
	for b[len(b)-1] == '0' {
		b = b[:len(b)-1]
	}
	if b[len(b)-1] == '.' {
		b = b[:len(b)-1]
	}
	if string(b[start:]) == "-0" {
		b = append(b[:start], '0')
	}
	return b
}

func (c *Client) coord(f float64) {
	var tmp [40]byte
	if c.proto == 3 {
		c.out = append(c.out, ',')
		c.out = appendCoord(c.out, f)
		c.out = append(c.out, '\r', '\n')
		return
	}
	c.bulk(appendCoord(tmp[:0], f))
}

// geoMembers answers GEOHASH and GEOPOS: one reply per member argument,
// missing (a member or the whole key absent) or found with its score.
func geoMembers(c *Client, args [][]byte, missing func(), found func(score float64)) {
	sh, _ := c.lockKey(args[1])
	defer c.unlockKey(sh)
	z, bad := geoZSet(c, args[1])
	if bad {
		return
	}
	c.array(len(args) - 2)
	for _, m := range args[2:] {
		var s float64
		ok := false
		if z != nil {
			s, ok = z.Score(m)
		}
		if !ok {
			missing()
			continue
		}
		found(s)
	}
}

func cmdGeoHash(c *Client, args [][]byte) {
	geoMembers(c, args, c.null, func(s float64) { c.bulkString(geohash.String(s)) })
}

func cmdGeoPos(c *Client, args [][]byte) {
	geoMembers(c, args, c.nullArray, func(s float64) {
		lon, lat := geohash.Decode(s)
		c.array(2)
		c.coord(lon)
		c.coord(lat)
	})
}

// geoPoint is one search result.
type geoPoint struct {
	member         []byte
	lon, lat, dist float64
	score          float64
}

// geoSearch implements GEORADIUS, GEORADIUSBYMEMBER, their _RO forms,
// GEOSEARCH and GEOSEARCHSTORE, with Redis's argument order and errors.
func geoSearch(c *Client, args [][]byte, src int, flags int) {
	keys := [][]byte{args[src]}
	var storeKey []byte
	if flags&geoSearchStore != 0 {
		storeKey = args[1]
		keys = append(keys, storeKey)
	}
	// STORE/STOREDIST keys of GEORADIUS are found while parsing, but
	// their shards must be locked with the source's: lock every argument
	// that may be one.
	if flags&(geoCoords|geoMember) != 0 && flags&geoNoStore == 0 {
		for i := 2; i+1 < len(args); i++ {
			if eq(args[i], "store") || eq(args[i], "storedist") {
				keys = append(keys, args[i+1])
			}
		}
	}
	set := c.lockKeys(keys)
	defer c.unlock(set)
	z, bad := geoZSet(c, args[src])
	if bad {
		return
	}
	var shape geohash.Shape
	base := 0
	var ok bool
	switch {
	case flags&geoCoords != 0:
		base = 6
		if shape.Lon, shape.Lat, ok = parseLonLat(c, args[2:4]); !ok {
			return
		}
		if !parseGeoRadius(c, args[4:6], &shape) {
			return
		}
	case flags&geoMember != 0:
		base = 5
		if z != nil {
			s, found := z.Score(args[2])
			if !found {
				c.err("ERR could not decode requested zset member")
				return
			}
			shape.Lon, shape.Lat = geohash.Decode(s)
			if !parseGeoRadius(c, args[3:5], &shape) {
				return
			}
		}
	default:
		base = src + 1
	}
	withDist, withHash, withCoord, any, storeDist := false, false, false, false, false
	fromMember, fromLoc, byRadius, byBox := false, false, false, false
	sortDir := 0 // 0 none, 1 asc, -1 desc
	var count int64
	search := flags&geoSearchCmd != 0
	for i := base; i < len(args); i++ {
		rem := len(args) - base - (i - base) // arguments from i on
		a := args[i]
		switch {
		case eq(a, "withdist"):
			withDist = true
		case eq(a, "withhash"):
			withHash = true
		case eq(a, "withcoord"):
			withCoord = true
		case eq(a, "any"):
			any = true
		case eq(a, "asc"):
			sortDir = 1
		case eq(a, "desc"):
			sortDir = -1
		case eq(a, "count") && rem > 1:
			n, ok := parseInt(args[i+1])
			if !ok {
				c.errNotInteger()
				return
			}
			if n <= 0 {
				c.err("ERR COUNT must be > 0")
				return
			}
			count = n
			i++
		case (eq(a, "store") || eq(a, "storedist")) && rem > 1 && flags&geoNoStore == 0 && !search:
			storeKey = args[i+1]
			storeDist = len(a) == 9
			i++
		case eq(a, "storedist") && search && flags&geoSearchStore != 0:
			storeDist = true
		case eq(a, "frommember") && rem > 1 && search && !fromLoc:
			fromMember = true
			if z != nil {
				s, found := z.Score(args[i+1])
				if !found {
					c.err("ERR could not decode requested zset member")
					return
				}
				shape.Lon, shape.Lat = geohash.Decode(s)
			}
			i++
		case eq(a, "fromlonlat") && rem > 2 && search && !fromMember:
			if shape.Lon, shape.Lat, ok = parseLonLat(c, args[i+1:i+3]); !ok {
				return
			}
			fromLoc = true
			i += 2
		case eq(a, "byradius") && rem > 2 && search && !byBox:
			if !parseGeoRadius(c, args[i+1:i+3], &shape) {
				return
			}
			byRadius = true
			i += 2
		case eq(a, "bybox") && rem > 3 && search && !byRadius:
			w, ok := parseGeoNumber(c, args[i+1], "width")
			if !ok {
				return
			}
			h, ok := parseGeoNumber(c, args[i+2], "height")
			if !ok {
				return
			}
			if h < 0 || w < 0 {
				c.err("ERR height or width cannot be negative")
				return
			}
			if shape.Conv, ok = parseGeoUnit(c, args[i+3]); !ok {
				return
			}
			shape.Box, shape.Width, shape.Height = true, w, h
			byBox = true
			i += 3
		default:
			c.errSyntax()
			return
		}
	}
	if storeKey != nil && (withDist || withHash || withCoord) {
		if flags&geoSearchStore != 0 {
			c.err("ERR GEOSEARCHSTORE is not compatible with WITHDIST, WITHHASH and WITHCOORD options")
		} else {
			c.err("ERR STORE option in GEORADIUS is not compatible with WITHDIST, WITHHASH and WITHCOORD options")
		}
		return
	}
	if search && !fromMember && !fromLoc {
		c.err("ERR exactly one of FROMMEMBER or FROMLONLAT can be specified for " + string(args[0]))
		return
	}
	if search && !byRadius && !byBox {
		c.err("ERR exactly one of BYRADIUS and BYBOX can be specified for " + string(args[0]))
		return
	}
	if any && count == 0 {
		c.err("ERR the ANY argument requires COUNT argument")
		return
	}
	if z == nil {
		if storeKey != nil {
			sh, h := c.srv.store.ShardOf(storeKey)
			if e, found := sh.Lookup(c.db, h, storeKey, now()); found {
				sh.DB(c.db).Delete(&e)
				c.notify(kseGeneric, "del", storeKey)
			}
			c.int(0)
		} else {
			c.array(0)
		}
		return
	}
	if count != 0 && sortDir == 0 && !any {
		sortDir = 1
	}
	limit := int64(0)
	if any {
		limit = count
	}
	var pts []geoPoint
	for _, r := range shape.Ranges() {
		if limit > 0 && int64(len(pts)) >= limit {
			break
		}
		z.RangeByScore(types.ScoreBound{Value: float64(r[0])}, types.ScoreBound{Value: float64(r[1]), Excl: true}, false, 0, -1,
			func(m []byte, s float64) bool {
				if lon, lat, dist, in := shape.Within(s); in {
					pts = append(pts, geoPoint{member: slices.Clone(m), lon: lon, lat: lat, dist: dist, score: s})
				}
				return limit == 0 || int64(len(pts)) < limit
			})
	}
	if len(pts) == 0 && storeKey == nil {
		c.array(0)
		return
	}
	n := len(pts)
	if count != 0 && int64(n) > count {
		n = int(count)
	}
	switch sortDir {
	case 1:
		slices.SortStableFunc(pts, func(a, b geoPoint) int { return cmpFloat(a.dist, b.dist) })
	case -1:
		slices.SortStableFunc(pts, func(a, b geoPoint) int { return cmpFloat(b.dist, a.dist) })
	}
	pts = pts[:n]
	if storeKey != nil {
		ms := make([]types.ZMember, len(pts))
		for i, p := range pts {
			ms[i] = types.ZMember{Member: p.member, Score: p.score}
			if storeDist {
				ms[i].Score = p.dist / shape.Conv
			}
		}
		ev := "georadiusstore"
		if flags&geoSearchCmd != 0 {
			ev = "geosearchstore"
		}
		c.storeZMembers(storeKey, ms, ev)
		c.int(int64(len(pts)))
		return
	}
	opts := 0
	for _, on := range []bool{withDist, withHash, withCoord} {
		if on {
			opts++
		}
	}
	c.array(len(pts))
	for _, p := range pts {
		if opts > 0 {
			c.array(opts + 1)
		}
		c.bulk(p.member)
		if withDist {
			c.bulk(appendDistance(nil, p.dist/shape.Conv))
		}
		if withHash {
			c.int(int64(p.score))
		}
		if withCoord {
			c.array(2)
			c.coord(p.lon)
			c.coord(p.lat)
		}
	}
}

func cmpFloat(a, b float64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// parseGeoRadius parses "<radius> <unit>" into shape.
func parseGeoRadius(c *Client, args [][]byte, shape *geohash.Shape) bool {
	r, ok := parseGeoNumber(c, args[0], "radius")
	if !ok {
		return false
	}
	if r < 0 {
		c.err("ERR radius cannot be negative")
		return false
	}
	if shape.Conv, ok = parseGeoUnit(c, args[1]); !ok {
		return false
	}
	shape.Box, shape.Radius = false, r
	return true
}
