package geohash

import (
	"math"
	"testing"
)

// Scores, positions and strings below were produced by redis-server 7.0
// (see server/testdata/geo.txt).
func TestRedisValues(t *testing.T) {
	bits, ok := Encode(13.361389, 38.115556)
	if !ok || bits != 3479099956230698 {
		t.Fatalf("Encode(Palermo) = %d %v", bits, ok)
	}
	if s := String(float64(bits)); s != "sqc8b49rny0" {
		t.Fatalf("String = %s", s)
	}
	lon, lat := Decode(float64(bits))
	if math.Abs(lon-13.361389) > 1e-5 || math.Abs(lat-38.115556) > 1e-5 {
		t.Fatalf("Decode = %v %v", lon, lat)
	}
	if _, ok := Encode(181, 0); ok {
		t.Fatal("Encode accepted longitude 181")
	}
	if _, ok := Encode(0, 85.1); ok {
		t.Fatal("Encode accepted latitude 85.1")
	}
}

// TestRangesCoverCircle checks, for many centres and radii, that every
// point within the radius has a score inside one of the ranges scanned.
func TestRangesCoverCircle(t *testing.T) {
	for _, c := range [][3]float64{{0, 0, 1000}, {13.4, 38.1, 200000}, {179.9, 10, 50000}, {10, 80, 600000}, {-70, -60, 5}} {
		s := Shape{Lon: c[0], Lat: c[1], Radius: c[2], Conv: 1}
		ranges := s.Ranges()
		for i := 0; i < 2000; i++ {
			ang := float64(i) * 2 * math.Pi / 2000
			frac := float64(i%10) / 10
			dlat := c[2] * frac * math.Sin(ang) / 111320
			dlon := c[2] * frac * math.Cos(ang) / (111320 * math.Cos(c[1]*math.Pi/180))
			lon, lat := c[0]+dlon, c[1]+dlat
			bits, ok := Encode(lon, lat)
			if !ok {
				continue
			}
			if _, _, _, in := s.Within(float64(bits)); !in {
				continue
			}
			covered := false
			for _, r := range ranges {
				covered = covered || (bits >= r[0] && bits < r[1])
			}
			if !covered {
				t.Fatalf("centre %v: point %v,%v inside the radius but in no range", c, lon, lat)
			}
		}
	}
}
