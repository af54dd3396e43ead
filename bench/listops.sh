#!/usr/bin/env bash
# CPU per request of LRANGE mylist 0 99, RPOP, LPOP (-P 16) on a list of
# 1M x 256 B built by redis-benchmark LPUSH; servers alternate per test.
# Usage: bench/listops.sh BIN...  (N requests per run, 300000)
set -u
N=${N:-300000}; D=$(mktemp -d); trap "rm -rf $D" EXIT
i=0; PIDS=""; PORTS=""
for b in "$@"; do
  i=$((i+1)); port=$((7430+i))
  taskset -c 0 $b --port $port --bind 127.0.0.1 --save "" --dir $D >/dev/null 2>&1 & PIDS="$PIDS $!"; PORTS="$PORTS $port"
done
sleep 1
for p in $PORTS; do taskset -c 1 redis-benchmark -p $p -t lpush -n 1000000 -c 50 -d 256 -P 16 -q >/dev/null 2>&1; done
echo "load $(cat /proc/loadavg)"
set -- $PIDS
pids=($PIDS); ports=($PORTS); names=("$@")
for cmd in "lrange mylist 0 99" "rpop mylist" "lpop mylist"; do
  for r in 1 2; do
    for k in "${!pids[@]}"; do
      pid=${pids[$k]}; port=${ports[$k]}
      a=($(awk '{print $14, $15, $10}' /proc/$pid/stat))
      ops=$(taskset -c 1 redis-benchmark -p $port -n $N -c 50 -P 16 --csv $cmd 2>/dev/null | awk -F, 'NR>1{gsub(/"/,"",$2);print $2;exit}')
      b=($(awk '{print $14, $15, $10}' /proc/$pid/stat))
      python3 -c "
n=$N; hz=100
u=($((b[0]-a[0])))/hz*1e6/n; s=($((b[1]-a[1])))/hz*1e6/n
print(f'${cmd// /_} r$r srv$k ops={float($ops):.0f} user={u:.3f} sys={s:.3f} tot={u+s:.3f} minflt/req={($((b[2]-a[2])))/n:.4f}')"
    done
  done
done
echo "load $(cat /proc/loadavg)"
for p in $PIDS; do kill $p; done; wait 2>/dev/null
