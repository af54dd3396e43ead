#!/usr/bin/env bash
# Memory and time of a BGSAVE while clients overwrite EXISTING keys, for any
# Redis-protocol server (Damselfly or redis-server).
#
#   bench/snapshot-steady.sh PORT PID [KEYS] [VALUE_BYTES]
#
# bench/snapshot-mem.sh populates key:N with DEBUG POPULATE but then
# overwrites redis-benchmark's key:000000NNNNNN names, so the keyspace grows by
# up to KEYS new keys during its measurement and the "peak" mixes snapshot cost
# with dataset growth. This variant first writes redis-benchmark's own key
# names (5 x KEYS random SETs, so ~99% of the KEYS names exist), then measures
# idle memory, then runs the same overwrite load with BGSAVE, sampling the
# proportional set size (Pss) of PID and its children (Redis's fork child
# counts) every 100 ms. It also reports SET throughput without and during the
# save, and the server's CPU seconds for the whole save window.
set -euo pipefail
PORT=${1:?usage: snapshot-steady.sh PORT PID [KEYS] [VALUE_BYTES]}; PID=${2:?PID}
KEYS=${3:-1000000}; VAL=${4:-100}
cli() { redis-cli -p "$PORT" "$@"; }
tree() { local p=$1; echo "$p"; for c in $(cat /proc/"$p"/task/*/children 2>/dev/null); do tree "$c"; done; }
pss_kb() { local sum=0 p v; for p in $(tree "$PID"); do v=$(awk '/^Pss:/{print $2}' /proc/"$p"/smaps_rollup 2>/dev/null || echo 0); sum=$((sum + ${v:-0})); done; echo "$sum"; }
in_progress() { cli INFO persistence | tr -d '\r' | awk -F: '/^rdb_bgsave_in_progress:/{print $2}'; }
load() { taskset -c 1 redis-benchmark -p "$PORT" -t set -n "$1" -c 50 -d "$VAL" -r "$KEYS" --csv 2>/dev/null | awk -F, 'NR>1{gsub(/"/,"",$2); print $2; exit}'; }

cli FLUSHALL >/dev/null
taskset -c 1 redis-benchmark -p "$PORT" -t set -n $((5 * KEYS)) -c 50 -P 16 -d "$VAL" -r "$KEYS" -q >/dev/null 2>&1
keys=$(cli DBSIZE)
sleep 2
idle=$(pss_kb)
base_rps=$(load 300000)
n0=$(cli INFO stats | tr -d '\r' | awk -F: '/^total_commands_processed:/{print $2}')
taskset -c 1 redis-benchmark -p "$PORT" -t set -n 100000000 -c 50 -d "$VAL" -r "$KEYS" -q >/dev/null 2>&1 &
LOADER=$!
sleep 1
c0=$(cli INFO stats | tr -d '\r' | awk -F: '/^total_commands_processed:/{print $2}')
cli BGSAVE >/dev/null
t0=$(date +%s.%N); peak=$idle
while [ "$(in_progress)" != "0" ]; do
  m=$(pss_kb); [ "$m" -gt "$peak" ] && peak=$m
  sleep 0.1
done
t1=$(date +%s.%N)
c1=$(cli INFO stats | tr -d '\r' | awk -F: '/^total_commands_processed:/{print $2}')
kill "$LOADER" 2>/dev/null || true; wait "$LOADER" 2>/dev/null || true
after=$(pss_kb)
status=$(cli INFO persistence | tr -d '\r' | awk -F: '/^rdb_last_bgsave_status:/{print $2}')
python3 - "$idle" "$peak" "$after" "$t0" "$t1" "$base_rps" "$status" "$keys" "$c0" "$c1" <<'PY'
import sys
idle, peak, after = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
t0, t1, base, status, keys = float(sys.argv[4]), float(sys.argv[5]), sys.argv[6], sys.argv[7], sys.argv[8]
c0, c1 = int(sys.argv[9]), int(sys.argv[10])
during = (c1 - c0) / (t1 - t0) if t1 > t0 else 0
print(f"keys {keys} | idle {idle/1024:.1f} MiB | peak during save {peak/1024:.1f} MiB | excess {100*(peak-idle)/idle:.1f}% | "
      f"after {after/1024:.1f} MiB | save {t1-t0:.2f} s ({status}) | SET ops/s without a save {base} | during the save {during:.0f} "
      f"({100*during/float(base):.0f}%)")
PY
