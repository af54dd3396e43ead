#!/usr/bin/env bash
# Bitmaps, HyperLogLog and GEO: memory and CPU per request of two servers side by side.
#
#   bench/datacmds.sh PORT_A PORT_B
#
# Start both servers first, empty, each pinned to CPU 0 (taskset -c 0 ...); the load runs on CPU 1.
# 1. Memory (RSS growth of the process, /proc/PID/status, and INFO used_memory growth):
#    M HyperLogLogs (PFADD hll:i with 3 elements each: sparse), one 100M-bit bitmap
#    (SETBIT big 99999999 1), M geo points spread over Europe (GEOADD geo, 1000 per command).
#    Loaded with redis-cli --pipe from generated RESP.
# 2. CPU: SETBIT of bit 4095 in 1M random keys (redis-benchmark's zero-padded __rand_int__ is
#    not a valid offset), BITCOUNT of a 1 KiB string, PFADD into one (dense)
#    HyperLogLog, PFCOUNT of one key (cached) and of two keys (a union, always computed), GEOADD
#    of random points and GEOSEARCH BYRADIUS 20 km COUNT 10 in the M-point set; each with and
#    without pipelining (-P 16), alternately A B A B: ops/s (best of two) and server CPU time per
#    request (utime+stime, least of two).
# Env: N (requests, 100000; x10 when pipelined), C (clients, 50), M (items for memory, 1000000),
#      R (random key/element space, 1000000), SKIP_MEMORY=1 (CPU tests only, on loaded servers),
#      ONLY (comma-separated test names, e.g. pfcount2,geosearch).
set -euo pipefail
A=${1:?usage: datacmds.sh PORT_A PORT_B}; B=${2:?usage: datacmds.sh PORT_A PORT_B}
N=${N:-100000}; C=${C:-50}; M=${M:-1000000}
pid_of() { ss -ltnpH "sport = :$1" | grep -o 'pid=[0-9]*' | head -n 1 | cut -d= -f2; }
PA=$(pid_of "$A"); PB=$(pid_of "$B")
[ -n "$PA" ] && [ -n "$PB" ] || { echo "no listening process found on $A or $B" >&2; exit 2; }
HZ=$(getconf CLK_TCK)
ticks() { awk '{print $14+$15}' /proc/"$1"/stat; }
rss() { awk '/VmRSS/ {print $2*1024}' /proc/"$1"/status; }
used() { redis-cli -p "$1" info memory | awk -F: '/^used_memory:/ {print $2+0}'; }
gen() { # kind -> RESP on stdout
  python3 - "$1" "$M" <<'PY'
import random, sys
kind, m = sys.argv[1], int(sys.argv[2])
out = sys.stdout.buffer
def cmd(*a):
    out.write(b"*%d\r\n" % len(a) + b"".join(b"$%d\r\n%s\r\n" % (len(x), x) for x in (s.encode() for s in a)))
random.seed(1)
if kind == "hll":
    for i in range(m):
        cmd("PFADD", "hll:%d" % i, "a%d" % i, "b%d" % i, "c%d" % i)
elif kind == "geo":
    for i in range(0, m, 1000):
        a = ["GEOADD", "geo"]
        for k in range(i, min(i + 1000, m)):
            a += ["%.6f" % random.uniform(-10, 30), "%.6f" % random.uniform(36, 60), "p%d" % k]
        cmd(*a)
PY
}
if [ "${SKIP_MEMORY:-0}" != 1 ]; then
echo "| server | data | items | RSS growth MiB | RSS B/item | used_memory growth MiB | used_memory B/item |"
echo "|---|---|---:|---:|---:|---:|---:|"
for port in "$A" "$B"; do
  pid=$(pid_of "$port")
  for kind in hll bitmap geo; do
    r0=$(rss "$pid"); u0=$(used "$port")
    case $kind in
      bitmap) redis-cli -p "$port" setbit big 99999999 1 >/dev/null; items=1 ;;
      *) gen "$kind" | redis-cli -p "$port" --pipe >/dev/null; items=$M ;;
    esac
    sleep 1; r1=$(rss "$pid"); u1=$(used "$port")
    python3 -c "print(f'| $port | $kind | $items | {($r1-$r0)/2**20:.1f} | {($r1-$r0)/$items:.1f} | {($u1-$u0)/2**20:.1f} | {($u1-$u0)/$items:.1f} |')"
  done
done
echo
fi
for port in "$A" "$B"; do
  redis-cli -p "$port" set bc "$(head -c 768 /dev/urandom | base64 -w0)" >/dev/null
  redis-cli -p "$port" pfadd hll2 x y z >/dev/null
done
run() { # port pid pipeline n args... -> "ops cpu_us_per_request"
  local port=$1 pid=$2 p=$3 n=$4 t0 t1 ops; shift 4
  t0=$(ticks "$pid")
  ops=$(taskset -c 1 redis-benchmark -p "$port" -n "$n" -c "$C" -P "$p" -r "${R:-1000000}" --csv "$@" 2>/dev/null \
    | awk -F, 'NR>1 {gsub(/"/,"",$2); print $2; exit}')
  t1=$(ticks "$pid")
  python3 -c "print($ops, ($t1-$t0)/$HZ*1e6/$n)"
}
echo "| test | pipeline | A ops/s ($A) | B ops/s ($B) | ops A/B | A CPU-µs/req | B CPU-µs/req | CPU A/B |"
echo "|---|---:|---:|---:|---:|---:|---:|---:|"
while IFS='|' read -r name args; do
  case ",${ONLY:-$name}," in *",$name,"*) ;; *) continue ;; esac
  # shellcheck disable=SC2086
  for p in 1 16; do
    n=$N; [ "$p" -gt 1 ] && n=$((N * 10))
    read -r a1 ac1 < <(run "$A" "$PA" "$p" "$n" $args); read -r b1 bc1 < <(run "$B" "$PB" "$p" "$n" $args)
    read -r a2 ac2 < <(run "$A" "$PA" "$p" "$n" $args); read -r b2 bc2 < <(run "$B" "$PB" "$p" "$n" $args)
    python3 - "$name" "$p" "$a1" "$a2" "$b1" "$b2" "$ac1" "$ac2" "$bc1" "$bc2" <<'PY'
import sys
t, p = sys.argv[1], sys.argv[2]
a, b = max(map(float, sys.argv[3:5])), max(map(float, sys.argv[5:7]))
ac, bc = min(map(float, sys.argv[7:9])), min(map(float, sys.argv[9:11]))
print(f"| {t} | {p} | {a:.0f} | {b:.0f} | {a/b:.2f} | {ac:.2f} | {bc:.2f} | {ac/bc:.2f} |")
PY
  done
done <<'TESTS'
setbit|SETBIT bm:__rand_int__ 4095 1
bitcount|BITCOUNT bc
pfadd|PFADD hll __rand_int__
pfcount|PFCOUNT hll
pfcount2|PFCOUNT hll hll2
geoadd|GEOADD g 13.__rand_int__ 38.__rand_int__ m:__rand_int__
geosearch|GEOSEARCH geo FROMLONLAT 13.4 45.1 BYRADIUS 20 km COUNT 10 ASC
TESTS
