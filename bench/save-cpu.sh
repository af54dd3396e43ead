#!/usr/bin/env bash
# CPU of a foreground SAVE, Damselfly binaries (RDB and native S2) against
# redis-server, alternating in one run (issue 14).
#
#   bench/save-cpu.sh ROUNDS DAMSELFLY_BINARY...
#   KEYS=1000000 VAL=100 bench/save-cpu.sh 3 /tmp/dfly-main /tmp/dfly-branch
#
# Each server is pinned to CPU 0 (taskset; Damselfly then runs with
# GOMAXPROCS 1), gets DEBUG POPULATE KEYS keys of VAL bytes, then SAVE; the
# figure is the server's utime+stime from /proc/PID/stat over the SAVE
# alone, with its wall time, the dump's size (all its files) and the load
# average (the machine is shared: compare CPU seconds within one run).
set -euo pipefail
ROUNDS=${1:?usage: save-cpu.sh ROUNDS DAMSELFLY_BINARY...}; shift
KEYS=${KEYS:-1000000}; VAL=${VAL:-100}
cpu() { awk '{print ($14+$15)/100}' /proc/"$1"/stat; }
one() { # name command...
	local name=$1; shift
	local d; d=$(mktemp -d /tmp/savecpu.XXXXXX)
	local p=$(python3 -c 'import socket;s=socket.socket();s.bind(("127.0.0.1",0));print(s.getsockname()[1])')
	taskset -c 0 "$@" --port "$p" --dir "$d" >"$d/log" 2>&1 &
	local pid=$!
	until [ "$(redis-cli -p "$p" PING 2>/dev/null)" = PONG ]; do sleep 0.02; done
	redis-cli -p "$p" DEBUG POPULATE "$KEYS" key "$VAL" >/dev/null
	local c0 t0 c1 t1
	c0=$(cpu "$pid"); t0=$(date +%s.%N)
	redis-cli -p "$p" SAVE >/dev/null
	t1=$(date +%s.%N); c1=$(cpu "$pid")
	rm -f "$d/log"
	printf '%-28s save_cpu %5.2f s  wall %5.2f s  %6.1f MB  load %s\n' "$name" "$(echo "$c1 - $c0" | bc)" \
		"$(echo "$t1 - $t0" | bc)" "$(du -sb "$d" | awk '{print $1/1e6}')" "$(cut -d' ' -f1 /proc/loadavg)"
	kill "$pid"; wait "$pid" 2>/dev/null || true
	rm -rf "$d"
}
for _ in $(seq "$ROUNDS"); do
	one redis-server redis-server --save '' --appendonly no --enable-debug-command yes
	for b in "$@"; do
		one "$(basename "$b") rdb" "$b" --save '' --bind 127.0.0.1 --enable-debug-command yes
		one "$(basename "$b") native-s2" "$b" --save '' --bind 127.0.0.1 --enable-debug-command yes --dbformat native --dbcompression s2
	done
done
