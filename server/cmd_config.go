package server

import (
	"errors"
	"fmt"
	"maps"
	"math"
	"strconv"
	"strings"
	"sync/atomic"

	"github.com/damselflydb/damselfly/shard/types"
)

// ParseMemory parses a memory amount with Redis's units: b, k (1000),
// kb (1024), m, mb, g, gb; case-insensitive.
func ParseMemory(s string) (int64, error) {
	t := strings.ToLower(strings.TrimSpace(s))
	mult := int64(1)
	for _, u := range []struct {
		suffix string
		mult   int64
	}{{"gb", 1 << 30}, {"mb", 1 << 20}, {"kb", 1 << 10}, {"g", 1e9}, {"m", 1e6}, {"k", 1e3}, {"b", 1}} {
		if strings.HasSuffix(t, u.suffix) {
			t, mult = strings.TrimSuffix(t, u.suffix), u.mult
			break
		}
	}
	n, err := strconv.ParseInt(t, 10, 64)
	if err != nil || n < 0 || (mult > 1 && n > (1<<63-1)/mult) {
		return 0, errors.New("argument must be a memory value")
	}
	return n * mult, nil
}

// immutable is the set of a parameter fixed at start whose CONFIG SET
// fails with Redis's words for it (a flag sets it, also from the config
// file).
func immutable(*Server, string) error { return errors.New("can't set immutable config") }

// configParam is one CONFIG parameter.
type configParam struct {
	get func(s *Server) string
	set func(s *Server, v string) error // nil: read-only at run time
}

func configParams() map[string]configParam {
	m := map[string]configParam{
		"requirepass": {
			get: func(s *Server) string { return s.cfg.requirePass() },
			set: func(s *Server, v string) error {
				s.cfg.mu.Lock()
				s.cfg.pass = v
				s.cfg.mu.Unlock()
				s.acl.users.SetDefaultPassword(v) // requirepass is the default user's password
				return nil
			},
		},
		"databases":      {get: func(s *Server) string { return strconv.Itoa(s.store.DBNum()) }},
		"disable-thp":    {get: func(s *Server) string { return yesNo(!s.limits.Load().HugePages) }, set: immutable},
		"port":           {get: func(s *Server) string { return strconv.Itoa(s.port) }},
		"protected-mode": boolParam(func(s *Server) *atomic.Bool { return &s.cfg.protectedMode }, nil),
		"proto-max-bulk-len": {
			get: func(s *Server) string { return strconv.FormatInt(s.cfg.protoMaxBulkLen.Load(), 10) },
			set: func(s *Server, v string) error {
				n, err := parseConfigMemory(v, 1024*1024)
				if err == nil {
					s.cfg.protoMaxBulkLen.Store(n)
				}
				return err
			},
		},
		"client-query-buffer-limit": {
			get: func(s *Server) string { return strconv.FormatInt(s.cfg.queryBufLimit.Load(), 10) },
			set: func(s *Server, v string) error {
				n, err := parseConfigMemory(v, minQueryBufferLimit)
				if err == nil {
					s.cfg.queryBufLimit.Store(n)
				}
				return err
			},
		},
		"client-output-buffer-limit": outLimitParam(),
		"timeout":                    {get: func(s *Server) string { return "0" }},
	}
	memoryParams(m)
	persistenceParams(m)
	limitParams(m)
	protectedParams(m)
	maxClientsParam(m)
	watchdogParam(m)
	keySaveDelayParam(m)
	dbDirsParam(m) // dbdirs.go
	aofParams(m)
	scriptingParams(m)
	aclParams(m)
	unixSocketParams(m)
	tlsParams(m)
	notifyParams(m)
	lfuParams(m)
	observeParams(m)
	trackingParams(m)
	masterAuthParams(m)
	return m
}

// memoryParams are maxmemory and its eviction policy.
func memoryParams(m map[string]configParam) {
	maps.Copy(m, map[string]configParam{
		"maxmemory": {
			get: func(s *Server) string { return strconv.FormatInt(s.cfg.maxMemory.Load(), 10) },
			set: func(s *Server, v string) error {
				n, err := ParseMemory(v)
				if err != nil {
					return err
				}
				s.cfg.maxMemory.Store(n)
				if n > 0 {
					heap, dataset := s.memoryParts(nil)
					s.usedMem.Store(heap + dataset)
					s.updateBudget(heap+dataset, dataset)
				}
				return nil
			},
		},
		"maxmemory-policy": {
			get: func(s *Server) string { return evictionPolicy(s.evict.policy.Load()).String() },
			set: func(s *Server, v string) error {
				p, err := parsePolicy(v)
				if err == nil {
					s.setPolicy(p)
				}
				return err
			},
		},
		"maxmemory-samples": {
			get: func(s *Server) string { return strconv.Itoa(int(s.evict.samples.Load())) },
			set: func(s *Server, v string) error {
				n, err := strconv.Atoi(v)
				if err != nil || n < 1 || n > 64 {
					return errors.New("argument must be between 1 and 64 inclusive")
				}
				s.evict.samples.Store(int32(n))
				return nil
			},
		},
	})
}

