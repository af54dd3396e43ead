#!/usr/bin/env bash
# A BGSAVE and a full sync while 50 clients overwrite existing keys,
# Damselfly (RDB and native S2 dumps) against redis-server 7.0, alternating
# in one run (issue 14's "under load" rows, sized for 10M keys).
#
#   bench/snapshot-underload.sh DAMSELFLY_BINARY [KEYS] [VALUE_BYTES]
#   ROUNDS=3 MODES="save sync" ONLY="redis-7.0 dfly-native-s2" BEFORE=5s CLIENTS=50 bench/snapshot-underload.sh ...
#
# Per round, mode and configuration, on a fresh server and empty directory,
# bench/snaplat with -populate: DEBUG POPULATE KEYS keys of VALUE_BYTES
# (key:N, the names the load writes), idle Pss, BEFORE of CLIENTS
# unpipelined connections SETting random existing keys to fresh values,
# then under the same load either
#   save: BGSAVE until INFO says it is over, or
#   sync: an empty replica of the same kind gets REPLICAOF, until its link
#         is up with no sync in progress (at most two servers are alive);
# It prints ops/s and client-side p50/p99/p99.9/max per phase (no save /
# during), the server's SET percentiles (INFO latencystats), peak Pss over
# idle (the process and its children: Redis's fork counts), the server's
# CPU over the save or sync (utime+stime+cutime+cstime) and its excess over
# the SETs' cost at the no-save rate, and for a sync the replica's CPU, the
# bytes sent and, once the writers stop and the replica has caught up,
# whether 10,000 random keys hold the same values on both. Damselfly's own "DB saved", "full sync sent" and the replica's
# "full sync from primary done" log lines follow (bytes=, in_flight_peak_MiB). For the sync both primaries get
# client-output-buffer-limit "replica 0 0 0": the writes that arrive during
# a 10M-key sync would pass Redis's default 256 MB hard limit and restart it
# forever; the buffered writes then show in the primary's peak Pss. The
# load average is printed with every run: the machine is shared, so CPU
# seconds are the figures to compare. Servers are not pinned (2 cores:
# Redis's fork child and Damselfly's save goroutines each get the second).
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
BIN=${1:?usage: snapshot-underload.sh DAMSELFLY_BINARY [KEYS] [VALUE_BYTES]}
KEYS=${2:-10000000}; VAL=${3:-100}
ROUNDS=${ROUNDS:-1}; MODES=${MODES:-"save sync"}; CLIENTS=${CLIENTS:-50}; BEFORE=${BEFORE:-5s}
WORK=$(mktemp -d /tmp/underload.XXXXXX)
PIDS=()
cleanup() { for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done; rm -rf "$WORK"; }
trap cleanup EXIT
(cd "$here" && go build -o "$WORK/snaplat" ./bench/snaplat)
# name | command | modes it runs
configs=(
  "redis-7.0|redis-server --save '' --appendonly no --enable-debug-command yes --repl-diskless-sync yes --repl-diskless-sync-delay 0|save sync"
  "dfly-rdb|$BIN --save '' --enable-debug-command yes|save"
  "dfly-native-s2|$BIN --save '' --enable-debug-command yes --dbformat native --dbcompression s2|save sync"
)
port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
start() { # cmd dir port; sets $pid
  eval "$1 --port $3 --bind 127.0.0.1 --dir $2" >"$2/log" 2>&1 &
  until [ "$(redis-cli -p "$3" PING 2>/dev/null)" = PONG ]; do sleep 0.01; done
  pid=$(redis-cli -p "$3" INFO server | tr -d '\r' | awk -F: '/^process_id:/{print $2}'); PIDS+=("$pid")
}
stop() { # port pid
  redis-cli -p "$1" SHUTDOWN NOSAVE >/dev/null 2>&1 || kill "$2" 2>/dev/null || true
  while kill -0 "$2" 2>/dev/null; do sleep 0.01; done
}

echo "# $(date -u +%FT%TZ) keys=$KEYS value=$VAL clients=$CLIENTS; $(redis-server --version | cut -d' ' -f1-3); $($BIN --version 2>&1 | head -1)"
for round in $(seq "$ROUNDS"); do
  for mode in $MODES; do
    for c in "${configs[@]}"; do
      IFS='|' read -r name cmd modes <<<"$c"
      if [ -n "${ONLY:-}" ] && [[ " $ONLY " != *" $name "* ]]; then continue; fi
      [[ " $modes " == *" $mode "* ]] || continue
      d="$WORK/$name-$round-$mode"; mkdir -p "$d"; p=$(port)
      start "$cmd" "$d" "$p"; ppid=$pid
      extra=()
      if [ "$mode" = sync ]; then
        redis-cli -p "$p" CONFIG SET client-output-buffer-limit "replica 0 0 0" >/dev/null
        mkdir -p "$d/replica"; rp=$(port)
        start "$cmd" "$d/replica" "$rp"; rpid=$pid
        extra=(-replica "127.0.0.1:$rp" -replica-pid "$rpid")
      fi
      echo "== round $round, $mode, $name | load average $(cut -d' ' -f1-3 /proc/loadavg)"
      "$WORK/snaplat" -addr "127.0.0.1:$p" -pid "$ppid" -keys "$KEYS" -size "$VAL" -clients "$CLIENTS" \
        -before "$BEFORE" -populate "${extra[@]}" || echo "  snaplat failed"
      grep -h "DB saved\|full sync sent" "$d/log" | sed 's/^/  server: /' || true
      [ "$mode" = sync ] && { grep -h "full sync from primary done" "$d/replica/log" | sed 's/^/  replica: /' || true; }
      [ "$mode" = sync ] && stop "$rp" "$rpid"
      stop "$p" "$ppid"
      echo "   load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
    done
  done
done
