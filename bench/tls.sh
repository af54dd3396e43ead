#!/usr/bin/env bash
# TLS benchmark, Damselfly against redis-server's own TLS in one run.
#
#   bench/tls.sh [REQUESTS] [CLIENTS]
#
# For each server (Damselfly, redis-server 7.0) and each transport (plain TCP,
# TLS 1.3 with client certificates), redis-benchmark runs SET then GET
# (REQUESTS each, default 200000, CLIENTS connections, default 50, 100-byte
# values over 100000 keys). Printed per row: ops/s, p50 and the server's CPU
# per request (utime+stime from /proc/PID/stat over the run / REQUESTS), plus
# the load average before the run. Servers run on core 0, redis-benchmark on
# core 1 (taskset). Certificates (a CA, a server and a client certificate,
# ECDSA P-256) are made with openssl in $BENCH_DIR. DAMSELFLY is the binary
# (default: go build ./cmd/damselfly). damselfly-gpc is Damselfly with
# --goroutine-per-conn over plain TCP: the serving mode TLS connections use,
# so TLS's own cost is the difference between it and the TLS row.
set -euo pipefail
cd "$(dirname "$0")/.."
N=${1:-200000}
C=${2:-50}
BENCH_DIR=${BENCH_DIR:-$(mktemp -d /tmp/tlsbench.XXXXXX)}
DAMSELFLY=${DAMSELFLY:-$BENCH_DIR/damselfly}
[ -x "$DAMSELFLY" ] || go build -o "$DAMSELFLY" ./cmd/damselfly

# Certificates.
P=$BENCH_DIR/pki; mkdir -p "$P"
ossl() { openssl "$@" >/dev/null 2>&1; }
ossl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 1 -subj /CN=bench-ca \
  -keyout "$P/ca.key" -out "$P/ca.crt"
for who in server client; do
  ossl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -subj "/CN=$who" -keyout "$P/$who.key" -out "$P/$who.csr"
  printf 'subjectAltName=IP:127.0.0.1\nextendedKeyUsage=serverAuth,clientAuth\n' >"$P/$who.ext"
  ossl x509 -req -in "$P/$who.csr" -CA "$P/ca.crt" -CAkey "$P/ca.key" -CAcreateserial -days 1 \
    -extfile "$P/$who.ext" -out "$P/$who.crt"
done
TLSARGS=(--tls-cert-file "$P/server.crt" --tls-key-file "$P/server.key" --tls-ca-cert-file "$P/ca.crt")
CLITLS=(--tls --cacert "$P/ca.crt" --cert "$P/client.crt" --key "$P/client.key")

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
cpu_ticks() { awk '{print $14+$15}' /proc/"$1"/stat; }
SERVER_PID=
start() { # start NAME -> PORT (plain), TPORT (TLS), SERVER_PID
  local name=$1 dir
  dir=$(mktemp -d "$BENCH_DIR/$name.XXXX"); PORT=$(free_port); TPORT=$(free_port)
  if [ "$name" = redis ]; then
    taskset -c 0 redis-server --port "$PORT" --tls-port "$TPORT" --bind 127.0.0.1 --dir "$dir" --save "" \
      --appendonly no "${TLSARGS[@]}" >"$dir/log" 2>&1 &
  else
    local extra=(); [ "$name" = damselfly-gpc ] && extra=(--goroutine-per-conn)
    taskset -c 0 "$DAMSELFLY" --port "$PORT" --tls-port "$TPORT" --bind 127.0.0.1 --dir "$dir" --save "" \
      "${TLSARGS[@]}" "${extra[@]}" >"$dir/log" 2>&1 &
  fi
  SERVER_PID=$!
  for _ in $(seq 100); do redis-cli -p "$PORT" PING >/dev/null 2>&1 && return; sleep 0.05; done
  echo "$name did not start" >&2; cat "$dir/log" >&2; exit 1
}
stop() { [ -n "$SERVER_PID" ] && { kill "$SERVER_PID" 2>/dev/null || true; wait "$SERVER_PID" 2>/dev/null || true; }; SERVER_PID=; }
trap stop EXIT

echo "requests $N per test, $C clients, 100-byte values; $(nproc) cores; $(redis-server --version | cut -d' ' -f1-3)"
echo
echo "| server | transport | test | ops/s | p50 ms | server CPU µs/request | load avg (1 min) |"
echo "|---|---|---|---|---|---|---|"
for name in damselfly damselfly-gpc redis; do
  start "$name"
  transports="plain tls"; [ "$name" = damselfly-gpc ] && transports=plain
  for transport in $transports; do
    if [ "$transport" = tls ]; then args=(-p "$TPORT" "${CLITLS[@]}"); else args=(-p "$PORT"); fi
    for test in set get; do
      load=$(cut -d' ' -f1 /proc/loadavg)
      t0=$(cpu_ticks "$SERVER_PID")
      csv=$(taskset -c 1 redis-benchmark "${args[@]}" -t "$test" -n "$N" -c "$C" -d 100 -r 100000 --csv 2>/dev/null | tail -1)
      t1=$(cpu_ticks "$SERVER_PID")
      python3 - "$name" "$transport" "$test" "$csv" "$t0" "$t1" "$N" "$(getconf CLK_TCK)" "$load" <<'PY'
import sys
name, transport, test, csv, t0, t1, n, hz, load = sys.argv[1:10]
f = [x.strip('"') for x in csv.split(',')]
cpu_us = (int(t1) - int(t0)) / int(hz) * 1e6 / int(n)
print(f"| {name} | {transport} | {test.upper()} | {float(f[1]):.0f} | {f[4]} | {cpu_us:.1f} | {load} |")
PY
    done
  done
  stop
done
