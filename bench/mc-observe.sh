#!/usr/bin/env bash
# Cost of showing memcached commands in commandstats/SLOWLOG/MONITOR
# (server/memcache_observe.go): server CPU per memcached request of a build
# without it (BASE, a git revision) and with it (the work tree), in one run.
#
#   BASE=<rev> bench/mc-observe.sh [SECONDS] [ROUNDS]
#
# Each server (pinned to CPU 0) gets set and get load from memcache/cmd/mcload
# (CPU 1) at pipeline depth 1 and 16 for SECONDS, ROUNDS times in turn; the
# table has ops/s and CPU-µs per request (utime+stime from /proc/PID/stat).
set -euo pipefail
DUR=${1:-5}; ROUNDS=${2:-2}
BASE=${BASE:?set BASE to the revision without the observer}
cd "$(dirname "$0")/.."
TMP=$(mktemp -d /tmp/mcobsbench.XXXXXX)
PIDS=()
trap 'for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done; rm -rf "$TMP"' EXIT
mkdir -p "$TMP/base"
git archive "$BASE" | tar -x -C "$TMP/base"
(cd "$TMP/base" && go build -o "$TMP/damselfly-base" ./cmd/damselfly)
go build -o "$TMP/damselfly" ./cmd/damselfly
go build -o "$TMP/mcload" ./memcache/cmd/mcload
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
declare -A PID MC
for name in base observe; do
  bin="$TMP/damselfly"; [ "$name" = base ] && bin="$TMP/damselfly-base"
  mkdir -p "$TMP/$name.d"
  MC[$name]=$(free_port)
  taskset -c 0 "$bin" --port "$(free_port)" --bind 127.0.0.1 --memcached_port "${MC[$name]}" --save "" --dir "$TMP/$name.d" >/dev/null 2>&1 &
  PID[$name]=$!; PIDS+=($!)
done
sleep 1
ticks() { awk '{print $14 + $15}' /proc/"$1"/stat; }
HZ=$(getconf CLK_TCK)
for name in base observe; do
  taskset -c 1 "$TMP/mcload" -addr 127.0.0.1:"${MC[$name]}" -op set -P 16 -d 1s >/dev/null
done
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "| server | op | pipeline | ops/s | CPU-µs/req |"
echo "|---|---|---:|---:|---:|"
for r in $(seq "$ROUNDS"); do
  for op in set get; do
    for p in 1 16; do
      for name in base observe; do
        t0=$(ticks "${PID[$name]}")
        n=$(taskset -c 1 "$TMP/mcload" -addr 127.0.0.1:"${MC[$name]}" -op "$op" -P "$p" -d "${DUR}s")
        t1=$(ticks "${PID[$name]}")
        awk -v name="$name" -v op="$op" -v p="$p" -v n="$n" -v d="$DUR" -v t=$((t1 - t0)) -v hz="$HZ" \
          'BEGIN { printf "| %s | %s | %d | %d | %.2f |\n", name, toupper(op), p, n / d, t / hz * 1e6 / n }'
      done
    done
  done
done
