#!/usr/bin/env bash
# Where a Damselfly server's CPU per request goes by thread (issue 20): the
# event loop's thread, sysmon, and the runtime's other threads, from
# perf stat --per-thread task-clock (nanosecond resolution, where
# /proc/PID/stat counts 10 ms ticks), with context switches per request.
# Each binary gets a fresh server pinned to CPU 0, the load on CPU 1; the
# binaries take turns, ROUNDS times.
#
#   bench/loopstat.sh TEST PIPELINE BINARY...   e.g. bench/loopstat.sh get 16 /tmp/old /tmp/new
#
# Env: N (requests, 100000), C (50), D (256), ROUNDS (3), LOOP (io_uring |
# epoll), UNIX=1. GET and INCR-like tests read keys a SET -P 16 wrote first.
# Needs perf (Debian's linux-perf). sysmon is the thread with the most
# nanosleep calls (it sleeps with usleep between rounds).
set -euo pipefail
TEST=$1; P=$2; shift 2
N=${N:-100000}; C=${C:-50}; D=${D:-256}; ROUNDS=${ROUNDS:-3}; LOOP=${LOOP:-io_uring}; UNIX=${UNIX:-0}
command -v perf >/dev/null || { echo "needs perf (apt-get install linux-perf)" >&2; exit 2; }
T=$(mktemp -d)
trap 'kill ${PID:-} 2>/dev/null || true; wait 2>/dev/null; rm -rf "$T"' EXIT
echo "test $TEST -P $P, $N requests, loop $LOOP, transport $([ "$UNIX" = 1 ] && echo unix || echo tcp), load average $(cut -d' ' -f1-3 /proc/loadavg)"
echo
echo "| binary | round | CPU µs/req | loop thread | sysmon | other threads | context switches/req |"
echo "|---|---:|---:|---:|---:|---:|---:|"
for r in $(seq 1 "$ROUNDS"); do
  for bin in "$@"; do
    port=$(python3 -c 'import socket;s=socket.socket();s.bind(("127.0.0.1",0));print(s.getsockname()[1])')
    taskset -c 0 "$bin" --port "$port" --bind 127.0.0.1 --save "" --dir "$T" --unixsocket "$T/s.sock" \
      --event-loop "$LOOP" >"$T/log" 2>&1 &
    PID=$!
    for _ in $(seq 1 100); do redis-cli -p "$port" PING >/dev/null 2>&1 && break; sleep 0.1; done
    tgt="-p $port"; [ "$UNIX" = 1 ] && tgt="-s $T/s.sock"
    if [ "$TEST" != set ]; then
      timeout 120 taskset -c 1 redis-benchmark $tgt -t set -n 200000 -c "$C" -d "$D" -r 100000 -P 16 -q >/dev/null 2>&1 || true
    fi
    perf stat --per-thread -e task-clock,context-switches,syscalls:sys_enter_nanosleep -p "$PID" -o "$T/perf" -- \
      timeout 300 taskset -c 1 redis-benchmark $tgt -t "$TEST" -n "$N" -c "$C" -d "$D" -r 100000 -P "$P" -q >/dev/null 2>&1 || true
    python3 - "$T/perf" "$N" "$bin" "$r" <<'PY'
import sys
tc, cs, ns = {}, {}, {}
for l in open(sys.argv[1]):
    f = l.split()
    if len(f) < 3 or l.startswith("#") or f[1].startswith("<"):
        continue
    v = f[1].replace(",", "")
    if "task-clock" in l: tc[f[0]] = float(v)
    elif "context-switches" in l: cs[f[0]] = int(v)
    elif "nanosleep" in l: ns[f[0]] = int(v)
n = int(sys.argv[2])
us = lambda ms: ms * 1e3 / n
loop = max(tc, key=tc.get)
sysmon = max(ns, key=ns.get) if ns else None
tot = sum(tc.values()); sm = tc.get(sysmon, 0.0) if sysmon != loop else 0.0
print(f"| {sys.argv[3]} | {sys.argv[4]} | {us(tot):.3f} | {us(tc[loop]):.3f} | {us(sm):.3f} | {us(tot - tc[loop] - sm):.3f} | {sum(cs.values()) / n:.4f} |")
PY
    kill "$PID"; wait "$PID" 2>/dev/null || true; PID=
    rm -f "$T/s.sock"
  done
done
echo
echo "load average at end: $(cut -d' ' -f1-3 /proc/loadavg)"
