#!/usr/bin/env bash
# Regenerates the RDB files in this folder with a real redis-server.
#
#   ./testdata/make-dumps.sh                       (redis-server, redis-cli on PATH: redis-7.0)
#   ./testdata/make-dumps.sh NAME SERVER [EXTRAS]  (another server binary)
#
# e.g. ./testdata/make-dumps.sh redis-7.4 /tmp/build-redis74/src/redis-server function,hfe
#
# It writes NAME-all-types.commands (the exact commands sent, one per line;
# the Go tests replay them to know the expected contents), starts SERVER on
# a temporary directory and a random loopback port, runs the commands, SAVEs
# and copies the dump to NAME-all-types.rdb. EXTRAS (comma-separated) adds
# commands the server must support: "function" (a FUNCTION library, 7.0+),
# "hfe" (hash fields with their own TTL: HPEXPIREAT, Redis 7.4+).
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
name=${1:-redis-7.0}
server=${2:-redis-server}
extras=${3:-}
tmp=$(mktemp -d)
port=$((20000 + RANDOM % 20000))
pid=
cleanup() {
	[ -n "$pid" ] && kill "$pid" 2>/dev/null && wait "$pid" 2>/dev/null || true
	rm -rf "$tmp"
}
trap cleanup EXIT

cmds="$here/$name-all-types.commands"
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
	case ",$extras," in *,function,*)
		echo "FUNCTION LOAD \"#!lua name=dumplib\\nredis.register_function('dumpfn', function(keys, args) return 42 end)\""
	esac
	case ",$extras," in *,hfe,*)
		# hash fields with their own TTL: a small hash (listpack with TTLs)
		# and a large one (hashtable with TTL metadata); absolute times far
		# in the future, one field of each without a TTL
		echo "SELECT 0"
		echo "HSET hfe:small f1 v1 f2 v2 f3 v3"
		echo "HPEXPIREAT hfe:small 4102444800500 FIELDS 2 f1 f2"
		printf 'HSET hfe:big'
		for j in $(seq 1 200); do printf ' field-%d value-%d' "$j" "$j"; done
		echo
		echo "HSET hfe:big longfield $(printf 'y%.0s' $(seq 1 100))" # a hashtable: value > 64 B
		echo "HPEXPIREAT hfe:big 4102444800600 FIELDS 3 field-1 field-2 field-3"
		echo "HPEXPIREAT hfe:big 4102444800700 FIELDS 1 field-200"
	esac
} > "$cmds"

"$server" --port "$port" --bind 127.0.0.1 --dir "$tmp" --dbfilename dump.rdb \
	--save '' --appendonly no --daemonize no --logfile "$tmp/redis.log" &
pid=$!
for _ in $(seq 1 100); do
	redis-cli -p "$port" PING >/dev/null 2>&1 && break
	sleep 0.05
done
redis-cli -p "$port" < "$cmds" >/dev/null
redis-cli -p "$port" SAVE >/dev/null
cp "$tmp/dump.rdb" "$here/$name-all-types.rdb"
redis-cli -p "$port" INFO server | grep -E 'redis_version|valkey_version|server_name' | tr -d '\r'
ls -l "$here/$name-all-types.rdb"
