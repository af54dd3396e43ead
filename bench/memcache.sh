#!/usr/bin/env bash
# Memcached-protocol throughput and server CPU per request: Damselfly
# (--memcached_port) against Debian's memcached (-t 1) in one run, each server
# pinned to CPU 0 and the load (memcache/cmd/mcload) on CPU 1.
#
#   bench/memcache.sh [SECONDS] [ROUNDS]
#
# For every op (set, get) and pipeline depth (1, 16) and round it prints the
# ops/s each server sustained and its CPU-µs per request (utime+stime from
# /proc/PID/stat over the run, divided by the requests served).
set -euo pipefail
DUR=${1:-5}; ROUNDS=${2:-2}
cd "$(dirname "$0")/.."
TMP=$(mktemp -d); trap 'kill $DPID $MPID 2>/dev/null || true; rm -rf "$TMP"' EXIT
go build -o "$TMP/damselfly" ./cmd/damselfly
go build -o "$TMP/mcload" ./memcache/cmd/mcload
DPORT=21211; MPORT=21212
taskset -c 0 "$TMP/damselfly" --port 26399 --memcached_port $DPORT --save "" --dir "$TMP" >/dev/null 2>&1 &
DPID=$!
USER_FLAG=(); [ "$(id -u)" = 0 ] && USER_FLAG=(-u root)
taskset -c 0 memcached -p $MPORT -l 127.0.0.1 -U 0 -t 1 -m 1024 "${USER_FLAG[@]}" &
MPID=$!
sleep 1
ticks() { awk '{print $14 + $15}' /proc/"$1"/stat; }
HZ=$(getconf CLK_TCK)
run() { # name pid port op pipe
  local t0 t1 n
  t0=$(ticks "$2")
  n=$(taskset -c 1 "$TMP/mcload" -addr 127.0.0.1:"$3" -op "$4" -P "$5" -d "${DUR}s")
  t1=$(ticks "$2")
  awk -v name="$1" -v op="$4" -v p="$5" -v n="$n" -v d="$DUR" -v t=$((t1 - t0)) -v hz="$HZ" \
    'BEGIN { printf "| %s | %s | %d | %d | %.2f |\n", name, toupper(op), p, n / d, t / hz * 1e6 / n }'
}
# Fill both key spaces so GETs hit.
taskset -c 1 "$TMP/mcload" -addr 127.0.0.1:$DPORT -op set -P 16 -d 1s >/dev/null
taskset -c 1 "$TMP/mcload" -addr 127.0.0.1:$MPORT -op set -P 16 -d 1s >/dev/null
echo "| server | op | pipeline | ops/s | CPU-µs/req |"
echo "|---|---|---:|---:|---:|"
for r in $(seq "$ROUNDS"); do
  for op in set get; do
    for p in 1 16; do
      run memcached $MPID $MPORT $op $p
      run Damselfly $DPID $DPORT $op $p
    done
  done
done
