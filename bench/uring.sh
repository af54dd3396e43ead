#!/usr/bin/env bash
# Damselfly on epoll, Damselfly on io_uring and redis-server in one run
# (issue 20): CPU per request and ops/s, unpipelined and at -P 16.
#
#   bench/uring.sh [TESTS]        e.g. bench/uring.sh set,get,incr,lpush,hset
#
# Starts the three servers itself, each pinned to CPU 0 (taskset -c 0), on
# free loopback ports and Unix sockets in a temporary directory, and runs
# redis-benchmark on CPU 1. For every test and pipeline depth it measures the
# servers in turn (E U R), ROUNDS times, and reports the median of ops/s
# (noise on a shared machine) and of the server's CPU time per request
# (utime+stime from /proc/PID/stat over the run: the figure that counts).
# With SYSCALLS=1 a separate round counts each server's system calls per
# request with perf stat (raw_syscalls:sys_enter; perf from Debian's
# linux-perf), kept apart so that tracing does not tax the CPU figures.
# Env: DAMSELFLY (binary, default: go build into the temp dir), N (requests
# unpipelined, 30000; x10 at -P 16), C (clients, 50), D (value bytes, 256),
# ROUNDS (3), PIPES (pipeline depths, "1 16"), UNIX=1 (over the Unix sockets instead of TCP), SHARDS_ARGS (extra
# Damselfly flags), PIN=0 (do not pin the servers; for the two-core runs),
# OLD (another Damselfly binary, run on io_uring as a fourth server O, e.g.
# an earlier commit's, to measure a change in the same run).
set -euo pipefail
TESTS=${1:-set,get,incr,lpush,hset}
N=${N:-30000}; C=${C:-50}; D=${D:-256}; ROUNDS=${ROUNDS:-3}; UNIX=${UNIX:-0}; PIN=${PIN:-1}
command -v redis-benchmark >/dev/null || { echo "needs redis-benchmark (redis-tools)" >&2; exit 2; }
T=$(mktemp -d)
trap 'for p in ${PIDS:-}; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null; rm -rf "$T"' EXIT
trap 'exit 1' INT TERM
if [ -z "${DAMSELFLY:-}" ]; then
  (cd "$(dirname "$0")/.." && go build -o "$T/damselfly" ./cmd/damselfly); DAMSELFLY=$T/damselfly
fi
free_port() { python3 -c 'import socket;s=socket.socket();s.bind(("127.0.0.1",0));print(s.getsockname()[1])'; }
PINCMD=(taskset -c 0); [ "$PIN" = 1 ] || PINCMD=(env)
PIDS=""
start_damselfly() { # name kind
  local port; port=$(free_port)
  "${PINCMD[@]}" "$DAMSELFLY" --port "$port" --bind 127.0.0.1 --save "" --dir "$T" --unixsocket "$T/$1.sock" \
    --event-loop "$2" ${SHARDS_ARGS:-} >"$T/$1.log" 2>&1 &
  PIDS="$PIDS $!"; eval "PORT_$1=$port PID_$1=$!"
}
start_damselfly E epoll
start_damselfly U io_uring
SERVERS="E U R"
if [ -n "${OLD:-}" ]; then
  NEW=$DAMSELFLY; DAMSELFLY=$OLD; start_damselfly O io_uring; DAMSELFLY=$NEW; SERVERS="E U O R"
fi
PORT_R=$(free_port)
"${PINCMD[@]}" redis-server --port "$PORT_R" --bind 127.0.0.1 --save "" --appendonly no --dir "$T" \
  --unixsocket "$T/R.sock" ${REDIS_ARGS:-} >"$T/R.log" 2>&1 &
PID_R=$!; PIDS="$PIDS $PID_R"
for s in $SERVERS; do
  for _ in $(seq 1 50); do redis-cli -s "$T/$s.sock" PING >/dev/null 2>&1 && break; sleep 0.1; done
