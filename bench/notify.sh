#!/usr/bin/env bash
# Keyspace notifications: server CPU per SET with notify-keyspace-events off, "KEA" with one
# subscriber (redis-cli PSUBSCRIBE '__key*__:*', reading everything) and "KEA0" (KEA, nobody
# subscribed), two servers side by side. Env MODES picks them ("off KEA" by default).
#
#   bench/notify.sh PORT_A PORT_B
#
# Start both servers first (pin them to CPU 0 with taskset -c 0 where possible); the load runs on
# CPU 1. Runs alternate A B A B; each figure is the least CPU time of two runs:
# utime+stime of the server process (/proc/PID/stat) divided by the requests.
# Env: N (requests, 200000), C (clients, 50), P (pipeline, 16).
set -euo pipefail
A=${1:?usage: notify.sh PORT_A PORT_B}; B=${2:?usage: notify.sh PORT_A PORT_B}
N=${N:-200000}; C=${C:-50}; P=${P:-16}
pid_of() { ss -ltnpH "sport = :$1" | grep -o 'pid=[0-9]*' | head -n 1 | cut -d= -f2; }
HZ=$(getconf CLK_TCK)
ticks() { awk '{print $14+$15}' /proc/"$1"/stat; }
run() { # port mode -> cpu µs per request
  local port=$1 mode=$2 pid sub t0 t1
  pid=$(pid_of "$port")
  redis-cli -p "$port" flushall >/dev/null
  sub=
  if [ "$mode" = KEA ]; then
    redis-cli -p "$port" config set notify-keyspace-events KEA >/dev/null
    redis-cli -p "$port" psubscribe '__key*__:*' >/dev/null & sub=$!
    sleep 0.3
  elif [ "$mode" = KEA0 ]; then
    redis-cli -p "$port" config set notify-keyspace-events KEA >/dev/null
  else
    redis-cli -p "$port" config set notify-keyspace-events "" >/dev/null
  fi
  t0=$(ticks "$pid")
  taskset -c 1 redis-benchmark -p "$port" -n "$N" -c "$C" -P "$P" -r 100000 -t set -q >/dev/null 2>&1
  t1=$(ticks "$pid")
  [ -n "$sub" ] && { sleep 0.5; kill "$sub"; wait "$sub" 2>/dev/null || true; }
  redis-cli -p "$port" config set notify-keyspace-events "" >/dev/null
  python3 -c "print(f'{($t1-$t0)/$HZ*1e6/$N:.2f}')"
}
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "| mode | A CPU-µs/SET ($A) | B CPU-µs/SET ($B) | A/B |"
echo "|---|---:|---:|---:|"
for mode in ${MODES:-off KEA}; do
  a1=$(run "$A" $mode); b1=$(run "$B" $mode); a2=$(run "$A" $mode); b2=$(run "$B" $mode)
  python3 -c "a=min($a1,$a2); b=min($b1,$b2); print(f'| {\"$mode\"} | {a:.2f} | {b:.2f} | {a/b:.2f} |')"
done
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg)"
