#!/usr/bin/env bash
# Server CPU per pipelined request split into user and system time, with
# minor page faults and voluntary context switches per request (issues 20
# and 22): Damselfly binaries and redis-server, each pinned to CPU 0,
# redis-benchmark -P $P (16) on CPU 1, alternating, ROUNDS times.
#
#   bench/cpusplit.sh TESTS BIN...     e.g. bench/cpusplit.sh incr,hset,lpush /tmp/df-a /tmp/df-b
#
# Env: N (requests per run, 1000000), ROUNDS (2), P (pipeline depth, 16), UNIX=1 (over the Unix
# sockets instead of TCP). Figures are from /proc/PID/stat (utime, stime,
# minflt) and /proc/PID/task/*/status, in µs per request; a 10 ms tick over
# N requests bounds their resolution.
set -eu
TESTS=$1; shift
N=${N:-1000000}; ROUNDS=${ROUNDS:-2}; UNIX=${UNIX:-0}; P=${P:-16}
D=$(mktemp -d)
PIDS=""
trap 'for p in $PIDS; do kill $p 2>/dev/null||true; done; wait 2>/dev/null; rm -rf $D' EXIT
fp() { python3 -c 'import socket;s=socket.socket();s.bind(("127.0.0.1",0));print(s.getsockname()[1])'; }
i=0; NAMES=""
for b in "$@"; do
  i=$((i+1)); port=$(fp); eval "PORT_s$i=$port"; taskset -c 0 $b --port $port --bind 127.0.0.1 --save "" --dir $D --unixsocket $D/s$i.sock >$D/l$i 2>&1 &
  PIDS="$PIDS $!"; eval "PID_s$i=$!"; NAMES="$NAMES s$i"
done
PORT_R=$(fp); taskset -c 0 redis-server --port $PORT_R --bind 127.0.0.1 --save "" --appendonly no --dir $D --unixsocket $D/R.sock >$D/lR 2>&1 &
PIDS="$PIDS $!"; PID_R=$!; NAMES="$NAMES R"
for s in $NAMES; do for _ in $(seq 50); do redis-cli -s $D/$s.sock ping >/dev/null 2>&1 && break; sleep 0.1; done; done
tgt() { if [ "$UNIX" = 1 ]; then echo "-s $D/$1.sock"; else echo "-p $(eval echo \$PORT_$1)"; fi; }
st() { awk '{print $14, $15, $10}' /proc/$1/stat; }
cs() { awk '/voluntary_ctxt_switches/{s+=$2} END{print s}' /proc/$1/task/*/status; }
echo "load $(cat /proc/loadavg)"
for t in ${TESTS//,/ }; do
 for r in $(seq $ROUNDS); do
  for s in $NAMES; do
    pid=$(eval echo \$PID_$s)
    a=($(st $pid)); c0=$(cs $pid)
    ops=$(taskset -c 1 redis-benchmark $(tgt $s) -t $t -n $N -c 50 -d 256 -r 100000 -P $P --csv 2>/dev/null | awk -F, 'NR>1{gsub(/"/,"",$2);print $2;exit}')
    b=($(st $pid)); c1=$(cs $pid)
    python3 -c "
n=$N; hz=$(getconf CLK_TCK)
u=($((b[0]-a[0])))/hz*1e6/n; s=($((b[1]-a[1])))/hz*1e6/n
print(f'$t r$r $s ops={float($ops):.0f} user={u:.3f} sys={s:.3f} tot={u+s:.3f} minflt/req={($((b[2]-a[2])))/n:.4f} ctxsw/req={($c1-$c0)/n:.4f}')"
  done
 done
done
echo "load $(cat /proc/loadavg)"
