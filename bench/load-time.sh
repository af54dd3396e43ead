#!/usr/bin/env bash
# Start-up load time of a dump file, for Damselfly and redis-server.
#
#   bench/load-time.sh RUNS DUMP LABEL CMD...      (CMD gets --port/--dir/--dbfilename appended)
#
# e.g.
#   bench/load-time.sh 5 /tmp/ls/redisdump/dump.rdb redis taskset -c 0 redis-server --save "" --appendonly no
#   bench/load-time.sh 5 /tmp/ls/redisdump/dump.rdb dfly  taskset -c 0 /tmp/damselfly --save ""
#
# Each run starts the server on a free port with the dump's directory, sends
# PING every 2 ms until it answers +PONG (Redis answers -LOADING meanwhile;
# Damselfly listens only once loaded) and reports, per run: wall time from
# process start to the first +PONG, the load time the server logs itself,
# the process's CPU time at that moment (utime+stime of all its threads from
# /proc/PID/stat, 10 ms ticks), its minor page faults by then, and VmRSS 1 s
# after ready. The server is then
# stopped with SHUTDOWN NOSAVE (the dump is never rewritten). The file is read
# once beforehand so every run finds it in the page cache. Last line: median
# and range of each column.
set -euo pipefail
RUNS=${1:?usage: load-time.sh RUNS DUMP LABEL CMD...}; DUMP=${2:?DUMP}; LABEL=${3:?LABEL}; shift 3
cat "$DUMP" >/dev/null
exec python3 - "$RUNS" "$DUMP" "$LABEL" "$@" <<'PY'
import os, re, socket, statistics, subprocess, sys, time

runs, dump, label, cmd = int(sys.argv[1]), sys.argv[2], sys.argv[3], sys.argv[4:]
tick = os.sysconf("SC_CLK_TCK")

def free_port():
    s = socket.socket(); s.bind(("127.0.0.1", 0)); p = s.getsockname()[1]; s.close(); return p

def cpu(pid):
    f = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
    return (int(f[11]) + int(f[12])) / tick, int(f[7])  # utime+stime (fields 14, 15), minflt (10)

def rss_mib(pid):
    for l in open(f"/proc/{pid}/status"):
        if l.startswith("VmRSS:"):
            return int(l.split()[1]) / 1024

def logged(path):
    t = open(path, errors="replace").read()
    m = re.search(r"DB loaded from disk: ([0-9.]+) seconds", t) or re.search(r'DB loaded from disk.* seconds=([0-9.]+)', t)
    return float(m.group(1)) if m else float("nan")

rows = []
for i in range(runs):
    port = free_port()
    log = f"/tmp/load-time-{label}-{os.getpid()}.log"
    full = cmd + ["--port", str(port), "--dir", os.path.dirname(os.path.abspath(dump)), "--dbfilename", os.path.basename(dump)]
    with open(log, "w") as lf:
        t0 = time.monotonic()
        p = subprocess.Popen(full, stdout=lf, stderr=subprocess.STDOUT)
    sock = None
    while True:
        if p.poll() is not None:
            sys.exit(f"{label}: server exited with {p.returncode}, see {log}")
        try:
            if sock is None:
                sock = socket.create_connection(("127.0.0.1", port), timeout=5)
            sock.sendall(b"PING\r\n")
            if sock.recv(256).startswith(b"+PONG"):
                break
        except OSError:
            if sock is not None:
                sock.close()
            sock = None
        time.sleep(0.002)
    wall = time.monotonic() - t0
    c, faults = cpu(p.pid)
    time.sleep(1)
    rss = rss_mib(p.pid)
    sock.sendall(b"SHUTDOWN NOSAVE\r\n")
    try:
        p.wait(timeout=10)
    except subprocess.TimeoutExpired:
        p.kill(); p.wait()
    sock.close()
    lg = logged(log)
    os.unlink(log)
    rows.append((wall, lg, c, rss, faults))
    print(f"{label} run {i+1}: ready {wall:.3f} s | logged load {lg:.3f} s | CPU {c:.2f} s | RSS {rss:.1f} MiB | faults {faults}", flush=True)

cols = list(zip(*rows))
def s(v, fmt): return f"{fmt.format(statistics.median(v))} ({fmt.format(min(v))}-{fmt.format(max(v))})"
print(f"{label} median (range) of {runs}: ready {s(cols[0], '{:.3f}')} s | logged {s(cols[1], '{:.3f}')} s | "
      f"CPU {s(cols[2], '{:.2f}')} s | RSS {s(cols[3], '{:.1f}')} MiB | faults {s(cols[4], '{:.0f}')}")
PY
