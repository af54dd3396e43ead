#!/bin/sh
# Issue 12: the cost of the write gate on the in-place string and stream
# write paths. Builds the server package's test binary at two commits
# (default: the commit before the gate and HEAD) and runs the
# ExecuteGate benchmarks alternately, ROUNDS times each, so that the load of
# a shared machine falls on both alike. Compare with benchstat if present.
#
#   bench/writegate.sh [BEFORE_COMMIT] [AFTER_COMMIT]
set -eu
before=${1:-f1eb0e0}
after=${2:-HEAD}
rounds=${ROUNDS:-4}
tmp=$(mktemp -d /tmp/writegate.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
root=$(git rev-parse --show-toplevel)
for c in "$before" "$after"; do
	mkdir -p "$tmp/$c"
	git -C "$root" archive "$c" | tar -x -C "$tmp/$c"
	(cd "$tmp/$c" && go test -c -o "$tmp/$c.test" ./server/)
done
for i in $(seq "$rounds"); do
	for c in "$before" "$after"; do
		(cd "$tmp/$c/server" && nice -n 10 "$tmp/$c.test" -test.run '^$' -test.bench 'ExecuteGate|ExecuteXAdd' \
			-test.benchmem -test.benchtime 20000x -test.count 2) | grep '^Benchmark' >>"$tmp/$c.txt"
	done
done
echo "load: $(cut -d' ' -f1-3 /proc/loadavg)"
if command -v benchstat >/dev/null; then
	benchstat "$tmp/$before.txt" "$tmp/$after.txt"
else
	for c in "$before" "$after"; do
		echo "== $c (median ns/op)"
		awk '{n[$1]=n[$1]" "$3} END {for (k in n) print k, n[k]}' "$tmp/$c.txt" | sort |
			while read -r name vals; do
				med=$(echo "$vals" | tr ' ' '\n' | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}')
				echo "$name $med"
			done
	done
fi