// persistenceParams are where and how often snapshots are written.
func persistenceParams(m map[string]configParam) {
	maps.Copy(m, map[string]configParam{
		"dir": {
			get: func(s *Server) string { s.cfg.mu.RLock(); defer s.cfg.mu.RUnlock(); return s.cfg.dir },
			set: func(s *Server, v string) error {
				if err := checkDir(v); err != nil {
					return err
				}
				s.cfg.mu.Lock()
				s.cfg.dir = v
				s.cfg.mu.Unlock()
				return nil
			},
		},
		"dbfilename": {
			get: func(s *Server) string { s.cfg.mu.RLock(); defer s.cfg.mu.RUnlock(); return s.cfg.dbfilename },
			set: func(s *Server, v string) error {
				if v == "" || strings.ContainsRune(v, '/') {
					return errors.New("dbfilename can't be a path, just a filename")
				}
				s.cfg.mu.Lock()
				s.cfg.dbfilename = v
				s.cfg.mu.Unlock()
				return nil
			},
		},
		"save": {
			get: func(s *Server) string { s.cfg.mu.RLock(); defer s.cfg.mu.RUnlock(); return s.cfg.save },
			set: func(s *Server, v string) error {
				if _, err := ParseSaveSchedule(v); err != nil {
					return err
				}
				s.cfg.mu.Lock()
				s.cfg.save = v
				s.cfg.mu.Unlock()
				return nil
			},
		},
		"rdbcompression":              boolParam(func(s *Server) *atomic.Bool { return &s.cfg.rdbCompression }, nil),
		"rdb-save-incremental-fsync":  boolParam(func(s *Server) *atomic.Bool { return &s.cfg.rdbIncFsync }, nil),
		"stop-writes-on-bgsave-error": boolParam(func(s *Server) *atomic.Bool { return &s.persist.stopWritesOnEr }, nil),
	})
}

