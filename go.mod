module github.com/damselflydb/damselfly

go 1.26.8

require (
	github.com/alecthomas/kong v1.17.0
	github.com/bradfitz/gomemcache v0.0.0-20260422231931-4d751bb6e37c
	github.com/hdt3213/rdb v1.3.2
	github.com/redis/go-redis/v9 v9.23.0
	github.com/tidwall/redcon v1.6.4
	github.com/yuin/gopher-lua v1.1.2
	github.com/zeebo/xxh3 v1.1.0
	golang.org/x/sys v0.48.0
)

require (
	github.com/cespare/xxhash/v2 v2.3.0 // indirect
	github.com/klauspost/cpuid/v2 v2.4.0 // indirect
	github.com/tidwall/btree v1.1.0 // indirect
	github.com/tidwall/match v1.1.1 // indirect
	go.uber.org/atomic v1.12.0 // indirect
)
