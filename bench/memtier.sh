#!/usr/bin/env bash
# The comparison people publish between Redis and its replacements:
# memtier_benchmark's default workload (1 SET : 10 GET, 4 threads x 50
# connections, 32-byte values, random keys) against Damselfly and
# redis-server, over TCP and over a Unix socket, unpipelined and with
# --pipeline 16. Each server is pinned to core 0 and memtier to core 1; the
# runs are interleaved per round so a busy moment on a shared machine hits
# every configuration alike. Reports ops/s, p50/p99/p99.9 latency (ms) and
# server CPU per request (utime+stime from /proc/PID/stat over the
# commands the server counted in INFO), and which event loop served each
# run (INFO's multiplexing_api: io_uring, epoll, goroutines), so that a
# table never mixes up loops.
#
#   bench/memtier.sh [ROUNDS] [SECONDS]        (defaults: 2 rounds, 10 s)
#
# THREADS (default 4) and CLIENTS (default 50) set memtier's -t and -c;
# DAMSELFLY names a prebuilt binary instead of building the repository's.
# PIPELINES (default "1 16") and TRANSPORTS (default "tcp unix") narrow the
# runs. SERVERS (default "damselfly redis") may add damselfly-gpc: Damselfly with
# --goroutine-per-conn, which is how Unix-socket clients were served before
# they moved to the event loops, and damselfly-epoll: the event loops on
# epoll (plain damselfly uses io_uring where the kernel allows it), and
# damselfly-old: the binary DAMSELFLY_OLD (e.g. an earlier commit's), to
# measure a change in the same run.
#
# memtier_benchmark is not packaged by Debian: build it by hand outside the
# repository and put it on PATH or in $MEMTIER, e.g.
#   apt-get install -y autoconf automake libtool libevent-dev libpcre3-dev libssl-dev zlib1g-dev
#   git clone https://github.com/RedisLabs/memtier_benchmark /tmp/memtier && cd /tmp/memtier
#   autoreconf -ivf && ./configure && make && export MEMTIER=/tmp/memtier/memtier_benchmark
# Without it the script says so and exits 0 (skipped).
# bench/memtier-docker.sh runs the same comparison with both servers in containers.
set -euo pipefail
ROUNDS=${1:-2}; SECS=${2:-10}
MEMTIER=${MEMTIER:-$(command -v memtier_benchmark || true)}
if [ -z "$MEMTIER" ] || [ ! -x "$MEMTIER" ]; then
  echo "memtier.sh: memtier_benchmark not found (set MEMTIER; see the build steps at the top of $0): skipped"
  exit 0
fi
command -v redis-server >/dev/null || { echo "memtier.sh: redis-server not installed (apt-get install -y redis-server): skipped"; exit 0; }
root=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d)
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; rm -rf "$work"; }
trap cleanup EXIT
if [ -n "${DAMSELFLY:-}" ]; then cp "$DAMSELFLY" "$work/damselfly"; else (cd "$root" && go build -o "$work/damselfly" ./cmd/damselfly); fi
if [ -n "${DAMSELFLY_OLD:-}" ]; then cp "$DAMSELFLY_OLD" "$work/damselfly-old"; fi

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
cpu_ticks() { awk '{print $14+$15}' "/proc/$1/stat"; }
commands() { redis-cli -p "$1" info stats | tr -d '\r' | awk -F: '$1=="total_commands_processed"{print $2}'; }
loop_api() { redis-cli -p "$1" info server | tr -d '\r' | awk -F: '$1=="multiplexing_api"{print $2}'; }

