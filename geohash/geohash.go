// Package geohash implements the geometry of Redis's GEO commands: the
// 52-bit interleaved geohash Redis stores as a sorted-set score, its
// decoding, haversine distances on Redis's earth radius, the standard
// 11-character geohash string, and the nine-box search area Redis scans
// for GEOSEARCH and GEORADIUS.
//
// Invariants:
//   - Scores are identical to Redis's for the same coordinates, and
//     decoding a score gives Redis's coordinates bit for bit: only
//     IEEE-754 double operations in Redis's order are used, with explicit
//     conversions so no multiply-add is fused.
//   - The search boxes and their order are Redis's, so unsorted results
//     come back in Redis's order.
//   - Distances use Go's math.Sin/Cos/Asin, which may differ from the C
//     library's in the last bit; replies round distances to 4 decimals.
package geohash

import "math"

const (
	LatMin  = -85.05112878
	LatMax  = 85.05112878
	LonMin  = -180.0
	LonMax  = 180.0
	StepMax = 26 // 52 bits

	earthRadius = 6372797.560856 // meters
	mercatorMax = 20037726.37
)

// degToRad is M_PI/180 rounded to a double, as C computes it.
func degToRad() float64 {
	pi := math.Pi
	return pi / 180
}

// Hash is a geohash of step*2 bits.
type Hash struct {
	Bits uint64
	Step uint8
}

func (h Hash) zero() bool { return h.Bits == 0 && h.Step == 0 }

type area struct{ lonMin, lonMax, latMin, latMax float64 }

func spread(v uint32) uint64 {
	x := uint64(v)
	x = (x | x<<16) & 0x0000FFFF0000FFFF
	x = (x | x<<8) & 0x00FF00FF00FF00FF
	x = (x | x<<4) & 0x0F0F0F0F0F0F0F0F
	x = (x | x<<2) & 0x3333333333333333
	x = (x | x<<1) & 0x5555555555555555
	return x
}

func squeeze(x uint64) uint32 {
	x &= 0x5555555555555555
	x = (x | x>>1) & 0x3333333333333333
	x = (x | x>>2) & 0x0F0F0F0F0F0F0F0F
	x = (x | x>>4) & 0x00FF00FF00FF00FF
	x = (x | x>>8) & 0x0000FFFF0000FFFF
	x = (x | x>>16) & 0x00000000FFFFFFFF
	return uint32(x)
}

// encode interleaves the fixed-point offsets of lat (even bits) and lon
// (odd bits) within the given ranges; ok is false outside Redis's limits.
func encode(lonMin, lonMax, latMin, latMax, lon, lat float64, step uint8) (Hash, bool) {
	if lon > LonMax || lon < LonMin || lat > LatMax || lat < LatMin {
		return Hash{}, false
	}
	if lat < latMin || lat > latMax || lon < lonMin || lon > lonMax {
		return Hash{}, false
	}
	latOff := (lat - latMin) / (latMax - latMin)
	lonOff := (lon - lonMin) / (lonMax - lonMin)
	scale := float64(uint64(1) << step)
	latOff *= scale
	lonOff *= scale
	return Hash{Bits: spread(uint32(latOff)) | spread(uint32(lonOff))<<1, Step: step}, true
}

func decode(lonMin, lonMax, latMin, latMax float64, h Hash) area {
	ilat := squeeze(h.Bits)
	ilon := squeeze(h.Bits >> 1)
	latScale := latMax - latMin
	lonScale := lonMax - lonMin
	div := float64(uint64(1) << h.Step)
	return area{
		latMin: latMin + float64(float64(float64(ilat)*1.0/div)*latScale),
		latMax: latMin + float64(float64(float64(ilat+1)*1.0/div)*latScale),
		lonMin: lonMin + float64(float64(float64(ilon)*1.0/div)*lonScale),
		lonMax: lonMin + float64(float64(float64(ilon+1)*1.0/div)*lonScale),
	}
}

func decodeWGS84(h Hash) area { return decode(LonMin, LonMax, LatMin, LatMax, h) }

// Encode returns the 52-bit score of a point, or false when the point is
// outside longitude -180..180, latitude -85.05112878..85.05112878.
func Encode(lon, lat float64) (uint64, bool) {
	h, ok := encode(LonMin, LonMax, LatMin, LatMax, lon, lat, StepMax)
	return h.Bits, ok
}

