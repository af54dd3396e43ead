#!/usr/bin/env bash
# Regenerates the RDB files in this folder with a real redis-server.
#
#   ./testdata/make-dumps.sh            (needs redis-server and redis-cli on PATH)
#
# It writes redis-7.0-all-types.commands (the exact commands sent, one per
# line; the Go tests replay them to know the expected contents), starts
# redis-server on a temporary directory and a random loopback port, runs the
# commands, SAVEs and copies the dump to redis-7.0-all-types.rdb.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
tmp=$(mktemp -d)
port=$((20000 + RANDOM % 20000))
pid=
cleanup() {
	[ -n "$pid" ] && kill "$pid" 2>/dev/null && wait "$pid" 2>/dev/null || true
	rm -rf "$tmp"
}
trap cleanup EXIT

cmds="$here/redis-7.0-all-types.commands"
{
	echo "SELECT 0"
	# strings: embstr, int, LZF-compressible, long raw (not compressible)
	echo "SET str:embstr hello-world"
	echo "SET str:int 12345"
	echo "SET str:neg -987654"
	echo "SET str:bigint 1234567890123"
	printf 'SET str:lzf %s\n' "$(printf 'abcdefgh%.0s' $(seq 1 40))"
	printf 'SET str:raw %s\n' "$(for i in $(seq 1 30); do printf '%x' $((i * 7919 % 65521)); done)"
	# lists: small (one listpack node) and large (many nodes)
	echo "RPUSH list:small a 1 bb -2 ccc 300000 $(printf 'x%.0s' $(seq 1 70))"
	for i in $(seq 1 15); do
		printf 'RPUSH list:large'
		for j in $(seq 1 100); do printf ' item-%d-%d' "$i" "$j"; done
		echo
	done
	# sets: intset (16/32/64-bit members), small strings, big hashtable
	echo "SADD set:intset 1 2 3 -5 100000 9000000000"
	echo "SADD set:small a b c"
	printf 'SADD set:big'
	for j in $(seq 1 200); do printf ' member-%d' "$j"; done
	echo
	# hashes: listpack, hashtable by count, hashtable by value size
	echo "HSET hash:small f1 v1 f2 2 f3 v3"
	printf 'HSET hash:big'
	for j in $(seq 1 200); do printf ' field-%d value-%d' "$j" "$j"; done
	echo
	echo "HSET hash:bigvalue f $(printf 'y%.0s' $(seq 1 100))"
	# sorted sets: listpack, skiplist by count, skiplist by member size
	echo "ZADD zset:small 1 one 2.5 two-and-half -3 minus-three inf plus-inf -inf minus-inf 0 zero"
	printf 'ZADD zset:big'
	for j in $(seq 1 200); do printf ' %d.25 m-%d' "$j" "$j"; done
	echo
	echo "ZADD zset:bigmember 1 $(printf 'z%.0s' $(seq 1 100))"
	# TTLs (absolute, far in the future, so the file stays loadable)
	echo "SET ttl:str with-ttl"
	echo "PEXPIREAT ttl:str 4102444800123"
	echo "RPUSH ttl:list a b c"
	echo "PEXPIREAT ttl:list 4102444800456"
	echo "HSET ttl:hash f v"
	echo "PEXPIREAT ttl:hash 4102444800789"
	echo "SELECT 3"
	echo "SET db3:str in-db-3"
	echo "SADD db3:set x y z"
	echo "ZADD db3:zset 1 a 2 b"
	echo "SET db3:ttl soon"
	echo "PEXPIREAT db3:ttl 4102444801000"
	echo "XADD db3:stream 1-1 field1 value1 field2 value2"
	echo "XADD db3:stream 2-1 field1 value3"
	echo "XGROUP CREATE db3:stream group1 0"
} > "$cmds"

redis-server --port "$port" --bind 127.0.0.1 --dir "$tmp" --dbfilename dump.rdb \
	--save '' --appendonly no --daemonize no --logfile "$tmp/redis.log" &
pid=$!
for _ in $(seq 1 100); do
	redis-cli -p "$port" PING >/dev/null 2>&1 && break
	sleep 0.05
done
redis-cli -p "$port" < "$cmds" >/dev/null
redis-cli -p "$port" SAVE >/dev/null
cp "$tmp/dump.rdb" "$here/redis-7.0-all-types.rdb"
redis-cli -p "$port" INFO server | grep redis_version | tr -d '\r'
ls -l "$here/redis-7.0-all-types.rdb"