// limitParams are the collection encoding thresholds (types.Limits), under
// their Redis 7.0 names and the older ziplist aliases. The set-max-listpack-*
// parameters are Redis 7.2's; their default 0 gives Redis 7.0's behaviour.
func limitParams(m map[string]configParam) {
	type lp struct {
		names  []string
		field  func(l *types.Limits) *int
		memory bool // accepts memory units, like Redis's MEMORY_CONFIG
		min    int64
		max    int64
	}
	for _, p := range []lp{
		{[]string{"hash-max-listpack-entries", "hash-max-ziplist-entries"}, func(l *types.Limits) *int { return &l.HashMaxListpackEntries }, false, 0, math.MaxInt64},
		{[]string{"hash-max-listpack-value", "hash-max-ziplist-value"}, func(l *types.Limits) *int { return &l.HashMaxListpackValue }, true, 0, math.MaxInt64},
		{[]string{"set-max-intset-entries"}, func(l *types.Limits) *int { return &l.SetMaxIntsetEntries }, false, 0, math.MaxInt64},
		{[]string{"set-max-listpack-entries"}, func(l *types.Limits) *int { return &l.SetMaxListpackEntries }, false, 0, math.MaxInt64},
		{[]string{"set-max-listpack-value"}, func(l *types.Limits) *int { return &l.SetMaxListpackValue }, true, 0, math.MaxInt64},
		{[]string{"zset-max-listpack-entries", "zset-max-ziplist-entries"}, func(l *types.Limits) *int { return &l.ZSetMaxListpackEntries }, false, 0, math.MaxInt64},
		{[]string{"zset-max-listpack-value", "zset-max-ziplist-value"}, func(l *types.Limits) *int { return &l.ZSetMaxListpackValue }, true, 0, math.MaxInt64},
		{[]string{"list-max-listpack-size", "list-max-ziplist-size"}, func(l *types.Limits) *int { return &l.ListMaxListpackSize }, false, math.MinInt32, math.MaxInt32},
		{[]string{"stream-node-max-bytes"}, func(l *types.Limits) *int { return &l.StreamNodeMaxBytes }, true, 0, math.MaxInt64},
		{[]string{"stream-node-max-entries"}, func(l *types.Limits) *int { return &l.StreamNodeMaxEntries }, false, 0, math.MaxInt64},
		{[]string{"hll-sparse-max-bytes"}, func(l *types.Limits) *int { return &l.HLLSparseMaxBytes }, true, 0, math.MaxInt64},
		{[]string{"list-compress-depth"}, func(l *types.Limits) *int { return &l.ListCompressDepth }, false, 0, math.MaxInt32},
	} {
		p := p
		param := configParam{
			get: func(s *Server) string { return strconv.Itoa(*p.field(s.limits.Load())) },
			set: func(s *Server, v string) error {
				var n int64
				if p.memory {
					var err error
					if n, err = ParseMemory(v); err != nil {
						return err
					}
				} else {
					var ok bool
					if n, ok = parseInt([]byte(v)); !ok {
						return errors.New("argument couldn't be parsed into an integer")
					}
				}
				if n < p.min || n > p.max {
					return fmt.Errorf("argument must be between %d and %d inclusive", p.min, p.max)
				}
				// Copy-on-write: commands hold a pointer to a consistent set.
				s.limitsMu.Lock()
				l := *s.limits.Load()
				*p.field(&l) = int(n)
				s.limits.Store(&l)
				s.limitsMu.Unlock()
				return nil
			},
		}
		for _, name := range p.names {
			m[name] = param
		}
	}
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

// boolParam is a yes/no parameter held in the atomic sel returns; after,
// if set, runs once a CONFIG SET stored a new value.
func boolParam(sel func(s *Server) *atomic.Bool, after func(s *Server, v bool)) configParam {
	return configParam{
		get: func(s *Server) string { return yesNo(sel(s).Load()) },
		set: func(s *Server, v string) error {
			x, err := parseYesNo(v)
			if err == nil {
				sel(s).Store(x)
				if after != nil {
					after(s, x)
				}
			}
			return err
		},
	}
}

func parseYesNo(v string) (bool, error) {
	switch strings.ToLower(v) {
	case "yes":
		return true, nil
	case "no":
		return false, nil
	}
	return false, errors.New("argument must be 'yes' or 'no'")
}

func cmdConfig(c *Client, args [][]byte) {
	params := c.srv.configParams
	switch lower(args[1]) {
	case "get":
		if len(args) < 3 {
			c.err("ERR wrong number of arguments for 'config|get' command")
			return
		}
		seen := map[string]bool{}
		var out []string
		for _, pat := range args[2:] {
			for _, name := range sortedKeys(params) {
				if !seen[name] && globMatch([]byte(strings.ToLower(string(pat))), []byte(name), true) {
					seen[name] = true
					out = append(out, name, params[name].get(c.srv))
				}
			}
		}
		c.mapHeader(len(out) / 2)
		for _, s := range out {
			c.bulkString(s)
		}
	case "set":
		if len(args) < 4 || len(args)%2 != 0 {
			c.err("ERR wrong number of arguments for 'config|set' command")
			return
		}
		for i := 2; i < len(args); i += 2 {
			name := lower(args[i])
			p, ok := params[name]
			if !ok || p.set == nil {
				c.err("ERR Unknown option or number of arguments for CONFIG SET - '" + sanitize(args[i], 128) + "'")
				return
			}
			if why := c.configSetDenied(name); why != "" {
				c.err("ERR CONFIG SET failed (possibly related to argument '" + name + "') - " + why)
				return
			}
		}
		for i := 2; i < len(args); i += 2 {
			name := lower(args[i])
			if err := params[name].set(c.srv, string(args[i+1])); err != nil {
				c.srv.tlsConfigRevert()
				c.err("ERR CONFIG SET failed (possibly related to argument '" + name + "') - " + err.Error())
				return
			}
		}
		if name, err := c.srv.tlsConfigApply(); err != nil {
			c.err("ERR CONFIG SET failed (possibly related to argument '" + name + "') - " + err.Error())
			return
		}
		c.ok()
	case "resetstat":
		c.srv.resetObserveStats() // cmdstats.go
		c.srv.resetNetStats()     // netstats.go
		c.srv.stats.connections.Store(0)
		c.srv.stats.rejected.Store(0)
		c.srv.stats.keyHits.Store(0)
		c.srv.stats.keyMisses.Store(0)
		c.ok()
	case "rewrite":
		c.configRewrite() // conffile.go
	case "help":
		c.array(1)
		c.simple("CONFIG <subcommand> [<arg> ...]. Subcommands are: GET <pattern>, SET <directive> <value>, RESETSTAT, HELP.")
	default:
		c.err("ERR unknown subcommand '" + sanitize(args[1], 128) + "'. Try CONFIG HELP.")
	}
}

func sortedKeys(m map[string]configParam) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sortStrings(out)
	return out
}
