#!/usr/bin/env bash
# Save, load and full-sync costs of one idle dataset, Damselfly (RDB and
# native dumps, S2 and zstd) and redis-server in one run, plus this
# machine's limits (disk write speed with fsync, block codec throughput on
# 2 cores).
#
#   bench/snapsync.sh DAMSELFLY_BINARY [KEYS] [VALUE_BYTES]
#   ONLY="redis-7.0 dfly-native-s2" bench/snapsync.sh ...   # a subset of the configurations
#
# Per configuration: start the server on an empty directory, DEBUG
# POPULATE KEYS keys of VALUE_BYTES, time SAVE (wall, and the server's CPU
# seconds, utime+stime from /proc/PID/stat) and size its files; then start
# an empty replica of the same kind, REPLICAOF, and time until the link is
# up with every key (CPU of primary and replica, and the bytes the primary
# wrote, wchar from /proc/PID/io: for a diskless sync that is the wire);
# then restart the primary on its directory and time from process start
# to the first +PONG (the load) with its CPU seconds. Damselfly replicas
# get the parallel native sync (REPLCONF capa damselfly-parallel) with the
# primary's --dbcompression codec; redis-server uses its default diskless
# sync (delay 0). The load average is printed before and after: the
# machine is shared, so CPU seconds are the figure to compare.
set -euo pipefail
BIN=${1:?usage: snapsync.sh DAMSELFLY_BINARY [KEYS] [VALUE_BYTES]}
KEYS=${2:-1000000}; VAL=${3:-100}
WORK=$(mktemp -d /tmp/snapsync.XXXXXX)
PIDS=()
cleanup() { for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done; rm -rf "$WORK"; }
trap cleanup EXIT
port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
# utime+stime+cutime+cstime: redis-server's forked save/sync children count once reaped.
cpu() { awk '{print ($14+$15+$16+$17)/100}' /proc/"$1"/stat; }
# Replication bytes sent: redis-server's INFO total_net_repl_output_bytes; Damselfly has no such
# field, so its process's wchar (a diskless sync writes nothing else: it matches the bytes= of its
# "full sync sent to replica" log line).
wchar() {
  local v; v=$(redis-cli -p "$2" INFO stats | tr -d '\r' | awk -F: '/^total_net_repl_output_bytes:/{print $2}')
  if [ -n "$v" ]; then echo "$v"; else awk '/^wchar:/{print $2}' /proc/"$1"/io; fi
}
now() { date +%s.%N; }
# name | command | sync: replicate with the same command
configs=(
  "redis-7.0|redis-server --save '' --appendonly no --enable-debug-command yes --repl-diskless-sync yes --repl-diskless-sync-delay 0|sync"
  "dfly-rdb|$BIN --save '' --enable-debug-command yes|"
  "dfly-native-s2|$BIN --save '' --enable-debug-command yes --dbformat native --dbcompression s2|sync"
  "dfly-native-zstd|$BIN --save '' --enable-debug-command yes --dbformat native --dbcompression zstd|sync"
)
start() { # cmd dir port (the pid comes from INFO: see pidof_port)
  eval "$1 --port $3 --bind 127.0.0.1 --dir $2" >"$2.log" 2>&1 &
}
ready() { until [ "$(redis-cli -p "$1" PING 2>/dev/null)" = PONG ]; do sleep 0.005; done; }
pidof_port() { redis-cli -p "$1" INFO server | tr -d '\r' | awk -F: '/^process_id:/{print $2}'; }
stop() { redis-cli -p "$1" SHUTDOWN NOSAVE >/dev/null 2>&1 || true; while kill -0 "$2" 2>/dev/null; do sleep 0.01; done; }
inforepl() { redis-cli -p "$1" INFO replication | tr -d '\r' | awk -F: -v k="$2" '$1==k{print $2}'; }