// Decode returns the point a score stands for (the centre of its cell).
func Decode(score float64) (lon, lat float64) {
	a := decodeWGS84(Hash{Bits: uint64(score), Step: StepMax})
	lon = (a.lonMin + a.lonMax) / 2
	lon = min(max(lon, LonMin), LonMax)
	lat = (a.latMin + a.latMax) / 2
	lat = min(max(lat, LatMin), LatMax)
	return lon, lat
}

// String returns the 11-character standard geohash of a score (the point
// re-encoded with latitude range -90..90; the 11th character is always
// '0' since only 52 bits exist).
func String(score float64) string {
	const alphabet = "0123456789bcdefghjkmnpqrstuvwxyz"
	lon, lat := Decode(score)
	h, _ := encode(-180, 180, -90, 90, lon, lat, StepMax)
	var buf [11]byte
	for i := 0; i < 10; i++ {
		buf[i] = alphabet[(h.Bits>>(52-(i+1)*5))&0x1f]
	}
	buf[10] = alphabet[0]
	return string(buf[:])
}

// latDistance is the distance along a meridian.
func latDistance(lat1, lat2 float64) float64 {
	dr := degToRad()
	return earthRadius * math.Abs(float64(lat2*dr)-float64(lat1*dr))
}

// Distance is the haversine distance in meters between two points.
func Distance(lon1, lat1, lon2, lat2 float64) float64 {
	dr := degToRad()
	lon1r, lon2r := float64(lon1*dr), float64(lon2*dr)
	v := math.Sin((lon2r - lon1r) / 2)
	if v == 0 {
		return latDistance(lat1, lat2)
	}
	lat1r, lat2r := float64(lat1*dr), float64(lat2*dr)
	u := math.Sin((lat2r - lat1r) / 2)
	a := float64(u*u) + float64(float64(float64(math.Cos(lat1r)*math.Cos(lat2r))*v)*v)
	return 2.0 * earthRadius * math.Asin(math.Sqrt(a))
}

// Shape is a search area: a circle of Radius or a Width x Height box
// around (Lon, Lat); sizes are in a unit of Conv meters.
type Shape struct {
	Lon, Lat      float64
	Box           bool
	Radius        float64
	Width, Height float64
	Conv          float64
}

// Within decodes a score and reports whether its point lies in the shape,
// with its distance (meters) from the centre.
func (s *Shape) Within(score float64) (lon, lat, dist float64, ok bool) {
	lon, lat = Decode(score)
	if !s.Box {
		r := float64(s.Radius * s.Conv)
		// A great circle is never shorter than its latitude difference:
		// points clearly farther than that (beyond a margin far above any
		// rounding) skip the trigonometry and are outside in Redis too.
		if latDistance(lat, s.Lat) > r*(1+1e-9)+1e-6 {
			return lon, lat, 0, false
		}
		dist = Distance(s.Lon, s.Lat, lon, lat)
		return lon, lat, dist, dist <= r
	}
	w, h := float64(s.Width*s.Conv), float64(s.Height*s.Conv)
	if latDistance(lat, s.Lat) > h/2 {
		return lon, lat, 0, false
	}
	if Distance(lon, lat, s.Lon, lat) > w/2 {
		return lon, lat, 0, false
	}
	return lon, lat, Distance(s.Lon, s.Lat, lon, lat), true
}

// boundingBox returns min lon, min lat, max lon, max lat of the shape.
func (s *Shape) boundingBox() (float64, float64, float64, float64) {
	dr := degToRad()
	height, width := float64(s.Conv*s.Radius), float64(s.Conv*s.Radius)
	if s.Box {
		height, width = float64(s.Conv*(s.Height/2)), float64(s.Conv*(s.Width/2))
	}
	latDelta := height / earthRadius / dr
	top := width / earthRadius / math.Cos(float64((s.Lat+latDelta)*dr)) / dr
	bottom := width / earthRadius / math.Cos(float64((s.Lat-latDelta)*dr)) / dr
	if s.Lat < 0 {
		return s.Lon - bottom, s.Lat - latDelta, s.Lon + bottom, s.Lat + latDelta
	}
	return s.Lon - top, s.Lat - latDelta, s.Lon + top, s.Lat + latDelta
}

