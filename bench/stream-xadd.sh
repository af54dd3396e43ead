#!/usr/bin/env bash
# Streams: memory per entry and XADD throughput/CPU of two servers side by side (redis-benchmark).
#
#   bench/stream-xadd.sh PORT_A PORT_B
#
# Start both servers first, empty, each pinned to CPU 0 (taskset -c 0 ...); the load runs on CPU 1.
# 1. Memory: 1M x `XADD mem * f 0123456789` (-P 16) into each, then the RSS growth of each process
#    (VmRSS after minus before, /proc/PID/status) and Redis's used_memory growth (INFO memory), per entry.
# 2. Throughput: `XADD s * f 0123456789` with and without pipelining (-P 16), alternately A B A B;
#    ops/s (best of two) and server CPU time per request (utime+stime, least of two).
# Env: N (requests, 200000; x10 when pipelined), C (clients, 50), M (memory entries, 1000000).
set -euo pipefail
A=${1:?usage: stream-xadd.sh PORT_A PORT_B}; B=${2:?usage: stream-xadd.sh PORT_A PORT_B}
N=${N:-200000}; C=${C:-50}; M=${M:-1000000}
pid_of() { ss -ltnpH "sport = :$1" | grep -o 'pid=[0-9]*' | head -n 1 | cut -d= -f2; }
PA=$(pid_of "$A"); PB=$(pid_of "$B")
HZ=$(getconf CLK_TCK)
ticks() { awk '{print $14+$15}' /proc/"$1"/stat; }
rss() { awk '/VmRSS/ {print $2*1024}' /proc/"$1"/status; }
used() { redis-cli -p "$1" info memory | awk -F: '/^used_memory:/ {print $2+0}'; }
echo "| server | entries | RSS growth MiB | RSS B/entry | used_memory growth MiB | used_memory B/entry |"
echo "|---|---:|---:|---:|---:|---:|"
for port in "$A" "$B"; do
  pid=$(pid_of "$port"); r0=$(rss "$pid"); u0=$(used "$port")
  taskset -c 1 redis-benchmark -p "$port" -n "$M" -c "$C" -P 16 -q XADD mem '*' f 0123456789 >/dev/null
  sleep 1; r1=$(rss "$pid"); u1=$(used "$port"); len=$(redis-cli -p "$port" xlen mem)
  python3 -c "print(f'| $port | $len | {($r1-$r0)/2**20:.1f} | {($r1-$r0)/$len:.1f} | {($u1-$u0)/2**20:.1f} | {($u1-$u0)/$len:.1f} |')"
done
echo
run() { # port pid pipeline n -> "ops cpu_us_per_request"
  local t0 t1 ops
  t0=$(ticks "$2")
  ops=$(taskset -c 1 redis-benchmark -p "$1" -n "$4" -c "$C" -P "$3" --csv XADD s '*' f 0123456789 2>/dev/null \
    | awk -F, 'NR>1 {gsub(/"/,"",$2); print $2; exit}')
  t1=$(ticks "$2")
  python3 -c "print($ops, ($t1-$t0)/$HZ*1e6/$4)"
}
echo "| test | pipeline | A ops/s ($A) | B ops/s ($B) | ops A/B | A CPU-µs/req | B CPU-µs/req | CPU A/B |"
echo "|---|---:|---:|---:|---:|---:|---:|---:|"
for p in 1 16; do
  n=$N; [ "$p" -gt 1 ] && n=$((N * 10))
  read -r a1 ac1 < <(run "$A" "$PA" "$p" "$n"); read -r b1 bc1 < <(run "$B" "$PB" "$p" "$n")
  read -r a2 ac2 < <(run "$A" "$PA" "$p" "$n"); read -r b2 bc2 < <(run "$B" "$PB" "$p" "$n")
  python3 - "$p" "$a1" "$a2" "$b1" "$b2" "$ac1" "$ac2" "$bc1" "$bc2" <<'PY'
import sys
p = sys.argv[1]
a, b = max(map(float, sys.argv[2:4])), max(map(float, sys.argv[4:6]))
ac, bc = min(map(float, sys.argv[6:8])), min(map(float, sys.argv[8:10]))
print(f"| xadd | {p} | {a:.0f} | {b:.0f} | {a/b:.2f} | {ac:.2f} | {bc:.2f} | {ac/bc:.2f} |")
PY
done
