#!/usr/bin/env bash
# Work off the event loops under light traffic (issue 20): BGSAVE time and
# 20 x KEYS on Damselfly --shards 2, on epoll and on io_uring, alternating.
#
#   bench/offloop.sh [RUNS]
#
# For each loop kind: start `damselfly --shards 2 --event-loop KIND`
# (unpinned, both cores), DEBUG POPULATE 300000, start
# `redis-benchmark -c 4 -n 3000000 -t ping_mbulk` as a steady trickle, then
# time three BGSAVEs (polling INFO's rdb_bgsave_in_progress every 10 ms) and
# 20 `KEYS nomatch*` in a row. Env: DAMSELFLY (binary; default: go build).
set -euo pipefail
RUNS=${1:-2}
T=$(mktemp -d)
trap 'for p in ${PIDS:-}; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null; rm -rf "$T"' EXIT
if [ -z "${DAMSELFLY:-}" ]; then
  (cd "$(dirname "$0")/.." && go build -o "$T/damselfly" ./cmd/damselfly); DAMSELFLY=$T/damselfly
fi
free_port() { python3 -c 'import socket;s=socket.socket();s.bind(("127.0.0.1",0));print(s.getsockname()[1])'; }
ms() { date +%s%3N; }
echo "load average at start: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "| loop | BGSAVE ms (3) | 20 x KEYS ms | load |"
echo "|---|---|---:|---|"
for _ in $(seq 1 "$RUNS"); do
  for kind in epoll io_uring; do
    port=$(free_port); PIDS=""; rm -rf "$T/data"; mkdir "$T/data"
    "$DAMSELFLY" --port "$port" --bind 127.0.0.1 --shards 2 --enable-debug-command yes --save "" \
      --dir "$T/data" --event-loop "$kind" >"$T/d.log" 2>&1 &
    PIDS="$!"; dpid=$!
    for _ in $(seq 1 50); do redis-cli -p "$port" PING >/dev/null 2>&1 && break; sleep 0.1; done
    redis-cli -p "$port" DEBUG POPULATE 300000 >/dev/null
    redis-benchmark -p "$port" -c 4 -n 3000000 -t ping_mbulk -q >/dev/null 2>&1 &
    PIDS="$PIDS $!"; bpid=$!
    sleep 1
    saves=""
    for _ in 1 2 3; do
      t0=$(ms); redis-cli -p "$port" BGSAVE >/dev/null
      while redis-cli -p "$port" INFO persistence | grep -q 'rdb_bgsave_in_progress:1'; do sleep 0.01; done
      saves="$saves $(( $(ms) - t0 ))"
    done
    t0=$(ms)
    for _ in $(seq 1 20); do redis-cli -p "$port" KEYS 'nomatch*' >/dev/null; done
    keys=$(( $(ms) - t0 ))
    echo "| $kind |$saves | $keys | $(cut -d' ' -f1 /proc/loadavg) |"
    kill "$bpid" "$dpid" 2>/dev/null || true; wait "$bpid" "$dpid" 2>/dev/null || true
  done
done
