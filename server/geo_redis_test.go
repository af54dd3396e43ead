package server

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/redis/go-redis/v9"
)

// TestGeoAgainstRedis adds the same random points to Damselfly and a real
// redis-server (identical sorted sets are required) and runs random
// searches of every form on both, requiring identical replies: members,
// order (sorted and unsorted), distances, hashes and coordinates.
func TestGeoAgainstRedis(t *testing.T) {
	raddr := startRedis(t)
	s := startServer(t)
	ctx := context.Background()
	d := newClient(t, s)
	r := redis.NewClient(&redis.Options{Addr: raddr, Protocol: 2})
	t.Cleanup(func() { r.Close() })
	both := func(args ...any) any {
		t.Helper()
		dv, derr := d.Do(ctx, args...).Result()
		rv, rerr := r.Do(ctx, args...).Result()
		if fmt.Sprint(dv, derr) != fmt.Sprint(rv, rerr) {
			t.Fatalf("%v:\n damselfly %v %v\n     redis %v %v", args, dv, derr, rv, rerr)
		}
		return dv
	}
	rng := rand.New(rand.NewPCG(7, 8))
	centres := [][2]float64{{13.4, 38.1}, {-0.1, 51.5}, {179.9, -16.5}, {-73.9, 40.7}, {18.9, 69.6}, {0, 0}}
	for i := 0; i < 400; i++ {
		c := centres[i%len(centres)]
		lon := math.Max(-180, math.Min(180, c[0]+rng.NormFloat64()*2))
		lat := math.Max(-85, math.Min(85, c[1]+rng.NormFloat64()*2))
		both("GEOADD", "pts", lon, lat, fmt.Sprint("p", i))
	}
	both("ZRANGE", "pts", 0, -1, "WITHSCORES")
	for i := 0; i < 150; i++ {
		c := centres[rng.IntN(len(centres))]
		lon := math.Max(-180, math.Min(180, c[0]+rng.NormFloat64()))
		lat := math.Max(-85, math.Min(85, c[1]+rng.NormFloat64()))
		unit := []string{"m", "km", "mi", "ft"}[rng.IntN(4)]
		size := map[string]float64{"m": 300000, "km": 300, "mi": 200, "ft": 1000000}[unit] * rng.Float64()
		args := []any{"GEOSEARCH", "pts"}
		if rng.IntN(3) == 0 {
			args = append(args, "FROMMEMBER", fmt.Sprint("p", rng.IntN(400)))
		} else {
			args = append(args, "FROMLONLAT", lon, lat)
		}
		if rng.IntN(2) == 0 {
			args = append(args, "BYRADIUS", size, unit)
		} else {
			args = append(args, "BYBOX", size, size*rng.Float64()*2, unit)
		}
		switch rng.IntN(4) {
		case 0:
			args = append(args, "ASC")
		case 1:
			args = append(args, "DESC")
		case 2:
			args = append(args, "COUNT", 1+rng.IntN(10))
		}
		args = append(args, "WITHDIST", "WITHCOORD", "WITHHASH")
		both(args...)
		both("GEORADIUS", "pts", lon, lat, size, unit, "WITHDIST")
		both("GEORADIUSBYMEMBER_RO", "pts", fmt.Sprint("p", rng.IntN(400)), size, unit, "ASC", "WITHCOORD")
	}
	for i := 0; i < 400; i += 37 {
		both("GEODIST", "pts", fmt.Sprint("p", i), fmt.Sprint("p", (i*7+3)%400), "km")
		both("GEOHASH", "pts", fmt.Sprint("p", i))
		both("GEOPOS", "pts", fmt.Sprint("p", i))
	}
	// STOREDIST keeps full-precision distances: equal members and order,
	// scores within a few units in the last place (Go's and the C
	// library's sin/cos/asin may round differently).
	both("GEORADIUS", "pts", 13.4, 38.1, 200, "km", "STOREDIST", "dists")
	dz, _ := d.ZRangeWithScores(ctx, "dists", 0, -1).Result()
	rz, _ := r.ZRangeWithScores(ctx, "dists", 0, -1).Result()
	if len(dz) != len(rz) || len(dz) == 0 {
		t.Fatalf("STOREDIST: %d members here, %d in Redis", len(dz), len(rz))
	}
	for i := range dz {
		if dz[i].Member != rz[i].Member || math.Abs(dz[i].Score-rz[i].Score) > 1e-12*math.Max(1, rz[i].Score) {
			t.Fatalf("STOREDIST member %d: %v here, %v in Redis", i, dz[i], rz[i])
		}
	}
}
