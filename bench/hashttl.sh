#!/usr/bin/env bash
# Hash field expiry: server CPU per request for HGET on a plain hash (Damselfly and redis-server),
# HGET on a hash whose fields have TTLs, and HPEXPIRE (Damselfly only: redis-server 7.0 has no
# field TTLs).
#
#   bench/hashttl.sh DAMSELFLY_PORT REDIS_PORT
#
# Start both servers first (pinned to CPU 0 with taskset -c 0 where possible); the load runs on
# CPU 1. Each figure is the least of two runs: utime+stime of the server process
# (/proc/PID/stat) divided by the requests. Env: N (requests, 200000), C (clients, 50),
# P (pipeline, 16).
set -euo pipefail
A=${1:?usage: hashttl.sh DAMSELFLY_PORT REDIS_PORT}; B=${2:?usage: hashttl.sh DAMSELFLY_PORT REDIS_PORT}
N=${N:-200000}; C=${C:-50}; P=${P:-16}
pid_of() { ss -ltnpH "sport = :$1" | grep -o 'pid=[0-9]*' | head -n 1 | cut -d= -f2; }
HZ=$(getconf CLK_TCK)
ticks() { awk '{print $14+$15}' /proc/"$1"/stat; }
setup() { # port
  redis-cli -p "$1" flushall >/dev/null
  args=(); for i in $(seq 1 20); do args+=("f$i" "v$i"); done
  redis-cli -p "$1" hset plain "${args[@]}" >/dev/null
  redis-cli -p "$1" hset ttl "${args[@]}" >/dev/null
}
run() { # port command... -> cpu µs per request
  local port=$1 pid t0 t1; shift
  pid=$(pid_of "$port")
  t0=$(ticks "$pid")
  taskset -c 1 redis-benchmark -p "$port" -n "$N" -c "$C" -P "$P" -q "$@" >/dev/null 2>&1
  t1=$(ticks "$pid")
  python3 -c "print(f'{($t1-$t0)/$HZ*1e6/$N:.2f}')"
}
best() { python3 -c "print(f'{min($1,$2):.2f}')"; }
setup "$A"; setup "$B"
redis-cli -p "$A" hpexpire ttl 100000000 FIELDS 10 f1 f2 f3 f4 f5 f6 f7 f8 f9 f10 >/dev/null
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "| request | Damselfly CPU-µs ($A) | redis-server 7.0 CPU-µs ($B) |"
echo "|---|---:|---:|"
a=$(best "$(run "$A" hget plain f5)" "$(run "$A" hget plain f5)")
b=$(best "$(run "$B" hget plain f5)" "$(run "$B" hget plain f5)")
echo "| HGET, plain hash | $a | $b |"
a=$(best "$(run "$A" hget ttl f5)" "$(run "$A" hget ttl f5)")
echo "| HGET, hash with 10 of 20 fields on a TTL | $a | n/a |"
a=$(best "$(run "$A" hpexpire ttl 100000000 FIELDS 1 f5)" "$(run "$A" hpexpire ttl 100000000 FIELDS 1 f5)")
echo "| HPEXPIRE 1 field | $a | n/a |"
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg)"
