#!/usr/bin/env bash
# Append-only file benchmarks, Damselfly against redis-server in one run.
#
#   bench/aof.sh fsync   [REQUESTS]   SET ops/s, p99 and server CPU per request
#                                     with appendfsync always, everysec and no AOF
#   bench/aof.sh rewrite [KEYS]       BGREWRITEAOF of KEYS keys (default 1M x 100 B)
#                                     under 50 writing clients: time, peak extra
#                                     memory (Pss of the server and its children)
#
# Servers run on core 0, redis-benchmark on core 1 (taskset), each in a fresh
# directory under $BENCH_DIR (default: a temporary directory on the same disk
# as /tmp). DAMSELFLY is the binary (default: go build ./cmd/damselfly).
set -euo pipefail
cd "$(dirname "$0")/.."
MODE=${1:?usage: aof.sh fsync|rewrite [N]}
BENCH_DIR=${BENCH_DIR:-$(mktemp -d /tmp/aofbench.XXXXXX)}
DAMSELFLY=${DAMSELFLY:-$BENCH_DIR/damselfly}
[ -x "$DAMSELFLY" ] || go build -o "$DAMSELFLY" ./cmd/damselfly

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
cpu_ticks() { awk '{print $14+$15}' /proc/"$1"/stat; }
tree() { local p=$1; echo "$p"; for c in $(cat /proc/"$p"/task/*/children 2>/dev/null); do tree "$c"; done; }
pss_kb() { local sum=0 p v; for p in $(tree "$1"); do v=$(awk '/^Pss:/{print $2}' /proc/"$p"/smaps_rollup 2>/dev/null || echo 0); sum=$((sum + ${v:-0})); done; echo "$sum"; }
SERVER_PID=
start() { # start NAME APPENDONLY FSYNC -> sets PORT, SERVER_PID
  local name=$1 on=$2 fsync=$3 dir
  dir=$(mktemp -d "$BENCH_DIR/$name.XXXX"); PORT=$(free_port)
  if [ "$name" = redis ]; then
    taskset -c 0 redis-server --port "$PORT" --bind 127.0.0.1 --dir "$dir" --save "" --appendonly "$on" \
      --appendfsync "$fsync" --auto-aof-rewrite-percentage 0 >"$dir/log" 2>&1 &
  else
    taskset -c 0 "$DAMSELFLY" --port "$PORT" --bind 127.0.0.1 --dir "$dir" --save "" --appendonly "$on" \
      --appendfsync "$fsync" --auto-aof-rewrite-percentage 0 >"$dir/log" 2>&1 &
  fi
  SERVER_PID=$!
  for _ in $(seq 100); do redis-cli -p "$PORT" PING >/dev/null 2>&1 && return; sleep 0.05; done
  echo "$name did not start" >&2; cat "$dir/log" >&2; exit 1
}
stop() { kill "$SERVER_PID" 2>/dev/null || true; wait "$SERVER_PID" 2>/dev/null || true; }
trap stop EXIT

case $MODE in
fsync)
  N=${2:-200000}
  echo "| server | appendfsync | SET ops/s | p99 ms | server CPU µs/request |"
  echo "|---|---|---|---|---|"
  for mode in always everysec off; do
    for name in damselfly redis; do
      on=yes; fs=$mode; [ "$mode" = off ] && { on=no; fs=everysec; }
      start "$name" "$on" "$fs"
      redis-cli -p "$PORT" SET warm 1 >/dev/null
      t0=$(cpu_ticks "$SERVER_PID")
      csv=$(taskset -c 1 redis-benchmark -p "$PORT" -t set -n "$N" -c 50 -d 100 -r 100000 --csv 2>/dev/null | tail -1)
      t1=$(cpu_ticks "$SERVER_PID")
      stop
      python3 - "$name" "$mode" "$csv" "$t0" "$t1" "$N" "$(getconf CLK_TCK)" <<'PY'
import sys
name, mode, csv, t0, t1, n, hz = sys.argv[1:8]
f = [x.strip('"') for x in csv.split(',')]
rps, p99 = float(f[1]), f[6]
cpu = (int(t1) - int(t0)) / int(hz) / int(n) * 1e6
print(f"| {name} | {mode} | {rps:.0f} | {p99} | {cpu:.1f} |")
PY
    done
  done
  ;;
rewrite)
  KEYS=${2:-1000000}
  echo "| server | keys | idle MiB | peak during rewrite MiB | extra | rewrite s | SET ops/s during |"
  echo "|---|---|---|---|---|---|---|"
  for name in damselfly redis; do
    start "$name" yes everysec
    # redis-benchmark's own key names (key:000000NNNNNN), so that the load
    # below overwrites existing keys (~95% of KEYS names exist after 3 x KEYS
    # random SETs) instead of growing the dataset during the measurement.
    taskset -c 1 redis-benchmark -p "$PORT" -t set -n $((3 * KEYS)) -P 16 -c 50 -d 100 -r "$KEYS" -q >/dev/null 2>&1
    redis-cli -p "$PORT" BGREWRITEAOF >/dev/null; sleep 1
    while redis-cli -p "$PORT" INFO persistence | grep -q '^aof_rewrite_in_progress:1'; do sleep 0.2; done
    keys=$(redis-cli -p "$PORT" DBSIZE); sleep 1
    idle=$(pss_kb "$SERVER_PID")
    # 50 clients overwrite the populated keys.
    taskset -c 1 redis-benchmark -p "$PORT" -t set -n 100000000 -c 50 -d 100 -r "$KEYS" -q >/dev/null 2>&1 &
    LOADER=$!; sleep 1
    c0=$(redis-cli -p "$PORT" INFO stats | tr -d '\r' | awk -F: '/^total_commands_processed:/{print $2}')
    t0=$(date +%s.%N); peak=$idle
    redis-cli -p "$PORT" BGREWRITEAOF >/dev/null
    sleep 0.05
    while redis-cli -p "$PORT" INFO persistence | tr -d '\r' | grep -q '^aof_rewrite_in_progress:1'; do
      m=$(pss_kb "$SERVER_PID"); [ "$m" -gt "$peak" ] && peak=$m; sleep 0.1
    done
    t1=$(date +%s.%N)
    c1=$(redis-cli -p "$PORT" INFO stats | tr -d '\r' | awk -F: '/^total_commands_processed:/{print $2}')
    kill "$LOADER" 2>/dev/null || true; wait "$LOADER" 2>/dev/null || true
    status=$(redis-cli -p "$PORT" INFO persistence | tr -d '\r' | awk -F: '/^aof_last_bgrewrite_status:/{print $2}')
    stop
    python3 - "$name" "$keys" "$idle" "$peak" "$t0" "$t1" "$c0" "$c1" "$status" <<'PY'
import sys
name, keys, idle, peak, t0, t1, c0, c1, status = sys.argv[1:10]
idle, peak, t0, t1 = int(idle), int(peak), float(t0), float(t1)
ops = (int(c1) - int(c0)) / (t1 - t0)
print(f"| {name} | {keys} | {idle/1024:.0f} | {peak/1024:.0f} | {100*(peak-idle)/idle:.1f}% | {t1-t0:.2f} ({status}) | {ops:.0f} |")
PY
  done
  ;;
*) echo "unknown mode $MODE" >&2; exit 2 ;;
esac
