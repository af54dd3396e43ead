#!/bin/bash
# Server SAVE CPU split into utime and stime, with wall time and dump size
# (issue 14, savecopy): each server pinned to CPU 0 gets DEBUG POPULATE
# KEYS keys of VAL bytes, then SAVE; binaries alternate within each round.
# "redis" stands for redis-server 7.0 with --rdbcompression no.
#
#   bench/save-split.sh KEYS VAL ROUNDS redis /tmp/dfly-main /tmp/dfly-branch
K=$1; V=$2; R=$3; shift 3
for r in $(seq $R); do for b in "$@"; do d=$(mktemp -d /tmp/savesplit.XXXXXX); p=$((20000+RANDOM%10000))
 if [ $b = redis ]; then taskset -c 0 redis-server --port $p --dir $d --save '' --appendonly no --enable-debug-command yes --rdbcompression no >$d.log 2>&1 & else taskset -c 0 $b --port $p --dir $d --save '' --bind 127.0.0.1 --enable-debug-command yes >$d.log 2>&1 & fi
 pid=$!; until [ "$(redis-cli -p $p PING 2>/dev/null)" = PONG ]; do sleep 0.01; done; redis-cli -p $p DEBUG POPULATE $K key $V >/dev/null
 a=($(awk '{print $14, $15}' /proc/$pid/stat)); t0=$(date +%s.%N); redis-cli -p $p SAVE >/dev/null; t1=$(date +%s.%N); c=($(awk '{print $14, $15}' /proc/$pid/stat))
 sz=$(du -sb $d | awk '{print $1/1e6}')
 printf "%-20s %dx%d  utime %.2f stime %.2f cpu %.2f s  wall %.3f s  %.0f MB  load %s\n" "$(basename $b)" $K $V $(echo "(${c[0]}-${a[0]})/100" | bc -l) $(echo "(${c[1]}-${a[1]})/100" | bc -l) $(echo "(${c[0]}+${c[1]}-${a[0]}-${a[1]})/100" | bc -l) $(echo "$t1-$t0"|bc) $sz "$(cut -d' ' -f1 /proc/loadavg)"
 redis-cli -p $p SHUTDOWN NOSAVE >/dev/null 2>&1; wait $pid; rm -rf $d $d.log; done; done
