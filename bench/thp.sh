#!/usr/bin/env bash
# Transparent huge pages on and off (disable-thp, issue 20): the server's CPU
# per request for workloads that fault fresh memory in (LPUSH onto one
# growing list; SETs of new keys) and one that only reads (GET over 1M
# keys), for a Damselfly binary with --disable-thp yes (the default) and with
# --disable-thp no, and for redis-server; a fresh server per run, pinned to
# CPU 0, redis-benchmark -P 16 on CPU 1, the three alternating, ROUNDS times.
# Also reports minor faults per request and the huge pages the kernel
# faulted in (thp_fault_alloc in /proc/vmstat) during the run.
#
#   bench/thp.sh [BIN]        (BIN defaults to a build of the repository)
#
# Env: ROUNDS (3), N (requests per run, 1000000).
set -euo pipefail
ROUNDS=${ROUNDS:-3}; N=${N:-1000000}
BIN=${1:-}
D=$(mktemp -d); trap 'kill $(jobs -p) 2>/dev/null || true; rm -rf "$D"' EXIT
if [ -z "$BIN" ]; then (cd "$(dirname "$0")/.." && go build -o "$D/damselfly" ./cmd/damselfly); BIN=$D/damselfly; fi
PORT=7391
vm() { awk '$1=="thp_fault_alloc"{print $2}' /proc/vmstat; }
start() {
  case $1 in
    thp-off) taskset -c 0 "$BIN" --port $PORT --bind 127.0.0.1 --save "" --dir "$D" >/dev/null 2>&1 & ;;
    thp-on) taskset -c 0 "$BIN" --port $PORT --bind 127.0.0.1 --save "" --dir "$D" --disable-thp no >/dev/null 2>&1 & ;;
    redis) taskset -c 0 redis-server --port $PORT --bind 127.0.0.1 --save "" --appendonly no --dir "$D" >/dev/null 2>&1 & ;;
  esac
  PID=$!
  for _ in $(seq 50); do redis-cli -p $PORT ping >/dev/null 2>&1 && return; sleep 0.1; done
}
stop() { kill $PID; wait $PID 2>/dev/null || true; }
measure() { # name test args...
  local name=$1 test=$2; shift 2
  local a=($(awk '{print $14+$15, $10}' /proc/$PID/stat)) h0=$(vm)
  taskset -c 1 redis-benchmark -p $PORT -n $N -c 50 -d 256 -P 16 -q "$@" >/dev/null 2>&1
  local b=($(awk '{print $14+$15, $10}' /proc/$PID/stat)) h1=$(vm)
  python3 -c "
hz=$(getconf CLK_TCK); n=$N
print(f'$test r$r $name cpu_us/req={($((b[0]-a[0])))/hz*1e6/n:.3f} minflt/req={($((b[1]-a[1])))/n:.4f} thp_faults={$h1-$h0}')"
}
echo "load $(cat /proc/loadavg)"
for r in $(seq $ROUNDS); do
  for s in thp-off thp-on redis; do
    start $s; measure $s lpush -t lpush; stop
    start $s; measure $s set-new-keys -t set -r 100000000
    taskset -c 1 redis-benchmark -p $PORT -n $N -c 50 -d 256 -P 16 -q -t set -r 1000000 >/dev/null 2>&1
    measure $s get -t get -r 1000000; stop
  done
done
echo "load $(cat /proc/loadavg)"
