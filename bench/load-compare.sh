#!/usr/bin/env bash
# Start-up load time of several servers on the same dump files, interleaved
# (one run of every configuration per round, so a busy moment on this shared
# machine hits all of them alike), summarised as median (range) per
# configuration. Uses bench/load-time.sh for each run.
#
#   bench/load-compare.sh ROUNDS DUMP[,DUMP...] 'LABEL=CMD' ['LABEL=CMD' ...]
#
# e.g.
#   bench/load-compare.sh 5 /tmp/r/dump.rdb,/tmp/d/dump.rdb \
#     'redis-1c=taskset -c 0 redis-server --save "" --appendonly no' \
#     'dfly-1c=taskset -c 0 /tmp/damselfly --save ""' \
#     'dfly-2c=/tmp/damselfly --save ""'
set -euo pipefail
ROUNDS=${1:?usage: load-compare.sh ROUNDS DUMPS LABEL=CMD...}; DUMPS=${2:?DUMPS}; shift 2
here=$(cd "$(dirname "$0")" && pwd)
out=$(mktemp)
IFS=, read -ra dumps <<<"$DUMPS"
cfgs=("$@")
for r in $(seq "$ROUNDS"); do
  for d in "${dumps[@]}"; do
    for cfg in "${cfgs[@]}"; do
      label=${cfg%%=*}
      eval "cmd=(${cfg#*=})"
      line=$("$here/load-time.sh" 1 "$d" "$label" "${cmd[@]}" | sed -n 1p)
      echo "$d $line" | tee -a "$out" >&2
    done
  done
done
python3 - "$out" <<'PY'
import re, statistics, sys, collections
rows = collections.defaultdict(list)
for l in open(sys.argv[1]):
    m = re.match(r"(\S+) (\S+) run \d+: ready ([0-9.]+) s \| logged load ([0-9.na]+) s \| CPU ([0-9.]+) s \| RSS ([0-9.]+) MiB \| faults ([0-9]+)", l)
    if m:
        rows[(m[1], m[2])].append(tuple(float(x) for x in m.groups()[2:]))
def f(v, p): return f"{statistics.median(v):.{p}f} ({min(v):.{p}f}-{max(v):.{p}f})"
print("| dump | server | ready (s) | logged load (s) | CPU (s) | RSS (MiB) | minor faults |")
print("|---|---|---:|---:|---:|---:|---:|")
for (d, lab), v in rows.items():
    c = list(zip(*v))
    print(f"| {d} | {lab} | {f(c[0],3)} | {f(c[1],3)} | {f(c[2],2)} | {f(c[3],1)} | {f(c[4],0)} |")
PY
rm -f "$out"
