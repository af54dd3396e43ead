#!/usr/bin/env bash
# Save and load times of one dataset in every dump format, Damselfly and
# redis-server in one run.
#
#   bench/snapshot-formats.sh DAMSELFLY_BINARY [KEYS] [VALUE_BYTES] [ROUNDS]
#
# For each configuration: start the server on an empty directory, DEBUG
# POPULATE KEYS keys, time SAVE and an idle BGSAVE (wall time and the
# server's CPU time, utime+stime from /proc/PID/stat), the dump's size
# (all its files), then restart it on that directory and time from process
# start to the first +PONG (the load) with its CPU time. "1c" pins the
# server to CPU 0 (taskset), "2c" leaves it both cores.
set -euo pipefail
BIN=${1:?usage: snapshot-formats.sh DAMSELFLY_BINARY [KEYS] [VALUE_BYTES] [ROUNDS]}
KEYS=${2:-1000000}; VAL=${3:-100}; ROUNDS=${4:-1}
WORK=$(mktemp -d /tmp/snapfmt.XXXXXX)
trap 'rm -rf "$WORK"' EXIT
port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
cpu() { awk '{print ($14+$15)/100}' /proc/"$1"/stat; }
now() { date +%s.%N; }
configs=(
  "redis-1c|taskset -c 0 redis-server --save '' --appendonly no --enable-debug-command yes"
  "dfly-rdb-1c|taskset -c 0 $BIN --save ''"
  "dfly-rdb-lzf-1c|taskset -c 0 $BIN --save ''|lzf"
  "dfly-native-s2-1c|taskset -c 0 $BIN --save '' --dbformat native --dbcompression s2"
  "dfly-native-zstd-1c|taskset -c 0 $BIN --save '' --dbformat native --dbcompression zstd"
  "dfly-native-s2-2c|$BIN --save '' --dbformat native --dbcompression s2"
  "dfly-native-zstd-2c|$BIN --save '' --dbformat native --dbcompression zstd"
)
start() { # name cmd dir port -> pid
  local d=$3 p=$4
  if [[ $2 == *redis-server* ]]; then
    eval "$2 --port $p --dir $d" >"$d.log" 2>&1 &
  else
    eval "$2 --port $p --dir $d --bind 127.0.0.1" >"$d.log" 2>&1 &
  fi
  echo $!
}
ready() { until [ "$(redis-cli -p "$1" PING 2>/dev/null)" = PONG ]; do sleep 0.002; done; }
pidof_port() { redis-cli -p "$1" INFO server | tr -d '\r' | awk -F: '/^process_id:/{print $2}'; }
printf '%-22s %9s %9s %10s %9s %10s %9s %9s\n' config save_s save_cpu bgsave_s bgsv_cpu size_MB load_s load_cpu
for r in $(seq "$ROUNDS"); do
for c in "${configs[@]}"; do
  IFS='|' read -r name cmd extra <<<"$c"
  d="$WORK/$name"; rm -rf "$d"; mkdir -p "$d"; p=$(port)
  start "$name" "$cmd" "$d" "$p" >/dev/null; ready "$p"; pid=$(pidof_port "$p")
  [ "$extra" = lzf ] && redis-cli -p "$p" CONFIG SET rdbcompression yes >/dev/null
  redis-cli -p "$p" DEBUG POPULATE "$KEYS" key "$VAL" >/dev/null
  c0=$(cpu "$pid"); t0=$(now); redis-cli -p "$p" SAVE >/dev/null; t1=$(now); c1=$(cpu "$pid")
  redis-cli -p "$p" BGSAVE >/dev/null; t2=$(now)
  while [ "$(redis-cli -p "$p" INFO persistence | tr -d '\r' | awk -F: '/^rdb_bgsave_in_progress:/{print $2}')" != 0 ]; do sleep 0.005; done
  t3=$(now); c3=$(cpu "$pid")
  size=$(du -cb "$d"/dump.rdb* 2>/dev/null | tail -1 | cut -f1)
  redis-cli -p "$p" SHUTDOWN NOSAVE >/dev/null 2>&1 || true
  while kill -0 "$pid" 2>/dev/null; do sleep 0.01; done
  sync; sleep 0.5
  t4=$(now); start "$name" "$cmd" "$d" "$p" >/dev/null; ready "$p"; t5=$(now); pid=$(pidof_port "$p"); c5=$(cpu "$pid")
  keys=$(redis-cli -p "$p" DBSIZE)
  redis-cli -p "$p" SHUTDOWN NOSAVE >/dev/null 2>&1 || true
  while kill -0 "$pid" 2>/dev/null; do sleep 0.01; done
  python3 -c "print('%-22s %9.3f %9.2f %10.3f %9.2f %10.1f %9.3f %9.2f%s' % ('$name', $t1-$t0, $c1-$c0, $t3-$t2, $c3-$c1, $size/1e6, $t5-$t4, $c5, '' if $keys == $KEYS else '  LOADED $keys KEYS'))"
done
done
