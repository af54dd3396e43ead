package server

import (
	"testing"
	"time"

	"github.com/damselflydb/damselfly/memcache"
)

// BenchmarkNetStatsHook is what the network counters add to one read and
// one write batch of a client (netRead + netWrote), in thread CPU time.
func BenchmarkNetStatsHook(b *testing.B) {
	c := benchClient(b)
	benchCPU(b, func(int) {
		c.netRead(40)
		c.netWrote(5)
	})
}

// BenchmarkMemcachedObserve is what reporting one memcached GET costs the
// server (the mc_ counters and histogram; nobody monitoring, no SLOWLOG
// entry), plus the clock read the memcached side takes for it.
func BenchmarkMemcachedObserve(b *testing.B) {
	c := benchClient(b)
	o := c.srv.mcObs
	line := []byte("get key:1")
	benchCPU(b, func(int) {
		start := time.Now()
		ev := memcache.Observed{Cmd: memcache.CmdGet, Line: line, Duration: time.Since(start), Remote: "127.0.0.1:1"}
		o.Observe(&ev)
	})
}
