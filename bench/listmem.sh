#!/usr/bin/env bash
# RSS, huge pages and used_memory of a server holding one list of 1M x 256 B
# (redis-benchmark LPUSH), after RPOP of the oldest half, and every 30 s
# for 180 s after DEL (the runtime forces a GC every 2 minutes when
# nothing allocates). Usage: bench/listmem.sh BIN PORT
set -u
b=$1; port=$2; D=$(mktemp -d); trap "rm -rf $D" EXIT
taskset -c 0 $b --port $port --bind 127.0.0.1 --save "" --dir $D >/dev/null 2>&1 & pid=$!
for _ in $(seq 50); do redis-cli -p $port ping >/dev/null 2>&1 && break; sleep 0.1; done
taskset -c 1 redis-benchmark -p $port -t lpush -n 1000000 -c 50 -d 256 -P 16 -q >/dev/null 2>&1
show() { echo "$(basename $b) $1: rss=$(awk '/VmRSS/{print $2}' /proc/$pid/status)kB thp=$(awk '/AnonHugePages/{print $2}' /proc/$pid/smaps_rollup)kB used_memory=$(redis-cli -p $port info memory | awk -F: '/^used_memory:/{print $2}' | tr -d '\r') llen=$(redis-cli -p $port llen mylist) memusage=$(redis-cli -p $port memory usage mylist)"; }
show "after 1M LPUSH"
redis-cli -p $port rpop mylist 500000 >/dev/null
show "after RPOP 500000"
redis-cli -p $port del mylist >/dev/null
show "after DEL"
for s in 30 60 90 120 150 180; do sleep 30; show "${s}s after DEL"; done
kill $pid; wait $pid 2>/dev/null
