#!/usr/bin/env bash
# Start-up load of 1M small listpack-encoded hashes and 1M small sorted sets
# (bench/lpgen writes the dumps; DEBUG POPULATE makes only strings), for two
# Damselfly builds and redis-server, through bench/load-time.sh (CPU time of
# the server process from /proc/PID/stat when it first answers PING).
#
#   bench/lpload.sh BEFORE_COMMIT [AFTER_COMMIT]
#
# Env: N (keys per dump, 1000000), R (runs per server and dump, 3), DIR (/tmp/lpl).
set -euo pipefail
BEFORE=${1:?usage: lpload.sh BEFORE_COMMIT [AFTER_COMMIT]}; AFTER=${2:-HEAD}
N=${N:-1000000}; R=${R:-3}; DIR=${DIR:-/tmp/lpl}
root=$(cd "$(dirname "$0")/.." && pwd)
mkdir -p "$DIR"
(cd "$root" && go build -o "$DIR/lpgen" ./bench/lpgen)
for c in "$BEFORE" "$AFTER"; do
  d=$DIR/src-$c; rm -rf "$d"; mkdir -p "$d"
  git -C "$root" archive "$c" | tar -x -C "$d"
  (cd "$d" && go build -o "$DIR/damselfly-$c" ./cmd/damselfly)
done
for t in hash zset; do
  mkdir -p "$DIR/$t"
  [ -f "$DIR/$t/dump.rdb" ] || "$DIR/lpgen" -n "$N" -type "$t" -o "$DIR/$t/dump.rdb"
  for c in "$AFTER" "$BEFORE"; do
    "$root/bench/load-time.sh" "$R" "$DIR/$t/dump.rdb" "$c-$t" "$DIR/damselfly-$c" --save "" | tail -1
  done
  "$root/bench/load-time.sh" "$R" "$DIR/$t/dump.rdb" "redis-$t" redis-server --save "" --appendonly no | tail -1
done
uptime
