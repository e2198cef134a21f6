#!/usr/bin/env bash
# collect_probe.sh — the whole cost of the strata:nfs_ops probe per NFS operation,
# measured in a tight loop (bench/probe_cost.c) rather than through a noisy throughput
# figure: the loop bare, under strata-collect with nfs.ops[op], and with the issue-4 set
# of four datasets. Three probe sites in the same run: one operation per hit (int3
# site; and a 5-byte-nop site that Linux 6.18+ optimizes into a trampoline call) and
# STRATA_NFS_BATCH operations per hit, what a busy engine worker fires.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ "${BENCH_SMOKE:-}" = 1 ]; then SECS=1 ROUNDS=1; fi # smoke mode (bench/run.sh)
SECS=${SECS:-4}
ROUNDS=${ROUNDS:-2}
source bench/collectlib.sh
"${PROBE_COST_BIN:-build/bench/strata-probe-cost}" > "$work/lines" &
engine_pid=$! # the collector attaches to the prober as to an engine

# phase NAME: SECS per-second lines (the first one after a change is dropped)
phase() {
	local from
	sleep 1.2
	from=$(wc -l < "$work/lines")
	sleep "$SECS"
	tail -n +"$((from + 1))" "$work/lines" | head -n "$SECS" | sed "s/^/$1 /" >> "$work/phases"
}
with_collector() {
	collect_start "$2"
	phase "$1"
	collect_stop
}
for ((r = 0; r < ROUNDS; r++)); do
	phase bare
	with_collector one 'add a nfs.ops op\n'
	with_collector four 'add a nfs.ops op\nadd b nfs.latency client\nadd c nfs.latency tier\nadd d disk.latency device\n'
done
python3 - "$work/phases" <<'PY'
import statistics, sys
by = {}
for line in open(sys.argv[1]):
    f = line.split()
    by.setdefault(f[0], []).append([float(x) for x in f[2::2]])
med = {k: [statistics.median(col) for col in zip(*rows)] for k, rows in by.items()}
bare = med["bare"]
print("strata:nfs_ops, ns per operation added to the probed thread (median of per-second loops):")
print(f"  {'':26s} {'1 op/hit, int3':>16s} {'1 op/hit, nop5':>16s} {'full batch':>12s}")
for k, label in (("one", "nfs.ops[op]"), ("four", "4 datasets (3 on nfs_ops)")):
    single, nop5, batch = (m - b for m, b in zip(med[k], bare))
    print(f"  {label:26s} {single:16.0f} {nop5:16.0f} {batch:12.0f}")
print(f"  bare loop: {' / '.join(f'{b:.1f}' for b in bare)} ns per operation")
PY
