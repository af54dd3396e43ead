#!/usr/bin/env bash
# Where a pipelined request's server CPU goes (issues 20 and 22): perf
# record -g of a Damselfly server pinned to CPU 0 under redis-benchmark -P 16
# on CPU 1, its samples split by call stack into kernel send / receive /
# wait, the Go scheduler, RESP parsing, dispatch bookkeeping, the keyspace,
# the command itself and so on (the first rule below that any frame of a
# sample matches names its share).
#
#   bench/pipeprof.sh [TESTS]          e.g. bench/pipeprof.sh get,set,lpush,hset
#
# Env: DAMSELFLY (binary; default: go build), SECS (perf seconds per test, 5),
# N (requests, 4000000: enough to outlast SECS), P (pipeline, 16), REDIS=1
# (profile redis-server instead, same rules for the kernel side).
# Needs perf (Debian's linux-perf). Caveat: in a VM without a PMU perf
# samples on a timer, and samples taken while interrupts were off land where
# they are re-enabled (on this project's VM: pvm_irq_enable, mostly after a
# context switch), so the kernel's wait and scheduler shares are too high;
# compare runs with each other, not with utime+stime.
set -euo pipefail
TESTS=${1:-get,set,lpush,hset}
SECS=${SECS:-5}; N=${N:-4000000}; P=${P:-16}
command -v perf >/dev/null || { echo "needs perf (apt-get install linux-perf)" >&2; exit 2; }
T=$(mktemp -d)
trap 'kill ${PID:-} ${BP:-} 2>/dev/null || true; wait 2>/dev/null; rm -rf "$T"' EXIT
if [ -z "${DAMSELFLY:-}" ]; then
  (cd "$(dirname "$0")/.." && go build -o "$T/damselfly" ./cmd/damselfly); DAMSELFLY=$T/damselfly
fi
port=$(python3 -c 'import socket;s=socket.socket();s.bind(("127.0.0.1",0));print(s.getsockname()[1])')
cat >"$T/split.py" <<'PY'
import sys, re, collections
RULES = [(n, re.compile(p)) for n, p in [
 ("page faults", r"asm_exc_page_fault|exc_page_fault"),
 ("GC", r"gcBgMarkWorker|gcDrain|gcAssist|mallocgc|scanobject|bgsweep|bgscavenge"),
 ("Go scheduler, sysmon", r"runtime\.(sysmon|mcall|schedule|futex|notesleep|startm|handoffp|stopm|goschedImpl|park_m|mstart)"),
 ("kernel: send", r"io_send|tcp_sendmsg|unix_stream_sendmsg|sock_write_iter"),
 ("kernel: receive", r"io_recv|tcp_recvmsg|unix_stream_recvmsg|io_buffer_select|sock_read_iter"),
 ("RESP parse", r"resp\.\(\*RequestReader\)|resp\.ParseInt|resp\.peek|resp\.Peek|processMultibulkBuffer|processInputBuffer"),
 ("key prefetch", r"server\.\(\*Client\)\.prefetch"),
 ("key hash, shard lock, Dashtable", r"/shard\.|/dash\.|xxh3|\.lockKey$|\.unlockKey$|dictFind|lookupKey|dbAdd|setKey"),
 ("stats, clock, ACL, lookup", r"/hdr\.|cmdDone|cmdStart|cmdBeginAt|monoNow|cmdEnded|aclDenied|lookupCommand|dispatching|kseAfter|^time\.|runtime\.nanotime|__vdso|clock_gettime|watchEnd|noteBuffers|netRead|netWrote|ustime|updateCommandLatencyHistogram"),
 ("reply encoding", r"resp\.Append|appendBulk|strconv|addReply"),
 ("command body", r"server\.cmd[A-Z]|shard/types\.|server\.pushGeneric|server\.hsetGeneric|Command$"),
 ("kernel: wait, schedule", r"io_cqring_wait|__schedule|exit_to_user_mode|epoll_wait"),
 ("dispatch", r"\.\(\*Client\)\.(dispatch|run|execute|processBatch|processInput)$|loopClient|^call$|processCommand"),
 ("io_uring loop (user and enter)", r"netpoll\."),
]]
cnt, total, stack = collections.Counter(), 0, []
def flush():
    global total
    if not stack: return
    total += 1
    for n, rx in RULES:
        for k, s in stack:
            if (not n.startswith("kernel") or k) and rx.search(s):
                cnt[n] += 1; return
    cnt["other (kernel)" if stack[0][0] else "other (user)"] += 1
for line in sys.stdin:
    if not line.strip():
        flush(); stack = []; continue
    if line[0] not in " \t": continue
    parts = line.strip().split(None, 1)
    if len(parts) < 2: continue
    sym = re.sub(r"\+0x[0-9a-f]+$", "", re.sub(r"\s+\([^()]*\)$", "", parts[1]))
    stack.append(("kernel.kallsyms" in parts[1], sym))
flush()
for n, c in cnt.most_common():
    print(f"| {n} | {100*c/total:.1f}% |")
print(f"| (samples) | {total} |")
PY
for t in ${TESTS//,/ }; do
  if [ "${REDIS:-0}" = 1 ]; then
    taskset -c 0 redis-server --port "$port" --bind 127.0.0.1 --save "" --appendonly no --dir "$T" >"$T/log" 2>&1 &
  else
    taskset -c 0 "$DAMSELFLY" --port "$port" --bind 127.0.0.1 --save "" --dir "$T" >"$T/log" 2>&1 &
  fi
  PID=$!
  for _ in $(seq 50); do redis-cli -p "$port" ping >/dev/null 2>&1 && break; sleep 0.1; done
  taskset -c 1 redis-benchmark -p "$port" -t "$t" -n "$N" -c 50 -d 256 -r 100000 -P "$P" -q >/dev/null 2>&1 &
  BP=$!
  sleep 1
  perf record -F 2000 -g -p "$PID" -o "$T/perf.data" -- sleep "$SECS" >/dev/null 2>&1
  kill "$BP" "$PID" 2>/dev/null || true; wait "$BP" "$PID" 2>/dev/null || true
  echo "### $t -P $P (load $(cut -d' ' -f1 /proc/loadavg))"
  echo "| share of server samples | |"
  echo "|---|---:|"
  perf script -i "$T/perf.data" -F ip,sym,dso 2>/dev/null | python3 "$T/split.py"
  echo
done
