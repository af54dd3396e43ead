#!/usr/bin/env bash
# What a background save costs writers, Damselfly against redis-server in
# one run, for 100 B, 100 KB and 10 MB values (issue 14).
#
#   bench/snapshot-latency.sh DAMSELFLY_BINARY [REDIS_SERVER]
#
# (REDIS_SERVER "-" runs Damselfly alone, e.g. to compare two binaries.)
#
# For each keys:bytes:clients of SIZES (default "1000000:100:50
# 2000:100000:8 20:10000000:2": fewer clients for big values, so that the
# no-save phase is not already queueing on this 2-core machine) and each
# server, it starts the server on a random port and a temporary directory,
# runs bench/snaplat: fill every key, BEFORE (default 3s) of SETs of fresh
# values to random existing keys alone, then BGSAVE under the same load
# until it ends. Per phase (no save / during save) it prints client-side
# SET latency (p50/p99/p99.9/max), the server's own SET percentiles (INFO
# latencystats), the server's CPU per SET from /proc/PID/stat (the process,
# and its reaped children: Redis's fork), peak Pss over idle, and Redis's
# latest_fork_usec; for Damselfly the "DB saved" log line, whose
# writer_waits field gives the longest pre-change hook run and traversal
# lock hold (what a writer can wait behind the save) and in_flight_peak_MiB
# the save's extra memory as counted by its budget. Load averages are
# printed with every run: the machine is shared.
#
# SMALL=N adds N connections doing small-key SET/GET beside the writers
# (snaplat -small), reported apart: what the save costs the clients that
# are not overwriting big values.
#
# PIN=1 runs each server on core 0 and snaplat on core 1 (taskset), as
# the other benchmarks do: the server then has one CPU (GOMAXPROCS 1), so
# its event loops and the save's goroutines share one P.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
dfly=${1:?usage: snapshot-latency.sh DAMSELFLY_BINARY [REDIS_SERVER]}
redis=${2:-redis-server}
sizes=${SIZES:-"1000000:100:50 2000:100000:8 20:10000000:2"}
(cd "$here" && go build -o /tmp/snaplat.$$ ./bench/snaplat)
trap 'rm -f /tmp/snaplat.$$' EXIT
for s in $sizes; do
	IFS=: read -r keys size clients <<<"$s"
	servers=("$dfly")
	[ "$redis" = - ] || servers+=("$redis --appendonly no")
	for srv in "${servers[@]}"; do
		dir=$(mktemp -d); port=$(python3 -c 'import socket;s=socket.socket();s.bind(("127.0.0.1",0));print(s.getsockname()[1])')
		srvpin=(); clipin=()
		[ "${PIN:-0}" = 1 ] && srvpin=(taskset -c 0) && clipin=(taskset -c 1)
		"${srvpin[@]}" $srv --port "$port" --dir "$dir" --save "" >"$dir/log" 2>&1 &
		pid=$!
		for _ in $(seq 1 100); do redis-cli -p "$port" PING >/dev/null 2>&1 && break; sleep 0.05; done
		echo "== $srv | $keys x $size B, $clients clients | load average $(cut -d' ' -f1-3 /proc/loadavg)"
		"${clipin[@]}" /tmp/snaplat.$$ -addr "127.0.0.1:$port" -pid "$pid" -keys "$keys" -size "$size" -clients "$clients" -small "${SMALL:-0}" -before "${BEFORE:-3s}" || true
		grep -h "DB saved" "$dir/log" | sed 's/^/  server: /' || true
		kill "$pid"; wait "$pid" 2>/dev/null || true
		rm -rf "$dir"
	done
done
