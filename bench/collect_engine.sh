#!/usr/bin/env bash
# collect_engine.sh — the engine serving 8 KiB random reads from the ARC at full speed to
# 4 strata-load clients (8 threads each), with no datasets, with nfs.ops[op] alone, and
# with nfs.ops[op], nfs.latency[client], nfs.latency[tier] and disk.latency[device].
# One collector runs throughout; the datasets are switched with add/remove between short
# loads, in an order rotated each round, and each configuration is compared with the
# no-dataset load of its own round (this VM's speed drifts by tens of percent over a
# minute). Reported per configuration: the median throughput ratio, the engine's CPU time
# per op, and from the kernel's BPF statistics the BPF run time per op and the operations
# per probe hit (the engine batches them, engine/strata_probes.h).
set -euo pipefail
cd "$(dirname "$0")/.."
if [ "${BENCH_SMOKE:-}" = 1 ]; then SECS=1 ROUNDS=1; fi # smoke mode (bench/run.sh)
SECS=${SECS:-4}
ROUNDS=${ROUNDS:-6}
source bench/collectlib.sh
bpf_stats_on
engine_start
load "$WARM_SECS" --setup > /dev/null # files written, ARC warm
collect_start ''

want=([none]='' [one]='add a nfs.ops op\n'
	[four]='add a nfs.ops op\nadd b nfs.latency client\nadd c nfs.latency tier\nadd d disk.latency device\n')
progs=([none]='' [one]='nfs_ops' [four]='nfs_ops')
: > "$work/results"
paired_rounds "$ROUNDS" "$SECS" none one four
collect_stop
python3 - "$(nproc)" "$SECS" "$work/results" <<'PY'
import statistics, sys
cores, secs = int(sys.argv[1]), int(sys.argv[2])
rows = [l.split() for l in open(sys.argv[3])]
by = {}
for r, cfg, ops, nsop, runs, run_ns in rows:
    by.setdefault(int(r), {})[cfg] = (int(ops), int(nsop), int(runs), int(run_ns))
rounds = sorted(by)
base = statistics.median(by[r]["none"][0] for r in rounds)
print(f"engine randread 8k, 4 clients x 8 threads, {len(rounds)} rounds of {secs} s; no datasets: "
      f"median {base:.0f} ops/s, engine CPU {statistics.median(by[r]['none'][1] for r in rounds):.0f} ns/op")
for cfg, label in (("one", "nfs.ops[op]"), ("four", "4 datasets")):
    loss = statistics.median(100 * (1 - by[r][cfg][0] / by[r]["none"][0]) for r in rounds)
    cpu = statistics.median(by[r][cfg][1] - by[r]["none"][1] for r in rounds)
    total = sum(by[r][cfg][0] * secs for r in rounds)
    runs = sum(by[r][cfg][2] for r in rounds)
    bpf = sum(by[r][cfg][3] for r in rounds) / total
    machine = cores * 1e9 / base
    print(f"  {label:12s} throughput loss {loss:+5.1f} % (median of paired rounds); engine CPU {cpu:+5.0f} ns/op; "
          f"BPF {bpf:4.0f} ns/op = {100 * bpf / machine:.2f} % of the machine's {machine:.0f} ns/op; "
          f"{total / max(runs, 1):.1f} ops per probe hit")
print("rounds (ops/s):", {r: {c: v[0] for c, v in by[r].items()} for r in rounds})
PY
