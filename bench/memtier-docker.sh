#!/usr/bin/env bash
# The published comparison of issue 22, with the servers in containers:
# memtier_benchmark's default workload (1 SET : 10 GET, 4 threads x 50
# connections, 32-byte values, random keys) against Damselfly and
# redis-server, each in a container with a /data volume, pinned with
# --cpuset-cpus, and reached from the host by memtier (pinned to another
# core) over TCP through the published port and over the Unix socket in a
# bind-mounted host directory, unpipelined and with --pipeline 16. Runs are
# interleaved per round (fresh container per run), so a busy moment on a
# shared machine hits every configuration alike. Reports ops/s,
# p50/p99/p99.9 latency (ms) and server CPU per request: the container's
# cgroup CPU time (cpuacct.usage on cgroup v1, cpu.stat usage_usec on v2)
# over the commands the server counted in INFO. For TCP it also reports the
# CPU per request of docker-proxy, which carries the published port's
# traffic and is not part of the server's figure. Each run also names the
# event loop that served it (INFO's multiplexing_api): Docker 25 and later
# block io_uring in their default seccomp profile, where Damselfly's
# default (auto) falls back to epoll, which costs it most of its lead over
# Redis (BENCHMARKS.md, "Why the container lost the host's advantage").
#
#   bench/memtier-docker.sh [ROUNDS] [SECONDS]      (defaults: 2 rounds, 10 s)
#
# Knobs (environment):
#   MEMTIER          memtier_benchmark binary (PATH by default; see bench/memtier.sh to build it)
#   SERVERS          "damselfly redis"      which servers, in this order per round
#                    (also damselfly-uring: --event-loop io_uring, if the engine's seccomp
#                    profile allows io_uring; damselfly-epoll: --event-loop epoll, what
#                    the default gets under Docker 25+'s seccomp profile;
#                    damselfly-gpc: --goroutine-per-conn)
#   TRANSPORTS       "tcp unix"
#   PIPELINES        "1 16"
#   SERVER_CPU=0 CLIENT_CPU=1              the server container's cpuset, memtier's core
#   THREADS=4 CLIENTS=50 DATA_SIZE=32 RATIO=1:10
#   DAMSELFLY_IMAGE  use this image instead of building the repository's Dockerfile
#                    (built as damselfly-bench/damselfly:local on local stand-in
#                    base images, like deploy/docker_test.go does: no registry needed)
#   REDIS_IMAGE      use this image instead of damselfly-bench/redis:local, which is
#                    the host's redis-server (Debian's 7.0.15) and the libraries ldd
#                    lists, copied into an image FROM scratch
#   REBUILD=1        rebuild the images even if they exist
#   DAMSELFLY_ARGS / REDIS_ARGS   extra server arguments
#   OUT              also append the per-run lines to this file
#   LOGS             keep each server's container log in this directory (SERVER-TRANSPORT-PN-rR.log)
#
# Everything it starts (containers, volumes, the socket directory) is
# removed on exit, also on Ctrl-C; images are kept as a cache.
set -euo pipefail
ulimit -c 0 # a memtier interrupted mid-run aborts; leave no core file in the working directory
ROUNDS=${1:-2}; SECS=${2:-10}
MEMTIER=${MEMTIER:-$(command -v memtier_benchmark || true)}
[ -z "$MEMTIER" ] && [ -x /tmp/memtier/memtier_benchmark ] && MEMTIER=/tmp/memtier/memtier_benchmark
if [ -z "$MEMTIER" ] || [ ! -x "$MEMTIER" ]; then
  echo "memtier-docker.sh: memtier_benchmark not found (set MEMTIER; see the build steps in bench/memtier.sh): skipped"
  exit 0