# start SERVER PORT SOCK: starts the server on core 0, echoes its pid.
start() {
  local server=$1 port=$2 sock=$3
  case $server in
    damselfly-gpc) taskset -c 0 "$work/damselfly" --goroutine-per-conn --port "$port" --bind 127.0.0.1 --unixsocket "$sock" \
                 --save "" --dir "$work" --loglevel warning >"$work/$server.log" 2>&1 & ;;
    damselfly-epoll) taskset -c 0 "$work/damselfly" --event-loop epoll --port "$port" --bind 127.0.0.1 --unixsocket "$sock" \
                 --save "" --dir "$work" --loglevel warning >"$work/$server.log" 2>&1 & ;;
    damselfly) taskset -c 0 "$work/damselfly" --port "$port" --bind 127.0.0.1 --unixsocket "$sock" \
                 --save "" --dir "$work" --loglevel warning >"$work/$server.log" 2>&1 & ;;
    damselfly-old) taskset -c 0 "$work/damselfly-old" --port "$port" --bind 127.0.0.1 --unixsocket "$sock" \
                 --save "" --dir "$work" --loglevel warning >"$work/$server.log" 2>&1 & ;;
    redis) taskset -c 0 redis-server --port "$port" --bind 127.0.0.1 --unixsocket "$sock" --save "" \
             --appendonly no --dir "$work" --loglevel warning >"$work/$server.log" 2>&1 & ;;
  esac
  local pid=$!
  for _ in $(seq 100); do redis-cli -p "$port" ping >/dev/null 2>&1 && break; sleep 0.05; done
  echo "$pid"
}

hz=$(getconf CLK_TCK)
out="$work/results"
echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
for r in $(seq "$ROUNDS"); do
  for pipeline in ${PIPELINES:-1 16}; do
    for transport in ${TRANSPORTS:-tcp unix}; do
      for server in ${SERVERS:-damselfly redis}; do
        port=$(free_port); sock="$work/$server.sock"
        pid=$(start "$server" "$port" "$sock"); pids+=("$pid")
        if [ "$transport" = tcp ]; then target=(-s 127.0.0.1 -p "$port"); else target=(-S "$sock"); fi
        c0=$(cpu_ticks "$pid"); n0=$(commands "$port")
        line=$(taskset -c 1 "$MEMTIER" "${target[@]}" --protocol=redis -t "${THREADS:-4}" -c "${CLIENTS:-50}" --ratio=1:10 -d 32 \
                 --pipeline="$pipeline" --test-time="$SECS" --print-percentiles 50,99,99.9 --hide-histogram \
                 2>/dev/null | awk '$1=="Totals"')
        c1=$(cpu_ticks "$pid"); n1=$(commands "$port"); api=$(loop_api "$port")
        kill "$pid"; while kill -0 "$pid" 2>/dev/null; do sleep 0.05; done
        # Totals: ops/s hits/s misses/s avg p50 p99 p99.9 KB/s
        read -r _ ops _ _ _ p50 p99 p999 _ <<<"$line"
        cpu_us=$(awk -v t=$((c1 - c0)) -v hz="$hz" -v n=$((n1 - n0)) 'BEGIN{printf "%.2f", t/hz*1e6/(n>0?n:1)}')
        echo "$server $transport P$pipeline round $r [$api]: ops/s $ops | p50 $p50 | p99 $p99 | p99.9 $p999 | CPU/req ${cpu_us} us" | tee -a "$out"
      done
    done
  done
done
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
python3 - "$out" <<'PY'
import re, statistics, sys, collections
rows = collections.defaultdict(list)
loops = collections.defaultdict(set)
for l in open(sys.argv[1]):
    m = re.match(r"(\S+) (\S+) (P\d+) round \d+ \[(\S*)\]: ops/s ([0-9.]+) \| p50 ([0-9.]+) \| p99 ([0-9.]+) \| p99.9 ([0-9.]+) \| CPU/req ([0-9.]+) us", l)
    if m:
        rows[(m[2], m[3], m[1])].append([float(x) for x in m.groups()[4:]])
        loops[(m[2], m[3], m[1])].add(m[4] or "?")
def f(v, p): return f"{statistics.median(v):.{p}f} ({min(v):.{p}f}-{max(v):.{p}f})" if len(v) > 1 else f"{v[0]:.{p}f}"
print()
print("| transport | pipeline | server | loop | ops/s | p50 ms | p99 ms | p99.9 ms | server CPU/request µs |")
print("|---|---|---|---|---:|---:|---:|---:|---:|")
for (tr, pl, srv), v in sorted(rows.items()):
    cols = list(zip(*v))
    print(f"| {tr} | {pl} | {srv} | {'/'.join(sorted(loops[(tr, pl, srv)]))} | {f(cols[0],0)} | {f(cols[1],3)} | {f(cols[2],3)} | {f(cols[3],3)} | {f(cols[4],2)} |")
PY
