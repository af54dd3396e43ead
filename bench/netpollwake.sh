#!/usr/bin/env bash
# Goroutines woken by Go's poller beside a busy event loop (branch netpollp):
# BLPOP wake-up latency (bench/blpopwake) while redis-benchmark keeps the
# loop busy with GET, unpipelined and -P 16.
#
#   bench/netpollwake.sh LOOP BIN...     (LOOP: io_uring or epoll)
#
# Each BIN in turn: server pinned to cpu 0 (so GOMAXPROCS 1: one loop holds
# the only P), load and probe on cpu 1.
set -euo pipefail
LOOP=$1; shift
T=$(mktemp -d)
trap 'for p in ${PIDS:-}; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null; rm -rf "$T"' EXIT
(cd "$(dirname "$0")/.." && go build -o "$T/blpopwake" ./bench/blpopwake)
PORT=${PORT:-7733}
for BIN in "$@"; do
  taskset -c 0 "$BIN" --port "$PORT" --dir "$T" --event-loop "$LOOP" >/dev/null 2>&1 & srv=$!
  PIDS="$srv"
  for _ in $(seq 50); do redis-cli -p "$PORT" ping >/dev/null 2>&1 && break; sleep 0.1; done
  for P in 1 16; do
    taskset -c 1 redis-benchmark -p "$PORT" -t get -n 100000000 -c 20 -P "$P" -q >/dev/null 2>&1 & load=$!
    PIDS="$srv $load"
    sleep 0.5
    echo "$(basename "$BIN") $LOOP GET -P$P: $(taskset -c 1 "$T/blpopwake" -addr "127.0.0.1:$PORT" -n 300)"
    kill "$load"; wait "$load" 2>/dev/null || true
  done
  kill "$srv"; wait "$srv" 2>/dev/null || true
  PIDS=""
done
