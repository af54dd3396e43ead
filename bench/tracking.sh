#!/usr/bin/env bash
# Cost of client-side caching support on the hot path: server CPU per request
# of GET and SET (redis-benchmark, 50 clients, random keys) for
#   before   Damselfly at BASE (default: the commit before tracking, 58b0a05)
#   after    Damselfly of this tree, no tracking client
#   after+t  this tree with one idle RESP3 client that ran CLIENT TRACKING on
#            (the data layer's hook is installed: every write consults the
#            shard's tracking table)
#   redis    redis-server, and redis+t with the same tracking client
# in one run, alternating, each measured twice (the lower CPU is kept: the
# machine is shared). CPU = utime+stime of the server from /proc/PID/stat.
#
#   bench/tracking.sh [REQUESTS]
#
# Servers run on core 0, redis-benchmark on core 1 (taskset).
set -euo pipefail
cd "$(dirname "$0")/.."
N=${1:-200000}
BASE=${BASE:-58b0a05}
WORK=$(mktemp -d /tmp/trackbench.XXXXXX)
trap 'kill $(jobs -p) 2>/dev/null || true; rm -rf "$WORK"' EXIT
go build -o "$WORK/after" ./cmd/damselfly
mkdir "$WORK/src" && git archive "$BASE" | tar -x -C "$WORK/src"
(cd "$WORK/src" && go build -o "$WORK/before" ./cmd/damselfly)

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
cpu_ticks() { awk '{print $14+$15}' /proc/"$1"/stat; }

# tracker PORT: a RESP3 connection with CLIENT TRACKING on, reading its pushes.
tracker() {
  python3 - "$1" <<'PY' &
import socket, sys, time
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])))
s.sendall(b"*2\r\n$5\r\nHELLO\r\n$1\r\n3\r\n*3\r\n$6\r\nCLIENT\r\n$8\r\nTRACKING\r\n$2\r\non\r\n")
s.settimeout(1)
end = time.time() + 600
while time.time() < end:
    try:
        if not s.recv(65536):
            break
    except socket.timeout:
        pass
PY
  TRACKER=$!
  sleep 0.3
}

run() { # run NAME BIN TRACK -> prints "name test rps cpu_us"
  local name=$1 bin=$2 track=$3 port pid dir
  port=$(free_port); dir=$(mktemp -d "$WORK/d.XXXX")
  if [ "$bin" = redis ]; then
    taskset -c 0 redis-server --port "$port" --bind 127.0.0.1 --save "" --appendonly no --dir "$dir" >/dev/null 2>&1 &
  else
    taskset -c 0 "$bin" --port "$port" --bind 127.0.0.1 --save "" --dir "$dir" --loglevel warning 2>/dev/null &
  fi
  pid=$!
  for _ in $(seq 100); do redis-cli -p "$port" PING >/dev/null 2>&1 && break; sleep 0.05; done
  TRACKER=
  [ "$track" = yes ] && tracker "$port"
  for t in set get; do
    local t0 t1 csv
    t0=$(cpu_ticks "$pid")
    csv=$(taskset -c 1 redis-benchmark -p "$port" -t "$t" -n "$N" -c 50 -d 16 -r 100000 --csv 2>/dev/null | tail -1)
    t1=$(cpu_ticks "$pid")
    python3 -c 'import sys; f=[x.strip("\"") for x in sys.argv[1].split(",")]; print(sys.argv[2], sys.argv[3], f[1], "%.2f" % ((int(sys.argv[5])-int(sys.argv[4]))*1e6/int(sys.argv[7])/int(sys.argv[6])))' \
      "$csv" "$name" "$t" "$t0" "$t1" "$N" "$(getconf CLK_TCK)"
  done
  [ -n "$TRACKER" ] && kill "$TRACKER" 2>/dev/null
  kill "$pid"; wait "$pid" 2>/dev/null || true
}

echo "load average: $(cut -d' ' -f1-3 /proc/loadavg)" >&2
{
  for round in 1 2; do
    run before "$WORK/before" no
    run after "$WORK/after" no
    run after+t "$WORK/after" yes
    run redis redis no
    run redis+t redis yes
  done
} | python3 -c '
import sys, collections
best = collections.OrderedDict()
for line in sys.stdin:
    name, t, rps, cpu = line.split()
    k = (name, t)
    r, c = best.get(k, (0.0, 1e18))
    best[k] = (max(r, float(rps)), min(c, float(cpu)))
print("| server | command | ops/s (best of 2) | server CPU µs/request (least of 2) |")
print("|---|---|---|---|")
for (name, t), (r, c) in best.items():
    print(f"| {name} | {t.upper()} | {r:.0f} | {c:.2f} |")
'
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg)" >&2