func estimateSteps(meters, lat float64) uint8 {
	if meters == 0 {
		return 26
	}
	step := 1
	for meters < mercatorMax {
		meters *= 2
		step++
	}
	step -= 2
	if lat > 66 || lat < -66 {
		step--
		if lat > 80 || lat < -80 {
			step--
		}
	}
	return uint8(min(max(step, 1), 26))
}

func moveX(h Hash, d int) Hash {
	if d == 0 {
		return h
	}
	x := h.Bits & 0xaaaaaaaaaaaaaaaa
	y := h.Bits & 0x5555555555555555
	zz := uint64(0x5555555555555555) >> (64 - uint(h.Step)*2)
	if d > 0 {
		x += zz + 1
	} else {
		x |= zz
		x -= zz + 1
	}
	x &= 0xaaaaaaaaaaaaaaaa >> (64 - uint(h.Step)*2)
	return Hash{Bits: x | y, Step: h.Step}
}

func moveY(h Hash, d int) Hash {
	if d == 0 {
		return h
	}
	x := h.Bits & 0xaaaaaaaaaaaaaaaa
	y := h.Bits & 0x5555555555555555
	zz := uint64(0xaaaaaaaaaaaaaaaa) >> (64 - uint(h.Step)*2)
	if d > 0 {
		y += zz + 1
	} else {
		y |= zz
		y -= zz + 1
	}
	y &= 0x5555555555555555 >> (64 - uint(h.Step)*2)
	return Hash{Bits: x | y, Step: h.Step}
}

// Boxes returns the geohash boxes to scan, in Redis's order: the centre,
// north, south, east, west, north-east, north-west, south-east,
// south-west, with boxes that cannot hold a match left out (zero).
func (s *Shape) Boxes() [9]Hash {
	minLon, minLat, maxLon, maxLat := s.boundingBox()
	meters := s.Radius
	if s.Box {
		meters = math.Sqrt(float64((s.Width/2)*(s.Width/2)) + float64((s.Height/2)*(s.Height/2)))
	}
	meters *= s.Conv
	step := estimateSteps(meters, s.Lat)
	var hash Hash
	var nb [8]Hash // n s e w ne nw se sw
	var ar area
	compute := func() {
		hash, _ = encode(LonMin, LonMax, LatMin, LatMax, s.Lon, s.Lat, step)
		nb = [8]Hash{moveY(hash, 1), moveY(hash, -1), moveX(hash, 1), moveX(hash, -1),
			moveY(moveX(hash, 1), 1), moveY(moveX(hash, -1), 1), moveY(moveX(hash, 1), -1), moveY(moveX(hash, -1), -1)}
		ar = decodeWGS84(hash)
	}
	compute()
	// A step too fine for the edges of the area: one level coarser.
	if step > 1 && (decodeWGS84(nb[0]).latMax < maxLat || decodeWGS84(nb[1]).latMin > minLat ||
		decodeWGS84(nb[2]).lonMax < maxLon || decodeWGS84(nb[3]).lonMin > minLon) {
		step--
		compute()
	}
	if step >= 2 {
		if ar.latMin < minLat {
			nb[1], nb[7], nb[6] = Hash{}, Hash{}, Hash{}
		}
		if ar.latMax > maxLat {
			nb[0], nb[4], nb[5] = Hash{}, Hash{}, Hash{}
		}
		if ar.lonMin < minLon {
			nb[3], nb[7], nb[5] = Hash{}, Hash{}, Hash{}
		}
		if ar.lonMax > maxLon {
			nb[2], nb[6], nb[4] = Hash{}, Hash{}, Hash{}
		}
	}
	return [9]Hash{hash, nb[0], nb[1], nb[2], nb[3], nb[4], nb[5], nb[6], nb[7]}
}

// Ranges returns the score ranges [min, max) to scan for the shape, in
// Redis's order, skipping empty boxes and a box equal to the one scanned
// just before it.
func (s *Shape) Ranges() [][2]uint64 {
	boxes := s.Boxes()
	var out [][2]uint64
	last := -1
	for i, b := range boxes {
		if b.zero() {
			continue
		}
		if last >= 0 && b == boxes[last] {
			continue
		}
		lo := b.Bits << (52 - uint(b.Step)*2)
		hi := (b.Bits + 1) << (52 - uint(b.Step)*2)
		out = append(out, [2]uint64{lo, hi})
		last = i
	}
	return out
}
