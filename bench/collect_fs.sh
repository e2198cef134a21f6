#!/usr/bin/env bash
# collect_fs.sh — what the file-system layer costs. fio (psync, 4 KiB random reads of a
# file in the page cache, one job thread) runs in paired rounds: without strata, with
# fs.latency[op] following fio's pid, and with fs.latency[op] following another process
# (fio not chosen: the price the rest of the machine pays). Reports fio's throughput per
# mode (median of the rounds and the loss against the paired rounds without strata),
# and the BPF programs' own run time from the kernel's BPF statistics: ns per fio read
# when chosen (entry + exit), ns per program run when not.
set -euo pipefail
cd "$(dirname "$0")/.."
SECS=${SECS:-4}
ROUNDS=${ROUNDS:-3}
source bench/collectlib.sh
was=$(sysctl -n kernel.bpf_stats_enabled)
sysctl -qw kernel.bpf_stats_enabled=1
trap 'sysctl -qw kernel.bpf_stats_enabled="$was"; collect_cleanup' EXIT

file="$work/data"
head -c 256M /dev/urandom > "$file"
cat "$file" > /dev/null  # in the page cache

# fs_stats: "RUN_TIME_NS RUN_CNT" summed over the fs programs loaded now
fs_stats() {
	bpftool prog show -j | python3 -c '
import json, sys
progs = [p for p in json.load(sys.stdin) if p.get("name") in ("fs_enter", "fs_exit")]
print(sum(p.get("run_time_ns", 0) for p in progs), sum(p.get("run_cnt", 0) for p in progs))'
}

# round MODE: one fio run; MODE off | chosen | other. Prints "IOPS READS BPF_NS BPF_RUNS".
round() {
	local mode=$1 fio_pid sleeper="" out="$work/fio.json" stats0 stats1
	fio --name=bench --filename="$file" --rw=randread --bs=4k --ioengine=psync --thread --invalidate=0 \
		--startdelay=2 --runtime="$SECS" --time_based --size=256M --output-format=json > "$out" &
	fio_pid=$!
	if [ "$mode" != off ]; then
		[ "$mode" = other ] && { sleep 600 & sleeper=$!; }
		rm -f "$work/ctl"; mkfifo "$work/ctl"
		build/bin/strata-collect --fs-pid "${sleeper:-$fio_pid}" < "$work/ctl" > "$work/collect.out" &
		collect_pid=$!
		exec 3> "$work/ctl"
		printf 'add l fs.latency op\n' >&3
		sleep 1.5
		stats0=$(fs_stats)
	fi
	wait "$fio_pid"
	if [ "$mode" != off ]; then
		stats1=$(fs_stats)
		exec 3>&-
		wait "$collect_pid"
		collect_pid=""
		[ -n "$sleeper" ] && kill "$sleeper" && wait "$sleeper" 2>/dev/null || true
		grep -q '"type":"error"' "$work/collect.out" && { grep -m1 '"type":"error"' "$work/collect.out" >&2; exit 1; }
		[ "$mode" = chosen ] && ! grep -q '"pread64"' "$work/collect.out" && { echo "fio's reads not seen" >&2; exit 1; }
	else
		stats0="0 0"; stats1="0 0"
	fi
	python3 - "$out" $stats0 $stats1 <<'PY'
import json, sys
job = json.load(open(sys.argv[1]))["jobs"][0]["read"]
ns0, n0, ns1, n1 = map(int, sys.argv[2:6])
print(round(job["iops"]), job["total_ios"], ns1 - ns0, n1 - n0)
PY
}

declare -A iops reads bpf_ns bpf_runs
for r in $(seq "$ROUNDS"); do
	for mode in off chosen other; do
		read -r i n ns runs < <(round "$mode")
		iops[$mode]+="$i "; reads[$mode]+="$n "; bpf_ns[$mode]+="$ns "; bpf_runs[$mode]+="$runs "
	done
done
python3 - "${iops[off]}" "${iops[chosen]}" "${iops[other]}" "${reads[chosen]}" "${bpf_ns[chosen]}" \
	"${bpf_ns[other]}" "${bpf_runs[other]}" "$ROUNDS" "$SECS" <<'PY'
import statistics, sys
off, chosen, other, reads, ns_chosen, ns_other, runs_other = ([int(x) for x in a.split()] for a in sys.argv[1:8])
rounds, secs = sys.argv[8], sys.argv[9]
med = statistics.median
loss = lambda on: med([1 - b / a for a, b in zip(off, on)]) * 100
print(f"fio psync randread 4k from the page cache, {rounds} paired rounds of {secs}s, fs.latency[op]:")
print(f"  without strata:          {med(off):>9.0f} reads/s")
print(f"  fio chosen (--fs-pid):   {med(chosen):>9.0f} reads/s   loss {loss(chosen):5.1f}%   "
      f"BPF {med([n / r for n, r in zip(ns_chosen, reads)]):.0f} ns per read (enter + exit)")
print(f"  fio not chosen:          {med(other):>9.0f} reads/s   loss {loss(other):5.1f}%   "
      f"BPF {med([n / r for n, r in zip(ns_other, runs_other)]):.0f} ns per program run "
      f"({med(runs_other) / float(secs) / 2:.0f} syscalls/s machine-wide)")
PY
