#!/usr/bin/env bash
# SET/GET through redis-benchmark --cluster on three Damselfly primaries (--cluster-mode yes, the
# topology pushed with CLUSTERX SETNODES as kvrocks-controller does) against one Damselfly node
# (plain redis-benchmark) and against a three-node redis-server cluster (redis-cli --cluster create).
#
#   bench/cluster.sh [DAMSELFLY_BINARY]        (default /tmp/damselfly; go build -o /tmp/damselfly ./cmd/damselfly)
#
# Every server runs with one shard / one thread. Reports ops/s (noisy on this machine) and the CPU
# time of all server processes of a setup per request (utime+stime from /proc/PID/stat), which is
# what to compare. Env: N (requests, 200000), C (clients, 50), P (pipeline, 1), D (value bytes, 256).
set -euo pipefail
BIN=${1:-/tmp/damselfly}
N=${N:-200000}; C=${C:-50}; P=${P:-1}; D=${D:-256}
command -v redis-benchmark >/dev/null || { echo "needs redis-benchmark (apt-get install -y redis-tools)" >&2; exit 2; }
DIR=$(mktemp -d); PIDS=()
cleanup() { for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null || true; rm -rf "$DIR"; }
trap cleanup EXIT
port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
waitport() { for _ in $(seq 400); do redis-cli -p "$1" ping >/dev/null 2>&1 && return; sleep 0.05; done; echo "port $1 did not answer" >&2; exit 1; }
HZ=$(getconf CLK_TCK)
ticks() { local s=0; for p in "$@"; do s=$((s + $(awk '{print $14+$15}' /proc/"$p"/stat))); done; echo $s; }

# Three Damselfly primaries.
DP=(); DPID=()
for i in 0 1 2; do
  p=$(port); DP+=("$p")
  "$BIN" --port "$p" --bind 127.0.0.1 --shards 1 --cluster-mode yes --save "" --dir "$DIR" --loglevel warning & DPID+=($!); PIDS+=($!)
done
for p in "${DP[@]}"; do waitport "$p"; done
TOPO=$(printf '%040d 127.0.0.1 %s master - 0-5460\n%040d 127.0.0.1 %s master - 5461-10922\n%040d 127.0.0.1 %s master - 10923-16383' \
  1 "${DP[0]}" 2 "${DP[1]}" 3 "${DP[2]}")
for i in 0 1 2; do redis-cli -p "${DP[$i]}" CLUSTERX SETNODEID "$(printf '%040d' $((i+1)))" >/dev/null; redis-cli -p "${DP[$i]}" CLUSTERX SETNODES "$TOPO" 1 >/dev/null; done
# One Damselfly node.
SP=$(port); "$BIN" --port "$SP" --bind 127.0.0.1 --shards 1 --save "" --dir "$DIR" --loglevel warning & SPID=$!; PIDS+=($!)
waitport "$SP"
# Three redis-server cluster nodes.
RP=(); RPID=()
for i in 0 1 2; do
  p=$(port); RP+=("$p"); mkdir -p "$DIR/r$i"
  redis-server --port "$p" --bind 127.0.0.1 --cluster-enabled yes --cluster-config-file "$DIR/r$i/nodes.conf" --dir "$DIR/r$i" --save "" --appendonly no >/dev/null & RPID+=($!); PIDS+=($!)
done
for p in "${RP[@]}"; do waitport "$p"; done
redis-cli --cluster create "127.0.0.1:${RP[0]}" "127.0.0.1:${RP[1]}" "127.0.0.1:${RP[2]}" --cluster-yes >/dev/null
for _ in $(seq 100); do redis-cli -p "${RP[0]}" cluster info | grep -q cluster_state:ok && break; sleep 0.1; done
sleep 1

run() { # name test port cluster(0|1) pids... -> table row
  local name=$1 t=$2 p=$3 cl=$4; shift 4
  local t0 t1 ops flag=""
  [ "$cl" = 1 ] && flag="--cluster"
  t0=$(ticks "$@")
  ops=$(redis-benchmark $flag -p "$p" -t "$t" -n "$N" -c "$C" -P "$P" -d "$D" -r 100000 -q 2>/dev/null | tr '\r' '\n' | awk '/requests per second/ {for (i=1;i<=NF;i++) if ($i=="requests") v=$(i-1)} END {print v}')
  t1=$(ticks "$@")
  python3 -c "print('| $name | $t | $P | %s | %.2f |' % ('$ops', ($t1-$t0)/$HZ*1e6/$N))"
}
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "| setup | test | pipeline | ops/s | server CPU-µs/req |"
echo "|---|---|---:|---:|---:|"
for t in set get; do
  for round in 1 2; do
    run "Damselfly, 3 nodes (cluster)" "$t" "${DP[0]}" 1 "${DPID[@]}"
    run "Damselfly, 1 node" "$t" "$SP" 0 "$SPID"
    run "redis-server, 3 nodes (cluster)" "$t" "${RP[0]}" 1 "${RPID[@]}"
  done
done
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg)"
