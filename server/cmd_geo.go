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

// geoQuery is a geo search's options as parsed: the shape searched and
// what to do with what it finds.
type geoQuery struct {
	shape                         geohash.Shape
	withDist, withHash, withCoord bool
	any, storeDist                bool
	sortDir                       int   // 0 none, 1 asc, -1 desc
	count                         int64 // 0: no COUNT
	storeKey                      []byte
	// GEOSEARCH's FROM... and BY... options seen (each pair exclusive)
	fromMember, fromLoc, byRadius, byBox bool
}

// geoSearch implements GEORADIUS, GEORADIUSBYMEMBER, their _RO forms,
// GEOSEARCH and GEOSEARCHSTORE, with Redis's argument order and errors.
func geoSearch(c *Client, args [][]byte, src int, flags int) {
	defer c.unlock(c.lockKeys(geoSearchKeys(args, src, flags)))
	z, bad := geoZSet(c, args[src])
	if bad {
		return
	}
	q, ok := parseGeoQuery(c, args, src, flags, z)
	if !ok {
		return
	}
	if z == nil {
		q.replyNoKey(c)
		return
	}
	pts := q.search(z)
	if len(pts) == 0 && q.storeKey == nil {
		c.array(0)
		return
	}
	if q.storeKey != nil {
		q.store(c, pts, flags)
		return
	}
	q.reply(c, pts)
}

// geoSearchKeys are the keys a geo search locks: the source, and the
// destination of GEOSEARCHSTORE. GEORADIUS's STORE/STOREDIST keys are
// found while parsing, but their shards must be locked with the source's:
// every argument that may be one is.
func geoSearchKeys(args [][]byte, src, flags int) [][]byte {
	keys := [][]byte{args[src]}
	if flags&geoSearchStore != 0 {
		keys = append(keys, args[1])
	}
	if flags&(geoCoords|geoMember) != 0 && flags&geoNoStore == 0 {
		for i := 2; i+1 < len(args); i++ {
			if eq(args[i], "store") || eq(args[i], "storedist") {
				keys = append(keys, args[i+1])
			}
		}
	}
	return keys
}

// parseGeoQuery parses a geo search's arguments in Redis's order (z, the
// source, nil when absent, gives FROMMEMBER and GEORADIUSBYMEMBER their
// centre), replying the error when they are bad.
func parseGeoQuery(c *Client, args [][]byte, src, flags int, z *types.ZSet) (q geoQuery, ok bool) {
	if flags&geoSearchStore != 0 {
		q.storeKey = args[1]
	}
	base := src + 1
	switch {
	case flags&geoCoords != 0:
		base = 6
		if q.shape.Lon, q.shape.Lat, ok = parseLonLat(c, args[2:4]); !ok {
			return q, false
		}
		if !parseGeoRadius(c, args[4:6], &q.shape) {
			return q, false
		}
	case flags&geoMember != 0:
		base = 5
		if z != nil {
			if !q.centreAt(c, z, args[2]) || !parseGeoRadius(c, args[3:5], &q.shape) {
				return q, false
			}
		}
	}
	for i := base; i < len(args); i++ {
		n, ok := q.parseOption(c, args, i, flags, z)
		if !ok {
			return q, false
		}
		i += n
	}
	return q, q.check(c, args[0], flags)
}

// centreAt puts the shape's centre on member's position.
func (q *geoQuery) centreAt(c *Client, z *types.ZSet, member []byte) bool {
	s, found := z.Score(member)
	if !found {
		c.err("ERR could not decode requested zset member")
		return false
	}
	q.shape.Lon, q.shape.Lat = geohash.Decode(s)
	return true
}

// parseOption parses the option at args[i] and returns how many
// arguments after it it took.
func (q *geoQuery) parseOption(c *Client, args [][]byte, i, flags int, z *types.ZSet) (int, bool) {
	rem := len(args) - i // arguments from i on
	search := flags&geoSearchCmd != 0
	switch a := args[i]; {
	case eq(a, "withdist"):
		q.withDist = true
	case eq(a, "withhash"):
		q.withHash = true
	case eq(a, "withcoord"):
		q.withCoord = true
	case eq(a, "any"):
		q.any = true
	case eq(a, "asc"):
		q.sortDir = 1
	case eq(a, "desc"):
		q.sortDir = -1
	case eq(a, "count") && rem > 1:
		n, ok := parseInt(args[i+1])
		if !ok {
			c.errNotInteger()
			return 0, false
		}
		if n <= 0 {
			c.err("ERR COUNT must be > 0")
			return 0, false
		}
		q.count = n
		return 1, true
	case (eq(a, "store") || eq(a, "storedist")) && rem > 1 && flags&geoNoStore == 0 && !search:
		q.storeKey = args[i+1]
		q.storeDist = len(a) == 9
		return 1, true
	case eq(a, "storedist") && search && flags&geoSearchStore != 0:
		q.storeDist = true
	case search:
		return q.parseSearchOption(c, args, i, z)
	default:
		c.errSyntax()
		return 0, false
	}
	return 0, true
}

