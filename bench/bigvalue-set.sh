#!/usr/bin/env bash
# CPU per SET of big values, one server at a time (a Damselfly binary or "redis"):
#   bench/bigvalue-set.sh BINARY|redis PORT VALUE_BYTES REQUESTS
# Server pinned to core 0, redis-benchmark (8 clients, 2000 keys) on core 1; CPU is
# utime+stime from /proc/PID/stat over the measured run, after a warm-up of 2000 SETs.
bin=$1; port=$2; d=$3; n=$4
rm -rf /tmp/bs-$port; mkdir -p /tmp/bs-$port
if [ "$bin" = redis ]; then taskset -c 0 redis-server --port $port --save "" --appendonly no --dir /tmp/bs-$port >/dev/null 2>&1 & 
else taskset -c 0 $bin --port $port --bind 127.0.0.1 --save "" --dir /tmp/bs-$port >/dev/null 2>&1 & fi
pid=$!; sleep 0.7
timeout 20 taskset -c 1 redis-benchmark -p $port -t set -d $d -c 8 -r 2000 -n 2000 -q >/dev/null 2>&1
read u s < <(awk '{print $14, $15}' /proc/$pid/stat)
ops=$(timeout 60 taskset -c 1 redis-benchmark -p $port -t set -d $d -c 8 -r 2000 -n $n -q 2>/dev/null | tr '\r' '\n' | grep -o "[0-9.]* requests per second" | tail -1)
read u2 s2 < <(awk '{print $14, $15}' /proc/$pid/stat)
echo "$bin d=$d: $(( (u2-u+s2-s)*10000000/n )) ns CPU/SET (user $((u2-u)) sys $((s2-s)) ticks) $ops"
kill $pid; wait $pid 2>/dev/null
