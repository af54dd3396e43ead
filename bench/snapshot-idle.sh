#!/usr/bin/env bash
# Idle BGSAVE time and CPU (no client writing), for one or more Damselfly
# binaries or redis-server, to check that the save runs at full speed when
# no writer waits (adaptive pacing, issue 14).
#
#   bench/snapshot-idle.sh "KEYS:BYTES ..." SERVER_CMD...
#
# Servers need DEBUG: pass --enable-debug-command yes (Damselfly and Redis).
# For each size and server: start on a random port and a temporary
# directory, DEBUG POPULATE KEYS key BYTES, then ROUNDS (default 3) x
# BGSAVE, waiting for each to end; prints each save's wall time (from INFO
# persistence's rdb_last_bgsave_time_sec is whole seconds, so it is timed
# here by polling every 10 ms) and the server's CPU (utime+stime of the
# process and its reaped children, /proc/PID/stat) per save.
set -euo pipefail
sizes=${1:?usage: snapshot-idle.sh "KEYS:BYTES ..." SERVER_CMD...}
shift
cpu() { awk '{print $14+$15+$16+$17}' "/proc/$1/stat"; }
for s in $sizes; do
	keys=${s%%:*}; size=${s##*:}
	for srv in "$@"; do
		dir=$(mktemp -d); port=$(python3 -c 'import socket;s=socket.socket();s.bind(("127.0.0.1",0));print(s.getsockname()[1])')
		$srv --port "$port" --dir "$dir" --save "" >"$dir/log" 2>&1 &
		pid=$!
		for _ in $(seq 1 100); do redis-cli -p "$port" PING >/dev/null 2>&1 && break; sleep 0.05; done
		redis-cli -p "$port" DEBUG POPULATE "$keys" key "$size"
		for r in $(seq 1 "${ROUNDS:-3}"); do
			c0=$(cpu "$pid"); t0=$(date +%s.%N)
			redis-cli -p "$port" BGSAVE >/dev/null
			sleep 0.01
			until redis-cli -p "$port" INFO persistence | grep -q 'rdb_bgsave_in_progress:0'; do sleep 0.01; done
			t1=$(date +%s.%N); c1=$(cpu "$pid")
			printf '%s | %d x %d B | save %d: %.2f s wall, %.2f s CPU | load average %s\n' "$srv" "$keys" "$size" "$r" \
				"$(echo "$t1 - $t0" | bc)" "$(echo "($c1 - $c0) / 100" | bc -l)" "$(cut -d' ' -f1-3 /proc/loadavg)"
		done
		grep -h "DB saved" "$dir/log" | sed 's/^/  server: /' || true
		kill "$pid"; wait "$pid" 2>/dev/null || true
		rm -rf "$dir"
	done
done