// parseSearchOption parses GEOSEARCH's FROMMEMBER, FROMLONLAT, BYRADIUS
// and BYBOX.
func (q *geoQuery) parseSearchOption(c *Client, args [][]byte, i int, z *types.ZSet) (int, bool) {
	rem := len(args) - i
	var ok bool
	switch a := args[i]; {
	case eq(a, "frommember") && rem > 1 && !q.fromLoc:
		q.fromMember = true
		if z != nil && !q.centreAt(c, z, args[i+1]) {
			return 0, false
		}
		return 1, true
	case eq(a, "fromlonlat") && rem > 2 && !q.fromMember:
		if q.shape.Lon, q.shape.Lat, ok = parseLonLat(c, args[i+1:i+3]); !ok {
			return 0, false
		}
		q.fromLoc = true
		return 2, true
	case eq(a, "byradius") && rem > 2 && !q.byBox:
		if !parseGeoRadius(c, args[i+1:i+3], &q.shape) {
			return 0, false
		}
		q.byRadius = true
		return 2, true
	case eq(a, "bybox") && rem > 3 && !q.byRadius:
		w, ok := parseGeoNumber(c, args[i+1], "width")
		if !ok {
			return 0, false
		}
		h, ok := parseGeoNumber(c, args[i+2], "height")
		if !ok {
			return 0, false
		}
		if h < 0 || w < 0 {
			c.err("ERR height or width cannot be negative")
			return 0, false
		}
		if q.shape.Conv, ok = parseGeoUnit(c, args[i+3]); !ok {
			return 0, false
		}
		q.shape.Box, q.shape.Width, q.shape.Height = true, w, h
		q.byBox = true
		return 3, true
	}
	c.errSyntax()
	return 0, false
}

// check rejects option combinations Redis rejects, with its errors, and
// settles the order: COUNT without ANY sorts ascending.
func (q *geoQuery) check(c *Client, name []byte, flags int) bool {
	search := flags&geoSearchCmd != 0
	switch {
	case q.storeKey != nil && (q.withDist || q.withHash || q.withCoord):
		if flags&geoSearchStore != 0 {
			c.err("ERR GEOSEARCHSTORE is not compatible with WITHDIST, WITHHASH and WITHCOORD options")
		} else {
			c.err("ERR STORE option in GEORADIUS is not compatible with WITHDIST, WITHHASH and WITHCOORD options")
		}
		return false
	case search && !q.fromMember && !q.fromLoc:
		c.err("ERR exactly one of FROMMEMBER or FROMLONLAT can be specified for " + string(name))
		return false
	case search && !q.byRadius && !q.byBox:
		c.err("ERR exactly one of BYRADIUS and BYBOX can be specified for " + string(name))
		return false
	case q.any && q.count == 0:
		c.err("ERR the ANY argument requires COUNT argument")
		return false
	}
	return true
}

// replyNoKey answers a search of a missing key: nothing found, and a
// STORE destination deleted.
func (q *geoQuery) replyNoKey(c *Client) {
	if q.storeKey == nil {
		c.array(0)
		return
	}
	sh, h := c.srv.store.ShardOf(q.storeKey)
	if e, found := sh.Lookup(c.db, h, q.storeKey, now()); found {
		sh.DB(c.db).Delete(&e)
		c.notify(kseGeneric, "del", q.storeKey)
	}
	c.int(0)
}

// search returns the members of z within the shape, sorted and cut to
// COUNT as asked (with ANY, the search stops at COUNT found).
func (q *geoQuery) search(z *types.ZSet) []geoPoint {
	sortDir := q.sortDir
	if q.count != 0 && sortDir == 0 && !q.any {
		sortDir = 1
	}
	limit := int64(0)
	if q.any {
		limit = q.count
	}
	var pts []geoPoint
	for _, r := range q.shape.Ranges() {
		if limit > 0 && int64(len(pts)) >= limit {
			break
		}
		z.RangeByScore(types.ScoreBound{Value: float64(r[0])}, types.ScoreBound{Value: float64(r[1]), Excl: true}, false, 0, -1,
			func(m []byte, s float64) bool {
				if lon, lat, dist, in := q.shape.Within(s); in {
					pts = append(pts, geoPoint{member: slices.Clone(m), lon: lon, lat: lat, dist: dist, score: s})
				}
				return limit == 0 || int64(len(pts)) < limit
			})
	}
	n := len(pts)
	if q.count != 0 && int64(n) > q.count {
		n = int(q.count)
	}
	switch sortDir {
	case 1:
		slices.SortStableFunc(pts, func(a, b geoPoint) int { return cmpFloat(a.dist, b.dist) })
	case -1:
		slices.SortStableFunc(pts, func(a, b geoPoint) int { return cmpFloat(b.dist, a.dist) })
	}
	return pts[:n]
}

// store writes the points as a sorted set at the STORE key (scored by
// position, or by distance with STOREDIST) and replies their number.
func (q *geoQuery) store(c *Client, pts []geoPoint, flags int) {
	ms := make([]types.ZMember, len(pts))
	for i, p := range pts {
		ms[i] = types.ZMember{Member: p.member, Score: p.score}
		if q.storeDist {
			ms[i].Score = p.dist / q.shape.Conv
		}
	}
	ev := "georadiusstore"
	if flags&geoSearchCmd != 0 {
		ev = "geosearchstore"
	}
	c.storeZMembers(q.storeKey, ms, ev).raise(c) // before the reply, as Redis
	c.int(int64(len(pts)))
}

// reply sends the points, each with the WITH... details asked.
func (q *geoQuery) reply(c *Client, pts []geoPoint) {
	opts := 0
	for _, on := range []bool{q.withDist, q.withHash, q.withCoord} {
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
		if q.withDist {
			c.bulk(appendDistance(nil, p.dist/q.shape.Conv))
		}
		if q.withHash {
			c.int(int64(p.score))
		}
		if q.withCoord {
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
