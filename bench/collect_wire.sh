#!/usr/bin/env bash
# collect_wire.sh — the wire layer's cost. The engine serves 8 KiB random reads from the ARC
# at full speed to 4 strata-load clients (8 threads each) on loopback, with no datasets, with
# wire.latency[client] + wire.ops[op] (TC programs on lo, both directions), and with the same
# two statistics from the engine's USDT probe (nfs.latency[client] + nfs.ops[op]) as the peer.
# One collector runs throughout; datasets are switched between short loads in an order rotated
# each round, and each configuration is compared with the no-dataset load of its own round.
# Reported: median throughput loss of paired rounds, and from the kernel's BPF statistics
# (kernel.bpf_stats_enabled) the BPF run time per packet and per NFS operation.
set -euo pipefail
cd "$(dirname "$0")/.."
SECS=${SECS:-4}
ROUNDS=${ROUNDS:-6}
source bench/collectlib.sh
was=$(sysctl -n kernel.bpf_stats_enabled)
sysctl -qw kernel.bpf_stats_enabled=1
trap 'sysctl -qw kernel.bpf_stats_enabled="$was"; collect_cleanup' EXIT
engine_start
load 3 --setup > /dev/null # files written, ARC warm
COLLECT_ARGS="--wire-iface lo --wire-port $nfs_port --wire-port $mount_port"
collect_start 'add warm wire.ops op\nremove warm\n' # the wire program verified once, up front
sleep 4 # verification takes seconds on a busy machine

declare -A want=(
	[none]=''
	[wire]='add a wire.latency client\nadd b wire.ops op\n'
	[usdt]='add a nfs.latency client\nadd b nfs.ops op\n'
)
# bpf_runs PATTERN: "RUN_COUNT RUN_TIME_NS" summed over the programs whose name matches
bpf_runs() {
	bpftool prog show -j | python3 -c '
import json, re, sys
ps = [p for p in json.load(sys.stdin) if re.fullmatch(sys.argv[1], p.get("name", ""))]
print(sum(p.get("run_cnt", 0) for p in ps), sum(p.get("run_time_ns", 0) for p in ps))' "$1"
}
declare -A progs=([none]='wire_ingress|wire_egress|nfs_ops' [wire]='wire_ingress|wire_egress' [usdt]='nfs_ops')
configs=(none wire usdt)
cfg=none
: > "$work/results"
for ((r = 0; r < ROUNDS; r++)); do
	for ((i = 0; i < 3; i++)); do
		printf "${want[$cfg]}" | sed -n 's/^add \([a-z]*\) .*/remove \1/p' >&3 # the previous set off
		cfg=${configs[(i + r) % 3]}
		printf "${want[$cfg]}" >&3
		sleep 0.5
		read -r n0 t0 < <(bpf_runs "${progs[$cfg]}")
		read -r ops nsop < <(load_cost "$SECS")
		read -r n1 t1 < <(bpf_runs "${progs[$cfg]}")
		echo "$r $cfg $ops $nsop $((n1 - n0)) $((t1 - t0))" >> "$work/results"
	done
done
collect_stop
python3 - "$SECS" "$work/results" <<'PY'
import statistics, sys
secs = int(sys.argv[1])
rows = [l.split() for l in open(sys.argv[2])]
by = {}
for r, cfg, ops, nsop, runs, run_ns in rows:
    by.setdefault(int(r), {})[cfg] = (int(ops), int(nsop), int(runs), int(run_ns))
rounds = sorted(by)
base = statistics.median(by[r]["none"][0] for r in rounds)
print(f"engine randread 8k on lo, 4 clients x 8 threads, {len(rounds)} rounds of {secs} s; no datasets: "
      f"median {base:.0f} ops/s")
for cfg, label in (("wire", "wire.latency[client] + wire.ops[op] (TC)"),
                   ("usdt", "nfs.latency[client] + nfs.ops[op] (USDT peer)")):
    loss = statistics.median(100 * (1 - by[r][cfg][0] / by[r]["none"][0]) for r in rounds)
    total = sum(by[r][cfg][0] * secs for r in rounds)
    runs = sum(by[r][cfg][2] for r in rounds)
    run_ns = sum(by[r][cfg][3] for r in rounds)
    print(f"  {label:48s} throughput loss {loss:+5.1f} % (median of paired rounds); "
          f"BPF {run_ns / total:4.0f} ns/op, {run_ns / max(runs, 1):4.0f} ns/run, {runs / total:.2f} runs/op")
print("rounds (ops/s):", {r: {c: v[0] for c, v in by[r].items()} for r in rounds})
PY
