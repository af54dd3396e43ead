package replication_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// dataWorkload writes with the bitmap, HyperLogLog, GEO and SORT commands,
// including the ones Damselfly changes in place (SETBIT, BITFIELD, dense
// PFADD, PFCOUNT's cache) and the ones it replicates rewritten (GEOADD as
// ZADD).
func dataWorkload(t *testing.T, c *redis.Client) {
	t.Helper()
	ctx := context.Background()
	do := func(args ...any) {
		t.Helper()
		if err := c.Do(ctx, args...).Err(); err != nil && err != redis.Nil {
			t.Fatalf("%v: %v", args, err)
		}
	}
	for i := 0; i < 200; i++ {
		do("SETBIT", "bits", i*37%1000, i%2)
		do("BITFIELD", "bf", "OVERFLOW", "SAT", "INCRBY", "i8", i%50, i*3, "SET", "u4", "#3", i)
	}
	do("BITOP", "XOR", "bx", "bits", "bf")
	do("SET", "ttlbits", "abc", "EX", 1000)
	do("SETBIT", "ttlbits", 100, 1)
	for i := 0; i < 3000; i++ {
		do("PFADD", "hll", fmt.Sprint("e", i))
		if i%500 == 0 {
			do("PFCOUNT", "hll")
		}
	}
	do("PFADD", "small", "a", "b", "c")
	do("PFCOUNT", "small")
	do("PFMERGE", "merged", "small", "hll")
	do("PFCOUNT", "hll")
	do("PFCOUNT", "merged")
	for i := 0; i < 100; i++ {
		do("GEOADD", "geo", float64(i%20)-10+0.123, float64(i%15)+30.456, fmt.Sprint("p", i))
	}
	do("GEOADD", "geo", "XX", "CH", 1.5, 2.5, "p1")
	do("GEOSEARCHSTORE", "near", "geo", "FROMLONLAT", 0, 35, "BYRADIUS", 500, "km", "ASC", "COUNT", 20)
	do("GEORADIUS", "geo", 0, 35, 800, "km", "STORE", "near2")
	do("RPUSH", "ids", 3, 1, 2)
	do("MSET", "w_1", 30, "w_2", 10, "w_3", 20)
	do("SORT", "ids", "BY", "w_*", "STORE", "sorted")
	do("SADD", "ns", "c", "a", "b")
	do("SORT", "ns", "BY", "nosort", "STORE", "sorted2")
}

// TestDataCommandsReplicateWithRedis: a redis-server replica of Damselfly
// and a Damselfly replica of redis-server end with the primary's exact
// dataset (DEBUG DIGEST) after the bit, HyperLogLog, GEO and SORT workload,
// part carried by the full sync and part by the stream.
func TestDataCommandsReplicateWithRedis(t *testing.T) {
	ctx := context.Background()
	for _, ourPrimary := range []bool{true, false} {
		name := "redis-replica-of-damselfly"
		if !ourPrimary {
			name = "damselfly-replica-of-redis"
		}
		t.Run(name, func(t *testing.T) {
			var paddr string
			if ourPrimary {
				paddr = startServer(t).Addr()
			} else {
				paddr = redisServer(t)
			}
			pc := protocol2(t, paddr)
			pc.Do(ctx, "PFADD", "pre", "x", "y")
			pc.Do(ctx, "SETBIT", "prebits", 77, 1)
			pc.Do(ctx, "GEOADD", "pregeo", 13.361389, 38.115556, "Palermo")
			var rc *redis.Client
			if ourPrimary {
				h, port := hostPort(t, paddr)
				rc = protocol2(t, redisServer(t, "--replicaof", h, port))
			} else {
				rc = protocol2(t, startServer(t).Addr())
				replicaOf(t, rc, paddr)
			}
			waitFor(t, 10*time.Second, "the replica link", func() bool { return info(rc, "replication")["master_link_status"] == "up" })
			dataWorkload(t, pc)
			waitConverged(t, pc, rc)
			for _, k := range []string{"hll", "merged", "bits", "bf", "geo", "sorted", "sorted2"} {
				a, _ := pc.Dump(ctx, k).Result()
				b, _ := rc.Dump(ctx, k).Result()
				if a == "" || b == "" {
					t.Fatalf("%s missing: primary %d bytes, replica %d bytes", k, len(a), len(b))
				}
			}
		})
	}
}
