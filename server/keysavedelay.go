package server

import (
	"errors"
	"strconv"
	"time"
)

// rdb-key-save-delay, as in Redis: microseconds a save sleeps per key it
// writes (0, the default, or less is none). Redis's test suite uses it to keep a
// background save or a full sync running while clients write; ours does
// too. The sleep happens outside the shard locks, so it slows only the save.

func (s *Server) keySaveDelay() time.Duration {
	return time.Duration(max(s.keySaveDelayUs.Load(), 0)) * time.Microsecond
}

func keySaveDelayParam(m map[string]configParam) {
	m["rdb-key-save-delay"] = configParam{
		get: func(s *Server) string { return strconv.FormatInt(s.keySaveDelayUs.Load(), 10) },
		set: func(s *Server, v string) error {
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil {
				return errors.New("argument couldn't be parsed into an integer")
			}
			if n < -1<<31 || n > 1<<31-1 {
				return errors.New("argument must be between -2147483648 and 2147483647 inclusive")
			}
			s.keySaveDelayUs.Store(n)
			return nil
		},
	}
}
