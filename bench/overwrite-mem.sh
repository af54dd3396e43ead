#!/usr/bin/env bash
# Memory under a 100% overwrite load (issue 20), for any Redis-protocol server
# (Damselfly or redis-server).
#
#   bench/overwrite-mem.sh PORT PID [KEYS] [VALUE_BYTES] [SECONDS]
#
# Writes redis-benchmark's own key names first (5 x KEYS random SETs, so ~99%
# of the KEYS names exist: a later load with the same -r overwrites existing
# keys instead of growing the keyspace, which is what the earlier 135 -> 211+
# MiB figure mixed in), waits for the server to settle, reads its RSS (idle),
# then has 50 clients (on CPU 1) overwrite those keys for SECONDS and samples
# RSS every 0.5 s. Prints idle, steady (mean of the last half) and peak RSS,
# the growth over idle and the key count before and after.
set -euo pipefail
PORT=${1:?usage: overwrite-mem.sh PORT PID [KEYS] [VALUE_BYTES] [SECONDS]}; PID=${2:?PID}
KEYS=${3:-1000000}; VAL=${4:-100}; SECS=${5:-30}
cli() { redis-cli -p "$PORT" "$@"; }
rss_kb() { awk '/^VmRSS:/{print $2}' /proc/"$PID"/status; }

cli FLUSHALL >/dev/null
taskset -c 1 redis-benchmark -p "$PORT" -t set -n $((5 * KEYS)) -c 50 -P 16 -d "$VAL" -r "$KEYS" -q >/dev/null 2>&1
keys0=$(cli DBSIZE)
sleep 5
idle=$(rss_kb)
timeout "$SECS" taskset -c 1 redis-benchmark -p "$PORT" -t set -n 1000000000 -c 50 -d "$VAL" -r "$KEYS" -q >/dev/null 2>&1 &
LOADER=$!
samples=()
end=$(( $(date +%s) + SECS ))
while [ "$(date +%s)" -lt "$end" ]; do samples+=("$(rss_kb)"); sleep 0.5; done
wait "$LOADER" 2>/dev/null || true
keys1=$(cli DBSIZE)
sleep 2
after=$(rss_kb)
python3 - "$idle" "$after" "$keys0" "$keys1" "${samples[@]}" <<'PY'
import sys
idle, after, k0, k1 = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3], sys.argv[4]
s = [int(x) for x in sys.argv[5:]]
steady = sum(s[len(s)//2:]) / max(1, len(s) - len(s)//2)
peak = max(s)
print(f"keys {k0} -> {k1} | idle RSS {idle/1024:.1f} MiB | steady {steady/1024:.1f} MiB ({steady/idle:.2f}x idle) | "
      f"peak {peak/1024:.1f} MiB ({peak/idle:.2f}x) | 2 s after {after/1024:.1f} MiB")
PY
