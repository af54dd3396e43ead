#!/usr/bin/env bash
# Hot-path cost of INFO's network counters (server/netstats.go): server CPU
# per request of a build without them (BASE, a git revision) and with them
# (the work tree), and redis-server's, in one run.
#
#   BASE=<rev> bench/netstats.sh [N] [ROUNDS]
#
# Each server runs SET and GET (redis-benchmark, 50 clients, 100 B values,
# 100k random keys) unpipelined (N requests) and with -P 16 (10 N), ROUNDS
# times in turn; the figure is the least server CPU (utime+stime from
# /proc/PID/stat) per request over the rounds, and the best ops/s. Servers on
# core 0, redis-benchmark on core 1.
set -euo pipefail
cd "$(dirname "$0")/.."
N=${1:-100000}
ROUNDS=${2:-3}
BASE=${BASE:?set BASE to the revision without the counters}
BENCH_DIR=${BENCH_DIR:-$(mktemp -d /tmp/netstatsbench.XXXXXX)}
mkdir -p "$BENCH_DIR/base"
git archive "$BASE" | tar -x -C "$BENCH_DIR/base"
(cd "$BENCH_DIR/base" && go build -o "$BENCH_DIR/damselfly-base" ./cmd/damselfly)
go build -o "$BENCH_DIR/damselfly" ./cmd/damselfly

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
cpu_ticks() { awk '{print $14+$15}' /proc/"$1"/stat; }
PIDS=()
cleanup() { for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null || true; }
trap cleanup EXIT
declare -A PORT PID
start() { # start NAME CMD...
  local name=$1; shift
  local port; port=$(free_port)
  taskset -c 0 "$@" --port "$port" --bind 127.0.0.1 --save "" >"$BENCH_DIR/$name.log" 2>&1 &
  PID[$name]=$!; PORT[$name]=$port; PIDS+=($!)
  for _ in $(seq 100); do redis-cli -p "$port" PING >/dev/null 2>&1 && return; sleep 0.05; done
  echo "$name did not start" >&2; cat "$BENCH_DIR/$name.log" >&2; exit 1
}
start base "$BENCH_DIR/damselfly-base"
start netstats "$BENCH_DIR/damselfly"
start redis redis-server --appendonly no
SERVERS="base netstats redis"
HZ=$(getconf CLK_TCK)
declare -A CPU OPS
for round in $(seq "$ROUNDS"); do
  for test in set get; do
    for p in 1 16; do
      n=$N; [ "$p" = 16 ] && n=$((N * 10))
      for s in $SERVERS; do
        t0=$(cpu_ticks "${PID[$s]}")
        csv=$(taskset -c 1 redis-benchmark -p "${PORT[$s]}" -t "$test" -n "$n" -c 50 -P "$p" -d 100 -r 100000 --csv 2>/dev/null | tail -1)
        t1=$(cpu_ticks "${PID[$s]}")
        ops=$(echo "$csv" | awk -F'"' '{print $4}')
        us=$(python3 -c "print(($t1-$t0)/$HZ*1e6/$n)")
        k="$test/$p/$s"
        if [ -z "${CPU[$k]:-}" ] || python3 -c "import sys; sys.exit(0 if $us < ${CPU[$k]} else 1)"; then CPU[$k]=$us; fi
        if [ -z "${OPS[$k]:-}" ] || python3 -c "import sys; sys.exit(0 if $ops > ${OPS[$k]} else 1)"; then OPS[$k]=$ops; fi
      done
    done
  done
done
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg)"
echo
echo "| test | pipeline | server | ops/s (best) | CPU µs/request (least) | vs base |"
echo "|---|---|---|---|---|---|"
for test in set get; do
  for p in 1 16; do
    for s in $SERVERS; do
      k="$test/$p/$s"
      rel=$(python3 -c "print('%+.1f%%' % ((${CPU[$k]}/${CPU[$test/$p/base]}-1)*100))")
      printf "| %s | %s | %s | %.0f | %.2f | %s |\n" "${test^^}" "$p" "$s" "${OPS[$k]}" "${CPU[$k]}" "$rel"
    done
  done
done