done
grep -h "io_uring unavailable" "$T"/U.log && echo "(the io_uring server fell back to epoll)"
HZ=$(getconf CLK_TCK)
ticks() { awk '{print $14+$15}' /proc/"$1"/stat; }
target() { if [ "$UNIX" = 1 ]; then echo "-s $T/$1.sock"; else eval echo "-p \$PORT_$1"; fi; }
bench() { # server test pipeline n
  taskset -c 1 redis-benchmark $(target "$1") -t "$2" -n "$4" -c "$C" -d "$D" -r 100000 -P "$3" --csv 2>/dev/null \
    | awk -F, 'NR>1 {gsub(/"/,"",$2); print $2; exit}'
}
echo "load average at start: $(cut -d' ' -f1-3 /proc/loadavg); transport: $([ "$UNIX" = 1 ] && echo unix || echo tcp); pinned: $PIN"
echo
if [ -n "${OLD:-}" ]; then
  echo "| test | -P | E µs/req | U µs/req | O µs/req | R µs/req | E/R | U/R | O/R | U/E |"
  echo "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
else
  echo "| test | -P | E ops/s | U ops/s | R ops/s | E µs/req | U µs/req | R µs/req | E/R CPU | U/R CPU | U/E CPU |"
  echo "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
fi
for t in ${TESTS//,/ }; do
  for p in ${PIPES:-1 16}; do
    n=$N; [ "$p" -gt 1 ] && n=$((N * 10))
    declare -A ops=() cpu=()
    for r in $(seq 1 "$ROUNDS"); do
      for s in $SERVERS; do
        pid=$(eval echo "\$PID_$s")
        t0=$(ticks "$pid"); o=$(bench "$s" "$t" "$p" "$n"); t1=$(ticks "$pid")
        ops[$s]="${ops[$s]:-} $o"; cpu[$s]="${cpu[$s]:-} $(python3 -c "print(($t1-$t0)/$HZ*1e6/$n)")"
      done
    done
    [ -n "${DEBUG:-}" ] && echo "ops: ${ops[*]} cpu: ${cpu[*]}" >&2
    if [ -n "${OLD:-}" ]; then
      python3 - "$t" "$p" "${cpu[E]}" "${cpu[U]}" "${cpu[O]}" "${cpu[R]}" <<'PY'
import sys, statistics as st
t, p = sys.argv[1], sys.argv[2]
c = [st.median(map(float, a.split())) for a in sys.argv[3:7]]
print(f"| {t} | {p} | {c[0]:.2f} | {c[1]:.2f} | {c[2]:.2f} | {c[3]:.2f} | {c[0]/c[3]:.2f} | {c[1]/c[3]:.2f} | {c[2]/c[3]:.2f} | {c[1]/c[0]:.2f} |")
PY
      continue
    fi
    python3 - "$t" "$p" "${ops[E]}" "${ops[U]}" "${ops[R]}" "${cpu[E]}" "${cpu[U]}" "${cpu[R]}" <<'PY'
import sys, statistics as st
t, p = sys.argv[1], sys.argv[2]
o = [st.median(map(float, a.split())) for a in sys.argv[3:6]]
c = [st.median(map(float, a.split())) for a in sys.argv[6:9]]
print(f"| {t} | {p} | {o[0]:.0f} | {o[1]:.0f} | {o[2]:.0f} | {c[0]:.2f} | {c[1]:.2f} | {c[2]:.2f} | {c[0]/c[2]:.2f} | {c[1]/c[2]:.2f} | {c[1]/c[0]:.2f} |")
PY
  done
done
if [ "${SYSCALLS:-0}" = 1 ]; then
  command -v perf >/dev/null || { echo "SYSCALLS=1 needs perf (apt-get install linux-perf)"; exit 0; }
  echo
  echo "System calls per request (perf stat -e raw_syscalls:sys_enter, one round):"
  echo
  echo "| test | -P | E syscalls/req | U syscalls/req | R syscalls/req |"
  echo "|---|---:|---:|---:|---:|"
  for t in ${TESTS//,/ }; do
    for p in 1 16; do
      n=$N; [ "$p" -gt 1 ] && n=$((N * 10))
      row="| $t | $p |"
      for s in $SERVERS; do
        pid=$(eval echo "\$PID_$s")
        perf stat -x, -e raw_syscalls:sys_enter -p "$pid" -o "$T/perf.$s" -- \
          taskset -c 1 redis-benchmark $(target "$s") -t "$t" -n "$n" -c "$C" -d "$D" -r 100000 -P "$p" -q >/dev/null 2>&1
        c=$(awk -F, '/raw_syscalls/{print $1}' "$T/perf.$s")
        row="$row $(python3 -c "print(f'{$c/$n:.2f}')") |"
      done
      echo "$row"
    done
  done
fi
echo
echo "load average at end: $(cut -d' ' -f1-3 /proc/loadavg)"
