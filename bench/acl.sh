#!/usr/bin/env bash
# Cost of the ACL permission check: server CPU per request for SET and GET
# run by the default user (every permission: the fast path) and by a
# restricted user (some commands, one key pattern: the full check with the
# keys taken from the key specs), on Damselfly and on redis-server in the
# same run.
#
#   bench/acl.sh [REQUESTS] [ROUNDS]   (defaults 2000000 per command, 3 rounds)
#
# CPU is utime+stime of the server from /proc/PID/stat; each round starts
# both servers afresh and alternates the users. Servers run on core 0,
# redis-benchmark on core 1 (taskset). DAMSELFLY is the binary (default:
# go build ./cmd/damselfly into a temporary directory).
set -euo pipefail
cd "$(dirname "$0")/.."
N=${1:-2000000}
ROUNDS=${2:-3}
BENCH_DIR=${BENCH_DIR:-$(mktemp -d /tmp/aclbench.XXXXXX)}
DAMSELFLY=${DAMSELFLY:-$BENCH_DIR/damselfly}
[ -x "$DAMSELFLY" ] || go build -o "$DAMSELFLY" ./cmd/damselfly
HZ=$(getconf CLK_TCK)
RULES=(on '>benchpw' resetchannels -@all +get +set +ping +config '~key:*')

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
cpu_ticks() { awk '{print $14+$15}' /proc/"$1"/stat; }
SERVER_PID=
start() { # start NAME -> PORT, SERVER_PID
  local name=$1 dir
  dir=$(mktemp -d "$BENCH_DIR/$name.XXXX"); PORT=$(free_port)
  if [ "$name" = redis ]; then
    taskset -c 0 redis-server --port "$PORT" --bind 127.0.0.1 --dir "$dir" --save "" --appendonly no >"$dir/log" 2>&1 &
  else
    taskset -c 0 "$DAMSELFLY" --port "$PORT" --bind 127.0.0.1 --dir "$dir" --save "" >"$dir/log" 2>&1 &
  fi
  SERVER_PID=$!
  for _ in $(seq 100); do redis-cli -p "$PORT" PING >/dev/null 2>&1 && break; sleep 0.05; done
  redis-cli -p "$PORT" ACL SETUSER bench "${RULES[@]}" >/dev/null
}
stop() { [ -n "$SERVER_PID" ] && { kill "$SERVER_PID" 2>/dev/null || true; wait "$SERVER_PID" 2>/dev/null || true; }; SERVER_PID=; }
trap stop EXIT

echo "load average: $(cut -d' ' -f1-3 /proc/loadavg); $N requests per command, SET and GET, 50 clients, pipeline 16"
echo "| round | server | user | server CPU ns/request |"
echo "|---|---|---|---|"
for round in $(seq "$ROUNDS"); do
  for name in damselfly redis; do
    start "$name"
    for user in default bench restricted-again default-again; do
      auth=()
      case $user in bench|restricted-again) auth=(--user bench -a benchpw) ;; esac
      t0=$(cpu_ticks "$SERVER_PID")
      taskset -c 1 redis-benchmark -p "$PORT" "${auth[@]}" -t set,get -n "$N" -c 50 -P 16 -r 100000 -d 16 -q \
        >/dev/null 2>&1
      t1=$(cpu_ticks "$SERVER_PID")
      label=$user; case $user in restricted-again) label=bench ;; default-again) label=default ;; esac
      echo "| $round | $name | $label | $(( (t1 - t0) * 1000000000 / HZ / (2 * N) )) |"
    done
    stop
  done
done
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
