#!/usr/bin/env bash
# Big replies: the server's CPU per request for LRANGE mylist 0 38999 (a 10
# MB array reply of 256 B items), GET of a 10 MB string and RPOP mylist
# 39000, one client (redis-benchmark -c 1) on CPU 1, each server pinned to
# CPU 0; Damselfly binaries and redis-server alternate, ROUNDS times. The
# list (1M items of ~256 B) and the string are built by Lua in each server.
#
#   bench/bigreply.sh BIN...
#
# Env: ROUNDS (3), REQS (LRANGE and GET requests per run, 100).
set -euo pipefail
ROUNDS=${ROUNDS:-3}; REQS=${REQS:-100}
D=$(mktemp -d); PIDS=(); PORTS=(); NAMES=()
trap 'kill "${PIDS[@]}" 2>/dev/null || true; rm -rf "$D"' EXIT
port=7381
for b in "$@" redis; do
  if [ "$b" = redis ]; then
    taskset -c 0 redis-server --port $port --bind 127.0.0.1 --save "" --appendonly no --dir "$D" >/dev/null 2>&1 &
  else
    taskset -c 0 "$b" --port $port --bind 127.0.0.1 --save "" --dir "$D" >/dev/null 2>&1 &
  fi
  PIDS+=($!); PORTS+=($port); NAMES+=("$(basename "$b")"); port=$((port+1))
done
for p in "${PORTS[@]}"; do
  for _ in $(seq 50); do redis-cli -p $p ping >/dev/null 2>&1 && break; sleep 0.1; done
  for _ in $(seq 10); do
    redis-cli -p $p eval "for i=1,100000 do redis.call('rpush', KEYS[1], string.rep('x',250) .. i) end return 1" 1 mylist >/dev/null
  done
  redis-cli -p $p eval "redis.call('set', KEYS[1], string.rep('v', 10485760)) return 1" 1 big >/dev/null
done
cpu() { awk '{print $14+$15}' /proc/$1/stat; }
run() { # pid port n args...
  local pid=$1 port=$2 n=$3; shift 3
  local t0; t0=$(cpu $pid)
  taskset -c 1 redis-benchmark -p $port -n $n -c 1 -q "$@" >/dev/null 2>&1
  echo "scale=2; ($(cpu $pid)-$t0)*1000/$(getconf CLK_TCK)/$n" | bc
}
echo "load $(cat /proc/loadavg)"
for r in $(seq $ROUNDS); do
  for k in "${!PIDS[@]}"; do
    pid=${PIDS[$k]}; p=${PORTS[$k]}
    echo "r$r ${NAMES[$k]}: server CPU ms/request: LRANGE 0 38999 $(run $pid $p $REQS lrange mylist 0 38999) | GET 10MB $(run $pid $p $REQS get big) | RPOP 39000 $(run $pid $p 6 rpop mylist 39000)"
  done
done
echo "load $(cat /proc/loadavg)"
