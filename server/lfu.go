package server

// LFU eviction (maxmemory-policy allkeys-lfu / volatile-lfu) and OBJECT
// FREQ. The counter itself (Redis's logarithmic 8-bit counter sharing the
// 24-bit access field with the LRU clock) lives in the shard package
// (shard/lfu.go); here are the policy switch and the configuration.

import (
	"errors"
	"strconv"
)

func (p evictionPolicy) lfu() bool { return p == allKeysLFU || p == volatileLFU }

// setPolicy switches maxmemory-policy and turns the shards' LFU accounting
// on exactly while an LFU policy is selected.
func (s *Server) setPolicy(p evictionPolicy) {
	s.evict.policy.Store(int32(p))
	logFactor, decay := s.store.LFUParams()
	s.store.SetLFU(p.lfu(), logFactor, decay)
}

func (s *Server) lfuOn() bool { return evictionPolicy(s.evict.policy.Load()).lfu() }

// lfuParams are lfu-log-factor (default 10) and lfu-decay-time (default 1
// minute), both 0..INT_MAX as in Redis.
func lfuParams(m map[string]configParam) {
	param := func(get func(logFactor, decay int) int, set func(logFactor, decay *int, v int)) configParam {
		return configParam{
			get: func(s *Server) string { return strconv.Itoa(get(s.store.LFUParams())) },
			set: func(s *Server, v string) error {
				n, ok := parseInt([]byte(v))
				if !ok {
					return errors.New("argument couldn't be parsed into an integer")
				}
				if n < 0 || n > 1<<31-1 {
					return errors.New("argument must be between 0 and 2147483647 inclusive")
				}
				lf, dt := s.store.LFUParams()
				set(&lf, &dt, int(n))
				s.store.SetLFU(s.lfuOn(), lf, dt)
				return nil
			},
		}
	}
	m["lfu-log-factor"] = param(func(lf, _ int) int { return lf }, func(lf, _ *int, v int) { *lf = v })
	m["lfu-decay-time"] = param(func(_, dt int) int { return dt }, func(_, dt *int, v int) { *dt = v })
}