fi
command -v docker >/dev/null || { echo "memtier-docker.sh: no docker CLI (apt-get install -y docker.io): skipped"; exit 0; }
docker info >/dev/null 2>&1 || { echo "memtier-docker.sh: no Docker engine reachable (start dockerd): skipped"; exit 0; }
command -v redis-cli >/dev/null || { echo "memtier-docker.sh: redis-cli not installed (apt-get install -y redis-tools): skipped"; exit 0; }
SERVERS=${SERVERS:-damselfly redis}; TRANSPORTS=${TRANSPORTS:-tcp unix}; PIPELINES=${PIPELINES:-1 16}
SERVER_CPU=${SERVER_CPU:-0}; CLIENT_CPU=${CLIENT_CPU:-1}
THREADS=${THREADS:-4}; CLIENTS=${CLIENTS:-50}; DATA_SIZE=${DATA_SIZE:-32}; RATIO=${RATIO:-1:10}
export DOCKER_BUILDKIT=0
root=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d /tmp/memtier-docker.XXXXXX)
tag="memtier-bench-$$"
containers=(); volumes=()
mpid=
cleanup() {
  if [ -n "$mpid" ]; then kill "$mpid" 2>/dev/null || true; wait "$mpid" 2>/dev/null || true; fi
  for c in "${containers[@]}"; do docker rm -f -v "$c" >/dev/null 2>&1 || true; done
  for v in "${volumes[@]}"; do docker volume rm -f "$v" >/dev/null 2>&1 || true; done
  rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# ---- images ------------------------------------------------------------
have_image() { [ "${REBUILD:-0}" != 1 ] && docker image inspect "$1" >/dev/null 2>&1; }

# Stand-ins for golang:1.26 and distroless static:nonroot (the same ones
# deploy/docker_test.go builds and caches).
stand_ins() {
  local goroot version busybox
  goroot=$(go env GOROOT); version=$(go env GOVERSION); version=${version#go}
  GO_STANDIN="damselfly-test/go:$version"; RUNTIME_STANDIN="damselfly-test/runtime:nonroot"
  if ! docker image inspect "$GO_STANDIN" >/dev/null 2>&1; then
    busybox=$(readlink -f "$(command -v busybox)") || { echo "need busybox-static for the stand-in Go image"; exit 1; }
    local d="$work/go-standin"; mkdir -p "$d"
    cp -a "$goroot" "$d/go"; cp "$busybox" "$d/busybox"; cp /etc/ssl/certs/ca-certificates.crt "$d/ca-certs.crt"
    cat >"$d/Dockerfile" <<'EOF'
FROM scratch
COPY busybox /bin/busybox
RUN ["/bin/busybox", "mkdir", "-p", "/usr/bin", "/sbin", "/usr/sbin", "/tmp", "/root", "/go"]
RUN ["/bin/busybox", "--install", "-s"]
COPY go /usr/local/go
COPY ca-certs.crt /etc/ssl/certs/ca-certificates.crt
ENV PATH=/go/bin:/usr/local/go/bin:/usr/sbin:/usr/bin:/sbin:/bin GOPATH=/go HOME=/root GOTOOLCHAIN=local
RUN chmod 1777 /tmp && go version
WORKDIR /go
EOF
    docker build -q -t "$GO_STANDIN" "$d" >/dev/null
  fi
  if ! docker image inspect "$RUNTIME_STANDIN" >/dev/null 2>&1; then
    local d="$work/runtime-standin"; mkdir -p "$d/etc" "$d/home/nonroot" "$d/tmp"
    printf 'root:x:0:0:root:/root:/sbin/nologin\nnonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin\n' >"$d/etc/passwd"
    printf 'root:x:0:\nnonroot:x:65532:\n' >"$d/etc/group"
    printf 'FROM scratch\nCOPY etc /etc\nCOPY home /home\nCOPY tmp /tmp\nUSER 65532:65532\nWORKDIR /home/nonroot\n' >"$d/Dockerfile"
    docker build -q -t "$RUNTIME_STANDIN" "$d" >/dev/null
  fi
}

if [ -z "${DAMSELFLY_IMAGE:-}" ]; then
  DAMSELFLY_IMAGE=damselfly-bench/damselfly:local
  if [[ " $SERVERS " == *" damselfly"* ]] && ! have_image "$DAMSELFLY_IMAGE"; then
    stand_ins
    echo "building $DAMSELFLY_IMAGE from $root/Dockerfile (a few minutes on a loaded machine)..." >&2
    args=(--build-arg "GO_IMAGE=$GO_STANDIN" --build-arg "RUNTIME_IMAGE=$RUNTIME_STANDIN")
    for v in GOPROXY GOSUMDB; do val=$(go env "$v"); [ -n "$val" ] && args+=(--build-arg "$v=$val"); done
    docker build -q -t "$DAMSELFLY_IMAGE" "${args[@]}" "$root" 2>&1 >/dev/null | grep -v -e DEPRECATED -e BuildKit -e "environment-variable" -e "^$" >&2 || true
    docker image inspect "$DAMSELFLY_IMAGE" >/dev/null 2>&1 || { echo "memtier-docker.sh: building $DAMSELFLY_IMAGE failed"; exit 1; }
  fi
fi
if [ -z "${REDIS_IMAGE:-}" ]; then
  REDIS_IMAGE=damselfly-bench/redis:local
  if [[ " $SERVERS " == *" redis "* ]] && ! have_image "$REDIS_IMAGE"; then
    bin=$(command -v redis-server) || { echo "memtier-docker.sh: redis-server not installed (apt-get install -y redis-server): skipped"; exit 0; }
    bin=$(readlink -f "$bin")
    d="$work/redis-image"; mkdir -p "$d/root/usr/bin" "$d/root/etc" "$d/root/data" "$d/root/tmp"
    cp "$bin" "$d/root/usr/bin/redis-server"
    # The dynamic loader and every library redis-server links, at the same paths.
    for lib in $(ldd "$bin" | awk '/=>/ {print $3} !/=>/ && $1 ~ /^\// {print $1}'); do
      mkdir -p "$d/root$(dirname "$lib")"; cp -L "$lib" "$d/root$lib"
    done
    printf 'root:x:0:0:root:/root:/sbin/nologin\nnonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin\n' >"$d/root/etc/passwd"
    printf 'root:x:0:\nnonroot:x:65532:\n' >"$d/root/etc/group"
    cat >"$d/Dockerfile" <<'EOF'
FROM scratch
COPY root /
COPY --chown=65532:65532 root/data /data
VOLUME /data
WORKDIR /data
USER 65532:65532
EXPOSE 6379
ENTRYPOINT ["/usr/bin/redis-server"]
EOF
    docker build -q -t "$REDIS_IMAGE" "$d" >/dev/null
  fi
fi

# ---- one run -----------------------------------------------------------
sockdir="$work/sock"; mkdir -p "$sockdir"; chmod 1777 "$sockdir"

# start SERVER: starts its container, sets CID, PORT (published), SOCK.
start() {
  local server=$1 name="$tag-$1-$RANDOM" vol="$tag-$1-data-$RANDOM" image args
  SOCK="$sockdir/$server.sock"; rm -f "$SOCK"
  case $server in
    damselfly|damselfly-uring|damselfly-epoll|damselfly-gpc) image=$DAMSELFLY_IMAGE
      # shellcheck disable=SC2206
      args=(--save "" --unixsocket "/run/bench/$server.sock" --unixsocketperm 777 --loglevel warning ${DAMSELFLY_ARGS:-})
      case $server in
        damselfly-uring) args+=(--event-loop io_uring) ;;
        damselfly-epoll) args+=(--event-loop epoll) ;;
        damselfly-gpc) args+=(--goroutine-per-conn) ;;
      esac ;;
    redis) image=$REDIS_IMAGE
      # shellcheck disable=SC2206
      args=(--port 6379 --bind 0.0.0.0 --protected-mode no --save "" --appendonly no --dir /data
            --unixsocket "/run/bench/$server.sock" --unixsocketperm 777 --loglevel warning ${REDIS_ARGS:-}) ;;
    *) echo "unknown server $server"; exit 1 ;;
  esac
  docker volume create "$vol" >/dev/null; volumes+=("$vol")
  CID=$(docker run -d --name "$name" --cpuset-cpus "$SERVER_CPU" -p 127.0.0.1::6379 \
          -v "$vol:/data" -v "$sockdir:/run/bench" "$image" "${args[@]}")
  containers+=("$CID")
  PORT=$(docker port "$CID" 6379/tcp | head -1); PORT=${PORT##*:}
  for _ in $(seq 200); do
    [ -S "$SOCK" ] && redis-cli -s "$SOCK" ping 2>/dev/null | grep -q PONG && redis-cli -p "$PORT" ping 2>/dev/null | grep -q PONG && return 0
    sleep 0.05
  done
  echo "$server did not come up:"; docker logs "$CID" 2>&1 | tail -20; exit 1
}
stop() { docker rm -f -v "$CID" >/dev/null; }

