#!/usr/bin/env bash
# collect_probe.sh — the whole cost of the strata:nfs_ops probe per NFS operation,
# measured in a tight loop (bench/probe_cost.c) rather than through a noisy throughput
# figure: the loop bare, under strata-collect with nfs.ops[op], and with the issue-4 set
# of four datasets. Three probe sites in the same run: one operation per hit (int3
# site; and a 5-byte-nop site that Linux 6.18+ optimizes into a trampoline call) and
# STRATA_NFS_BATCH operations per hit, what a busy engine worker fires.
# BEFORE_COLLECT=PATH runs another collector build (its BPF programs) beside this tree's in
# every round, and the after/before ratio of the added time is reported.
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
	for _ in $(seq 30); do [ "$(wc -l < "$work/lines")" -ge $((from + SECS)) ] && break; sleep 0.1; done
	tail -n +"$((from + 1))" "$work/lines" | head -n "$SECS" | sed "s/^/$1 /" >> "$work/phases"
}
with_collector() {
	collect_start "$2"
	phase "$1"
	collect_stop
}
builds=(after)
[ -n "${BEFORE_COLLECT:-}" ] && builds+=(before)
for ((r = 0; r < ROUNDS; r++)); do
	phase bare
	for ((b = 0; b < ${#builds[@]}; b++)); do # the builds' order swapped each round
		build=${builds[(b + r) % ${#builds[@]}]}
		[ "$build" = before ] && bin=$BEFORE_COLLECT || bin=${COLLECT_BIN:-build/bin/strata-collect}
		COLLECT_BIN=$bin with_collector "one_$build" 'add a nfs.ops op\n'
		COLLECT_BIN=$bin with_collector "four_$build" 'add a nfs.ops op\nadd b nfs.latency client\nadd c nfs.latency tier\nadd d disk.latency device\n'
	done
	[ ${#builds[@]} = 1 ] || phase bare # two builds' phases bracketed by bare ones
done
python3 - "$work/phases" <<'PY'
import random, statistics, sys
by = {}
for line in open(sys.argv[1]):
    f = line.split()
    by.setdefault(f[0], []).append([float(x) for x in f[2::2]])
med = {k: [statistics.median(col) for col in zip(*rows)] for k, rows in by.items()}
bare = med["bare"]
builds = [b for b in ("after", "before") if f"one_{b}" in med]
rng = random.Random(1)


def boot(stat):
    """stat over the per-second loops resampled: a 95 % percentile-bootstrap interval."""
    draws = sorted(stat({k: rng.choices(v, k=len(v)) for k, v in by.items()}) for _ in range(2000))
    return draws[50], draws[1949]


def batch_added(rows, k):
    return statistics.median(r[2] for r in rows[k]) - statistics.median(r[2] for r in rows["bare"])


print("strata:nfs_ops, ns per operation added to the probed thread (median of per-second loops;"
      " [95 % bootstrap interval]):")
print(f"  {'':33s} {'1 op/hit, int3':>16s} {'1 op/hit, nop5':>16s} {'full batch':>22s}")
for b in builds:
    for k, label in (("one", "nfs.ops[op]"), ("four", "4 datasets (3 on the nfs probes)")):
        single, nop5, batch = (m - x for m, x in zip(med[f"{k}_{b}"], bare))
        lo, hi = boot(lambda rows: batch_added(rows, f"{k}_{b}"))
        print(f"  {b + ' ' + label:33s} {single:16.0f} {nop5:16.0f} {batch:8.0f} [{lo:.0f}, {hi:.0f}]")
if len(builds) == 2:
    for k, label in (("one", "nfs.ops[op]"), ("four", "4 datasets")):
        ratio = [(a - x) / (b - x) for a, b, x in zip(med[f"{k}_after"], med[f"{k}_before"], bare)]
        lo, hi = boot(lambda rows: batch_added(rows, f"{k}_after") / batch_added(rows, f"{k}_before"))
        print(f"  after/before {label:20s} {ratio[0]:16.2f} {ratio[1]:16.2f} {ratio[2]:8.2f} [{lo:.2f}, {hi:.2f}]")
print(f"  bare loop: {' / '.join(f'{b:.1f}' for b in bare)} ns per operation")
PY
