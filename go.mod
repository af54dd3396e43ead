module github.com/damselflydb/damselfly

go 1.26.8

require (
	github.com/alecthomas/kong v1.17.0
	github.com/bradfitz/gomemcache v0.0.0-20260422231931-4d751bb6e37c
	github.com/hdt3213/rdb v1.3.2
	github.com/klauspost/compress v1.20.4
	github.com/prometheus/client_model v0.6.2
	github.com/prometheus/common v0.66.1
	github.com/redis/go-redis/v9 v9.23.0
	github.com/tidwall/redcon v1.6.4
	github.com/youmark/pkcs8 v0.0.0-20240726163527-a2c0da244d78
	github.com/yuin/gopher-lua v1.1.2
	github.com/zeebo/xxh3 v1.1.0
	golang.org/x/sys v0.48.0
)

require (
	github.com/cespare/xxhash/v2 v2.3.0 // indirect
	github.com/klauspost/cpuid/v2 v2.4.0 // indirect
	github.com/kr/pretty v0.3.1 // indirect
	github.com/munnerz/goautoneg v0.0.0-20191010083416-a7dc8b61c822 // indirect
	github.com/tidwall/btree v1.1.0 // indirect
	github.com/tidwall/match v1.1.1 // indirect
	go.uber.org/atomic v1.12.0 // indirect
	go.yaml.in/yaml/v2 v2.4.2 // indirect
	golang.org/x/crypto v0.22.0 // indirect
	google.golang.org/protobuf v1.36.8 // indirect
)
