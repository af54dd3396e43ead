#!/usr/bin/env bash
# Where the wall time of a SAVE or BGSAVE goes: producing and write(2)ing
# the dump, against the final fsync (issue 14, savesync).
#
#   bench/save-phases.sh KEYS VAL ROUNDS BINARY[:CONFIG=VALUE...]...
#   bench/save-phases.sh 20 10485760 3 /tmp/dfly-main /tmp/dfly-branch:rdb-save-incremental-fsync=no
#
# Each server is pinned to CPU 0, gets DEBUG POPULATE KEYS keys of VAL
# bytes, then (after CONFIG SETs given after the binary, ':'-separated) a
# SAVE and a BGSAVE; binaries alternate within each round, each round
# starting with dd (KEYS×VAL bytes, conv=fdatasync) into the same file
# system. "redis" stands for redis-server 7.0 --rdbcompression no.
# The server runs under strace (--seccomp-bpf: only the traced calls stop)
# recording fsync, fdatasync and sync_file_range with their durations
# (with fork's child: Redis's BGSAVE); a sampler reads
# /proc/meminfo every 10 ms. Per save it prints the wall (command sent to
# reply; BGSAVE: until rdb_bgsave_in_progress is 0, polled every 5 ms), the
# time spent in the final fsync(s), in fdatasync and sync_file_range calls
# (count; wbsync's run beside the writes, so they overlap them), the
# server's CPU, the peak Dirty and Writeback, and the rate as % of dd's.
# The load average is printed with each line (the machine is shared).
set -euo pipefail
K=$1; V=$2; R=$3; shift 3
out=$(mktemp -d /tmp/savephases.XXXXXX)
trap 'rm -rf "$out"' EXIT
cpu() { awk '{print ($14+$15+$16+$17)/100}' /proc/"$1"/stat; } # with reaped children (Redis's fork)
port() { python3 -c 'import socket;s=socket.socket();s.bind(("127.0.0.1",0));print(s.getsockname()[1])'; }
meminfo() { while :; do awk '/^Dirty:|^Writeback:/{printf "%s %d ", $1, $2} END{print ""}' /proc/meminfo; sleep 0.01; done; }
DD=0
for _ in $(seq "$R"); do
	mb=$(( K * V / 1000000 )); [ "$mb" -lt 64 ] && mb=64
	DD=$(dd if=/dev/zero of="$out/dd" bs=1M count="$mb" conv=fdatasync 2>&1 |
		awk '/copied/{for(i=1;i<=NF;i++) if($i=="bytes"){b=$(i-1)} ; s=$(NF-3); print b/s/1e6}')
	rm -f "$out/dd"
	printf '%-44s %.0f MB/s (%d MB, conv=fdatasync)  load %s\n' dd "$DD" "$mb" "$(cut -d' ' -f1 /proc/loadavg)"
	for spec in "$@"; do
		IFS=: read -r -a parts <<<"$spec"; b=${parts[0]}
		d=$(mktemp -d "$out/d.XXXX"); p=$(port)
		st=(strace --seccomp-bpf -f -T -e trace=fsync,fdatasync,sync_file_range -e signal=none -qq -o "$out/st" taskset -c 0)
		if [ "$b" = redis ]; then
			"${st[@]}" redis-server --port "$p" --dir "$d" --save '' --appendonly no --enable-debug-command yes --rdbcompression no >"$d.log" 2>&1 &
		else
			"${st[@]}" "$b" --port "$p" --dir "$d" --save '' --bind 127.0.0.1 --enable-debug-command yes >"$d.log" 2>&1 &
		fi
		spid=$!
		until [ "$(redis-cli -p "$p" PING 2>/dev/null)" = PONG ]; do sleep 0.01; done
		pid=$(redis-cli -p "$p" INFO server | awk -F: '/^process_id:/{print $2+0}')
		for kv in "${parts[@]:1}"; do redis-cli -p "$p" CONFIG SET "${kv%%=*}" "${kv#*=}" >/dev/null; done
		redis-cli -p "$p" DEBUG POPULATE "$K" key "$V" >/dev/null
		for cmd in SAVE BGSAVE; do
			rm -f "$d"/*.rdb
			sync; sleep 0.3 # nothing of the previous run left dirty
			l0=$(wc -l <"$out/st")
			meminfo >"$out/mem" & mpid=$!
			c0=$(cpu "$pid"); t0=$(date +%s.%N)
			if [ $cmd = SAVE ]; then redis-cli -p "$p" SAVE >/dev/null
			else
				redis-cli -p "$p" BGSAVE >/dev/null
				until redis-cli -p "$p" INFO persistence | grep -q 'rdb_bgsave_in_progress:0'; do sleep 0.005; done
			fi
			t1=$(date +%s.%N); c1=$(cpu "$pid")
			kill "$mpid"; sleep 0.05
			tail -n +$((l0 + 1)) "$out/st" >"$out/st1"
			# strace -f splits a call another thread interrupts into "fsync(3
			# <unfinished ...>" and "<... fsync resumed>) = 0 <secs>".
			fs=$(awk '/ fsync\(|<\.\.\. fsync resumed>/ && /<[0-9.]+>$/{sub(/.*</,""); sub(/>/,""); s+=$0} END{printf "%.3f", s}' "$out/st1")
			fds=$(awk '/fdatasync\(|<\.\.\. fdatasync resumed>/ && /<[0-9.]+>$/{sub(/.*</,""); sub(/>/,""); s+=$0; n++} END{printf "%.3f s (%d)", s, n}' "$out/st1")
			sfr=$(awk '/sync_file_range\(|<\.\.\. sync_file_range resumed>/ && /<[0-9.]+>$/{sub(/.*</,""); sub(/>/,""); s+=$0; n++} END{printf "%.3f s (%d)", s, n}' "$out/st1")
			pk=$(awk '{for(i=1;i<NF;i+=2){ if($i=="Dirty:"&&$(i+1)>d)d=$(i+1); if($i=="Writeback:"&&$(i+1)>w)w=$(i+1)}} END{printf "%d/%d", d/1024, w/1024}' "$out/mem")
			size=$(du -sb "$d" | awk '{print $1/1e6}')
			wall=$(echo "$t1 - $t0" | bc)
			printf '%-36s %-7s wall %.3f s  fsync %s s  fdatasync %s  sfr %s  cpu %.2f s  %.0f MB  %.0f%% of dd  dirty/wb peak %s MiB  load %s\n' \
				"$(basename "${spec}")" $cmd "$wall" "$fs" "$fds" "$sfr" "$(echo "$c1 - $c0" | bc)" "$size" \
				"$(echo "100 * $size / $wall / $DD" | bc -l)" "$pk" "$(cut -d' ' -f1 /proc/loadavg)"
		done
		redis-cli -p "$p" SHUTDOWN NOSAVE >/dev/null 2>&1 || true; wait "$spid" 2>/dev/null || true
		rm -rf "$d" "$d.log"
	done
done