# cpu_us CID: the container's CPU time in microseconds, from its cgroup.
cpu_us() {
  local pid cg
  pid=$(docker inspect -f '{{.State.Pid}}' "$1")
  cg=$(awk -F: '$2 ~ /(^|,)cpuacct(,|$)/ {print $3}' "/proc/$pid/cgroup")
  if [ -n "$cg" ]; then
    for m in /sys/fs/cgroup/cpuacct /sys/fs/cgroup/cpu,cpuacct /sys/fs/cgroup/cpuacct,cpu; do
      [ -r "$m$cg/cpuacct.usage" ] && { echo $(( $(cat "$m$cg/cpuacct.usage") / 1000 )); return; }
    done
  fi
  cg=$(awk -F: '$1 == "0" {print $3}' "/proc/$pid/cgroup")
  if [ -r "/sys/fs/cgroup$cg/cpu.stat" ]; then
    awk '$1 == "usage_usec" {print $2}' "/sys/fs/cgroup$cg/cpu.stat"; return
  fi
  # No cgroup accounting: the server process itself.
  awk -v hz="$(getconf CLK_TCK)" '{printf "%d\n", ($14+$15)/hz*1e6}' "/proc/$pid/stat"
}
# proxy_us PORT: CPU microseconds of the docker-proxy serving the published port (0 if none).
proxy_us() {
  local pid
  pid=$(pgrep -f "docker-proxy .*-host-port $1( |$)" | head -1 || true)
  [ -z "$pid" ] && { echo 0; return; }
  awk -v hz="$(getconf CLK_TCK)" '{printf "%d\n", ($14+$15)/hz*1e6}' "/proc/$pid/stat"
}
# runq_ms PID: how long PID's threads waited on a run queue, runnable but not
# running (schedstat's second field, summed over threads), in ms: the share of
# a run a loaded machine took from the server or from memtier.
runq_ms() { { cat /proc/"$1"/task/*/schedstat 2>/dev/null || true; } | awk '{s += $2} END {printf "%d\n", s/1e6}'; }
loop_api() { redis-cli -s "$SOCK" info server | tr -d '\r' | awk -F: '$1=="multiplexing_api"{print $2}'; }
commands() { redis-cli -s "$SOCK" info stats | tr -d '\r' | awk -F: '$1=="total_commands_processed"{print $2}'; }

out="$work/results"
echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
for r in $(seq "$ROUNDS"); do
  for pipeline in $PIPELINES; do
    for transport in $TRANSPORTS; do
      for server in $SERVERS; do
        start "$server"
        if [ "$transport" = tcp ]; then target=(-s 127.0.0.1 -p "$PORT"); else target=(-S "$SOCK"); fi
        spid=$(docker inspect -f '{{.State.Pid}}' "$CID")
        c0=$(cpu_us "$CID"); p0=$(proxy_us "$PORT"); n0=$(commands); s0=$(runq_ms "$spid")
        taskset -c "$CLIENT_CPU" "$MEMTIER" "${target[@]}" --protocol=redis -t "$THREADS" -c "$CLIENTS" \
          --ratio="$RATIO" -d "$DATA_SIZE" --pipeline="$pipeline" --test-time="$SECS" \
          --print-percentiles 50,99,99.9 --hide-histogram >"$work/memtier.out" 2>/dev/null &
        mpid=$!; m1=0
        while kill -0 "$mpid" 2>/dev/null; do m=$(runq_ms "$mpid"); [ -n "$m" ] && m1=$m; sleep 0.2; done
        wait "$mpid" || true
        line=$(awk '$1=="Totals"' "$work/memtier.out")
        c1=$(cpu_us "$CID"); p1=$(proxy_us "$PORT"); n1=$(commands); s1=$(runq_ms "$spid"); api=$(loop_api)
        load=$(cut -d' ' -f1 /proc/loadavg)
        if [ -n "${LOGS:-}" ]; then
          mkdir -p "$LOGS"; docker stop -t 10 "$CID" >/dev/null
          docker logs "$CID" >"$LOGS/$server-$transport-P$pipeline-r$r.log" 2>&1
        fi
        stop
        # Totals: ops/s hits/s misses/s avg p50 p99 p99.9 KB/s
        read -r _ ops _ _ _ p50 p99 p999 _ <<<"$line"
        n=$((n1 - n0)); [ "$n" -gt 0 ] || n=1
        cpu=$(awk -v t=$((c1 - c0)) -v n="$n" 'BEGIN{printf "%.2f", t/n}')
        proxy=$(awk -v t=$((p1 - p0)) -v n="$n" 'BEGIN{printf "%.2f", t/n}')
        echo "$server $transport P$pipeline round $r [$api]: ops/s $ops | p50 $p50 | p99 $p99 | p99.9 $p999 | CPU/req ${cpu} us | proxy CPU/req ${proxy} us | load $load | runq ms server $((s1 - s0)) memtier $m1" \
          | tee -a "$out" ${OUT:+"$OUT"}
      done
    done
  done
done
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
python3 - "$out" <<'PY'
import re, statistics, sys, collections
rows = collections.defaultdict(list)
loops = collections.defaultdict(set)
for l in open(sys.argv[1]):
    m = re.match(r"(\S+) (\S+) (P\d+) round \d+ \[(\S*)\]: ops/s ([0-9.]+) \| p50 ([0-9.]+) \| p99 ([0-9.]+) \| p99.9 ([0-9.]+) \| CPU/req ([0-9.]+) us \| proxy CPU/req ([0-9.]+) us \| load ([0-9.]+) \| runq ms server (\d+) memtier (\d+)", l)
    if m:
        rows[(m[2], m[3], m[1])].append([float(x) for x in m.groups()[4:]])
        loops[(m[2], m[3], m[1])].add(m[4] or "?")
def f(v, p): return f"{statistics.median(v):.{p}f} ({min(v):.{p}f}-{max(v):.{p}f})" if len(v) > 1 else f"{v[0]:.{p}f}"
print()
print("| transport | pipeline | server | loop | ops/s | p50 ms | p99 ms | p99.9 ms | server CPU/request µs | docker-proxy CPU/request µs | load | run-queue wait ms: server / memtier |")
print("|---|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|")
for (tr, pl, srv), v in sorted(rows.items(), key=lambda kv: (kv[0][0] != "tcp", int(kv[0][1][1:]), kv[0][2])):
    cols = list(zip(*v))
    print(f"| {tr} | {pl} | {srv} | {'/'.join(sorted(loops[(tr, pl, srv)]))} | {f(cols[0],0)} | {f(cols[1],3)} | {f(cols[2],3)} | {f(cols[3],3)} | {f(cols[4],2)} | {f(cols[5],2) if tr == 'tcp' else '-'} | {f(cols[6],1)} | {f(cols[7],0)} / {f(cols[8],0)} |")
PY
