#!/usr/bin/env bash
# collect_bpfcost.sh — the BPF programs' own run time per probe hit, from the kernel's
# BPF statistics (kernel.bpf_stats_enabled): far steadier than throughput on a shared
# VM. Disk layer: strata's disk datasets vs libbpf-tools' biolatency -D on the same
# fio random reads (ns per I/O, issue + completion). The tracepoint entry itself is not
# in these figures (it is the same for every program on the hook). The NFS layer's BPF
# time per operation is in bench/collect_engine.sh, its whole cost in collect_probe.sh.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ "${BENCH_SMOKE:-}" = 1 ]; then SECS=1; fi # smoke mode (bench/run.sh)
SECS=${SECS:-5}
COLLECT=build/bin/strata-collect
source bench/collectlib.sh
was=$(sysctl -n kernel.bpf_stats_enabled)
sysctl -qw kernel.bpf_stats_enabled=1
truncate -s 256M "$work/disk.img"
dev=$(losetup --find --show --direct-io=on "$work/disk.img")
trap 'sysctl -qw kernel.bpf_stats_enabled="$was"; losetup -d "$dev"; collect_cleanup' EXIT

# per_hit NAME_PATTERN: ns per run of the matching programs, summed (issue + complete)
per_hit() {
	bpftool prog show -j | python3 -c '
import json, re, sys
progs = [p for p in json.load(sys.stdin) if p.get("run_cnt") and re.search(sys.argv[1], p["name"])]
each = ", ".join("%s %.0f" % (p["name"], p["run_time_ns"] / p["run_cnt"]) for p in progs)
print("%.0f ns (%s)" % (sum(p["run_time_ns"] / p["run_cnt"] for p in progs), each))' "$1"
}
fio_run() {
	fio --name=bench --filename="$dev" --rw=randread --bs=4k --direct=1 --ioengine=psync \
		--runtime="$SECS" --time_based --size=256M --output-format=json > /dev/null
}
# with_collector COMMANDS PATTERN WORKLOAD...: strata-collect running COMMANDS during WORKLOAD
with_collector() {
	local cmds=$1 pattern=$2
	shift 2
	rm -f "$work/ctl"; mkfifo "$work/ctl"
	"$COLLECT" < "$work/ctl" > /dev/null &
	collect_pid=$!
	exec 3> "$work/ctl"
	printf "$cmds" >&3
	sleep 1.5
	"$@" > /dev/null
	per_hit "$pattern"
	exec 3>&-
	wait "$collect_pid"
	collect_pid=""
}

echo "disk layer, fio randread 4k on a loop device, BPF ns per I/O:"
echo "  strata disk.latency[device]:         $(with_collector 'add l disk.latency device\n' '^disk_' fio_run)"
echo "  strata disk.ops, .latency, .size:    $(with_collector 'add o disk.ops device\nadd l disk.latency device\nadd s disk.size op\n' '^disk_' fio_run)"
biolatency -D > /dev/null &
bio=$!
sleep 1.5
fio_run
echo "  biolatency -D (peer):                $(per_hit '^block_rq_')"
kill -INT "$bio"; wait "$bio" || true

