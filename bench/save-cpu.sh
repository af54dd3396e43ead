#!/usr/bin/env bash
# CPU and wall time of a foreground SAVE and of loading the dump at start,
# Damselfly binaries (RDB and native S2) against redis-server, alternating
# in one run, with the disk's own write speed measured beside them (issue 14).
#
#   bench/save-cpu.sh ROUNDS DAMSELFLY_BINARY...
#   KEYS=1000000 VAL=100 bench/save-cpu.sh 3 /tmp/dfly-main /tmp/dfly-branch
#   KEYS=20 VAL=10485760 REDIS_ARGS='--rdbcompression no' bench/save-cpu.sh 3 /tmp/dfly-main /tmp/dfly-branch
#
# Each server is pinned to CPU 0 (taskset; Damselfly then runs with
# GOMAXPROCS 1, one shard), or to the CPUs in CPUS (e.g. CPUS=0,1: two
# shards, whose native files are written and loaded in parallel), gets DEBUG POPULATE KEYS keys of VAL bytes, then SAVE; the
# figure is the server's utime+stime from /proc/PID/stat over the SAVE
# alone, with its wall time, the dump's size (all its files), its write rate
# (size ÷ wall) and that rate as a share of the disk's: every round starts
# with dd writing KEYS×VAL bytes (at least 64 MB) with conv=fdatasync to the
# same directory, as SAVE ends with an fsync. The server is then stopped
# (SHUTDOWN NOSAVE) and restarted on the dump: "load" is the wall time from
# process start to the first +PONG (Redis answers -LOADING meanwhile,
# Damselfly listens once loaded) and the CPU time by then; the dump is in the
# page cache. REDIS_ARGS are added to redis-server's command line (DEBUG
# POPULATE pads values with zero bytes, which Redis's default LZF shrinks to
# nothing; '--rdbcompression no' makes it write what Damselfly writes).
# FORMATS lists the Damselfly formats (default "rdb native-s2"). The load
# average is printed with each line (the machine is shared: compare within
# one run).
set -euo pipefail
ROUNDS=${1:?usage: save-cpu.sh ROUNDS DAMSELFLY_BINARY...}; shift
KEYS=${KEYS:-1000000}; VAL=${VAL:-100}; REDIS_ARGS=${REDIS_ARGS:-}; FORMATS=${FORMATS:-rdb native-s2}
DISK_MBS=0
cpu() { awk '{print ($14+$15)/100}' /proc/"$1"/stat; }
port() { python3 -c 'import socket;s=socket.socket();s.bind(("127.0.0.1",0));print(s.getsockname()[1])'; }
ready() { until [ "$(redis-cli -p "$1" PING 2>/dev/null)" = PONG ]; do sleep 0.002; done; }
stop() { redis-cli -p "$1" SHUTDOWN NOSAVE >/dev/null 2>&1 || true; wait "$2" 2>/dev/null || true; }
disk() { # the disk's write rate in MB/s, as dd reports it
	local d; d=$(mktemp -d /tmp/savecpu.XXXXXX)
	local mb=$(( KEYS * VAL / 1000000 )); [ "$mb" -lt 64 ] && mb=64
	DISK_MBS=$(dd if=/dev/zero of="$d/dd" bs=1M count="$mb" conv=fdatasync 2>&1 |
		awk '/copied/{for(i=1;i<=NF;i++) if($i=="bytes"){b=$(i-1)} ; s=$(NF-3); print b/s/1e6}')
	rm -rf "$d"
	printf '%-28s %.0f MB/s (dd %d MB, conv=fdatasync)  load %s\n' "disk" "$DISK_MBS" "$mb" "$(cut -d' ' -f1 /proc/loadavg)"
}
one() { # name command...
	local name=$1; shift
	local d; d=$(mktemp -d /tmp/savecpu.XXXXXX)
	local p; p=$(port)
	taskset -c "${CPUS:-0}" "$@" --port "$p" --dir "$d" >"$d.log" 2>&1 &
	local pid=$!
	ready "$p"
	redis-cli -p "$p" DEBUG POPULATE "$KEYS" key "$VAL" >/dev/null
	local c0 t0 c1 t1
	c0=$(cpu "$pid"); t0=$(date +%s.%N)
	redis-cli -p "$p" SAVE >/dev/null
	t1=$(date +%s.%N); c1=$(cpu "$pid")
	stop "$p" "$pid"
	local size wall; size=$(du -sb "$d" | awk '{print $1/1e6}'); wall=$(echo "$t1 - $t0" | bc)
	local t2 t3 c3
	t2=$(date +%s.%N)
	taskset -c "${CPUS:-0}" "$@" --port "$p" --dir "$d" >"$d.log" 2>&1 &
	pid=$!
	ready "$p"
	t3=$(date +%s.%N); c3=$(cpu "$pid")
	local keys; keys=$(redis-cli -p "$p" DBSIZE)
	stop "$p" "$pid"
	[ "$keys" = "$KEYS" ] || echo "$name: loaded $keys keys, want $KEYS" >&2
	printf '%-28s save_cpu %5.2f s  wall %5.3f s  %7.1f MB  %5.0f MB/s = %3.0f%% of disk | load wall %5.3f s  cpu %5.2f s | load %s\n' \
		"$name" "$(echo "$c1 - $c0" | bc)" "$wall" "$size" "$(echo "$size / $wall" | bc -l)" \
		"$(echo "100 * $size / $wall / $DISK_MBS" | bc -l)" "$(echo "$t3 - $t2" | bc)" "$c3" "$(cut -d' ' -f1 /proc/loadavg)"
	rm -rf "$d" "$d.log"
}
for _ in $(seq "$ROUNDS"); do
	disk
	# shellcheck disable=SC2086
	one redis-server redis-server --save '' --appendonly no --enable-debug-command yes $REDIS_ARGS
	for b in "$@"; do
		for f in $FORMATS; do
			case $f in
			rdb) one "$(basename "$b") rdb" "$b" --save '' --bind 127.0.0.1 --enable-debug-command yes ;;
			native-s2) one "$(basename "$b") native-s2" "$b" --save '' --bind 127.0.0.1 --enable-debug-command yes --dbformat native --dbcompression s2 ;;
			*) echo "unknown format $f" >&2; exit 2 ;;
			esac
		done
	done
done
