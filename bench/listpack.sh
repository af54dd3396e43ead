#!/usr/bin/env bash
# The listpack codec's move into package listpack (issue 12): RDB save and load of small
# listpack-encoded collections (snapshot/rdb/smallcoll_bench_test.go) and the stream nodes'
# append/range/load (shard/types/streamlp_bench_test.go), two builds side by side, runs
# alternating A B A B; prints ns/key (or ns/entry), B/op and allocs/op of each run.
#
#   bench/listpack.sh BEFORE_COMMIT            # builds both from git archive into /tmp
#
# Env: R (runs per build and benchmark, 3).
set -euo pipefail
BEFORE=${1:?usage: listpack.sh BEFORE_COMMIT [AFTER_COMMIT]}; AFTER=${2:-HEAD}
R=${R:-3}
root=$(cd "$(dirname "$0")/.." && pwd)
for c in "$BEFORE" "$AFTER"; do
  d=/tmp/lpbench-$c; rm -rf "$d"; mkdir -p "$d"
  git -C "$root" archive "$c" | tar -x -C "$d"
  (cd "$d" && go test -c -o "$d/rdb.test" ./snapshot/rdb && go test -c -o "$d/types.test" ./shard/types)
done
for ((i = 0; i < R; i++)); do
  for c in "$BEFORE" "$AFTER"; do
    d=/tmp/lpbench-$c
    (cd "$root/snapshot/rdb" && nice -n 10 "$d/rdb.test" -test.run XXX -test.bench 'SmallColls' -test.benchmem -test.count 1) | grep ^Bench | sed "s/^/$c /"
    (cd "$root/shard/types" && nice -n 10 "$d/types.test" -test.run XXX -test.bench 'StreamAddRange|StreamLoadNodes' -test.benchmem -test.count 1) | grep ^Bench | sed "s/^/$c /"
  done
done
uptime