echo "# $(date -u +%FT%TZ) keys=$KEYS value=$VAL load average: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "# $(redis-server --version | cut -d' ' -f1-3); damselfly $($BIN --version 2>&1 | head -1)"
printf '%-17s %8s %8s %8s | %8s %8s %9s %8s %8s | %8s %8s\n' config save_s save_cpu size_MB sync_s sync_MB sync_cpuP sync_cpuR sync_keys load_s load_cpu
for c in "${configs[@]}"; do
  IFS='|' read -r name cmd sync <<<"$c"
  if [ -n "${ONLY:-}" ] && [[ " $ONLY " != *" $name "* ]]; then continue; fi
  d="$WORK/$name"; mkdir -p "$d"; p=$(port)
  start "$cmd" "$d" "$p"; ready "$p"; pid=$(pidof_port "$p"); PIDS+=("$pid")
  redis-cli -p "$p" DEBUG POPULATE "$KEYS" key "$VAL" >/dev/null
  c0=$(cpu "$pid"); t0=$(now); redis-cli -p "$p" SAVE >/dev/null; t1=$(now); c1=$(cpu "$pid")
  size=$(du -cb "$d"/dump.rdb* 2>/dev/null | tail -1 | cut -f1)
  [ "$name" = dfly-rdb ] && cp "$d/dump.rdb" "$WORK/raw.rdb"
  ss=- smb=- scp=- scr=- sk=-
  if [ -n "$sync" ]; then
    rd="$WORK/$name-replica"; mkdir -p "$rd"; rp=$(port)
    start "$cmd" "$rd" "$rp"; ready "$rp"; rpid=$(pidof_port "$rp"); PIDS+=("$rpid")
    pc0=$(cpu "$pid"); rc0=$(cpu "$rpid"); w0=$(wchar "$pid" "$p"); t2=$(now)
    redis-cli -p "$rp" REPLICAOF 127.0.0.1 "$p" >/dev/null
    until [ "$(inforepl "$rp" master_link_status)" = up ] && [ "$(inforepl "$rp" master_sync_in_progress)" = 0 ]; do sleep 0.01; done
    t3=$(now); pc1=$(cpu "$pid"); rc1=$(cpu "$rpid"); w1=$(wchar "$pid" "$p")
    sk=$(redis-cli -p "$rp" DBSIZE)
    ss=$(python3 -c "print('%.3f' % ($t3-$t2))"); smb=$(python3 -c "print('%.1f' % (($w1-$w0)/1e6))")
    scp=$(python3 -c "print('%.2f' % ($pc1-$pc0))"); scr=$(python3 -c "print('%.2f' % ($rc1-$rc0))")
    stop "$rp" "$rpid"
  fi
  stop "$p" "$pid"
  sync; sleep 0.5
  t4=$(now); start "$cmd" "$d" "$p"; ready "$p"; t5=$(now); pid=$(pidof_port "$p"); PIDS+=("$pid"); c5=$(cpu "$pid")
  keys=$(redis-cli -p "$p" DBSIZE)
  stop "$p" "$pid"
  python3 -c "print('%-17s %8.3f %8.2f %8.1f | %8s %8s %9s %8s %8s | %8.3f %8.2f%s' % ('$name', $t1-$t0, $c1-$c0, $size/1e6, '$ss', '$smb', '$scp', '$scr', '$sk', $t5-$t4, $c5, '' if $keys == $KEYS else '  LOADED $keys KEYS'))"
done
echo "# load average after: $(cut -d' ' -f1-3 /proc/loadavg)"

# This machine's limits.
dd if=/dev/zero of="$WORK/dd" bs=1M count=1024 conv=fsync 2>&1 | tail -1 | sed 's/^/# disk write, dd bs=1M count=1024 conv=fsync: /'
rm -f "$WORK/dd"
if [ -f "$WORK/raw.rdb" ]; then
  echo "# block codecs on 2 goroutines over Damselfly's uncompressed RDB dump of this dataset (bench/codecspeed -file):"
  go run ./bench/codecspeed -file "$WORK/raw.rdb" -par 2 2>&1 | sed 's/^/#   /'
fi
