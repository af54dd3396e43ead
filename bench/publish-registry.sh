#!/usr/bin/env bash
# PUBLISH's cost per request through the in-process request path (server/pubsub_bench_test.go),
# two builds side by side: CPU seconds (user+sys of the whole test process, the subscribers'
# writer goroutines included) for a fixed number of requests, runs alternating A B A B.
#
#   go test -c -o /tmp/publish-A.test ./server/   # at the commit before
#   go test -c -o /tmp/publish-B.test ./server/   # at the commit after
#   bench/publish-registry.sh /tmp/publish-A.test /tmp/publish-B.test
#
# Env: N (requests per run, 1000000), R (runs per build and benchmark, 3).
set -euo pipefail
A=${1:?usage: publish-registry.sh TEST_BINARY_A TEST_BINARY_B}; B=${2:?usage: publish-registry.sh A B}
N=${N:-1000000}; R=${R:-3}
cd "$(dirname "$0")/../server"
for b in NoSubscribers OneSubscriber ChannelAndPatterns; do
  for ((i = 0; i < R; i++)); do
    for bin in "$A" "$B"; do
      /usr/bin/time -f "$b $(basename "$bin") %U %S" nice -n 10 "$bin" -test.run XXX \
        -test.bench "Publish$b\$" -test.cpu 1 -test.benchtime "${N}x" >/dev/null
    done
  done
done
uptime
