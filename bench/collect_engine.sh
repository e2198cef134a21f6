#!/usr/bin/env bash
# collect_engine.sh — what the engine's own probes cost: the engine serving 8 KiB random
# reads from the ARC at RATE ops/s (default 20000; 0: full speed) to 4 strata-load
# clients (8 threads each), with no
# datasets, with nfs.ops[op] alone, and with nfs.ops[op], nfs.latency[client],
# nfs.latency[tier] and disk.latency[device]; with CONFIGS="none one four keyless" also with
# nfs.ops, nfs.latency, nfs.size and arc.accesses without keys (counted per batch, not per
# operation: bpf/nfs.bpf.c). One collector runs throughout; the datasets
# are switched with add/remove between short loads, in an order rotated each round, and
# each configuration is compared with the no-dataset load of its own round (this VM's
# speed drifts by tens of percent over a minute). At a fixed rate both loads of a pair ask
# the same of the engine: at full speed its CPU per op moves by a thousand ns with the
# throughput a busy machine leaves it (more ops per wake-up). Reported per configuration, as the
# median of the rounds' paired differences with a 95 % bootstrap interval: the throughput
# loss, the engine's CPU time per op from schedstat (its threads run the uprobe and the
# BPF programs) split into BPF run time (the kernel's BPF statistics) and the rest (the
# engine's own work for the probe and the trap), the collector's share of a CPU, and the
# engine's added CPU as a share of the machine's CPU per op (cores / throughput).
# BEFORE_ENGINE=PATH runs a second engine (another build) beside this tree's, with a
# collector of its own: every round loads each configuration on both, the engines' order
# swapped each round, and the after/before ratio of the added engine CPU is reported.
# BEFORE_COLLECT=PATH gives that second side another collector build (its BPF programs); with
# it alone, the second engine is this tree's.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ "${BENCH_SMOKE:-}" = 1 ]; then SECS=1 ROUNDS=1; fi # smoke mode (bench/run.sh)
SECS=${SECS:-4}
ROUNDS=${ROUNDS:-12}
RATE=${RATE:-20000}
source bench/collectlib.sh
bpf_stats_on
sides=(after)
engine_start
load "$WARM_SECS" --setup > /dev/null # files written, ARC warm
capacity=$(load "$SECS") # full speed, ops/s: the machine's CPU per op is cores / capacity
server_save after
[ "$RATE" = 0 ] || LOAD_ARGS="--rate $RATE"
if [ -n "${BEFORE_ENGINE:-}${BEFORE_COLLECT:-}" ]; then
	sides+=(before)
	ENGINE_BIN=${BEFORE_ENGINE:-${ENGINE_BIN:-build/bin/strata-engine}} engine_start _before
	load "$WARM_SECS" --setup > /dev/null
	server_save before
	rm -f "$work/ctl_before"; mkfifo "$work/ctl_before"
	"${BEFORE_COLLECT:-${COLLECT_BIN:-build/bin/strata-collect}}" --engine-pid "$engine_pid" < "$work/ctl_before" \
		> "$work/collect_before.out" 3>&- &
	before_pid=$!
	exec 4> "$work/ctl_before"
	server_use after
fi
collect_start ''

declare -A datasets=([none]='' [one]='add a nfs.ops op\n'
	[four]='add a nfs.ops op\nadd b nfs.latency client\nadd c nfs.latency tier\nadd d disk.latency device\n'
	[keyless]='add a nfs.ops -\nadd b nfs.latency -\nadd c nfs.size -\nadd d arc.accesses -\n')
read -ra kinds <<< "${CONFIGS:-none one four}"
[ "${kinds[0]}" = none ] || { echo "CONFIGS must begin with none" >&2; exit 2; }
configs=()
for ((s = 0; s < ${#sides[@]}; s++)); do
	side=${sides[s]}
	for c in "${kinds[@]}"; do
		want[${c}_$side]=${datasets[$c]} progs[${c}_$side]=$([ "$c" = none ] || echo nfs_ops) server[${c}_$side]=$side
		[ "$side" = before ] && chan[${c}_$side]=4 owner[${c}_$side]=$before_pid
		configs+=("${c}_$side")
	done
done
: > "$work/results"
# with two engines, the rotation puts each engine's three loads first or last by turns
paired_rounds "$ROUNDS" "$SECS" "${configs[@]}"
collect_stop
if [ -n "${BEFORE_ENGINE:-}${BEFORE_COLLECT:-}" ]; then
	exec 4>&-
	wait "$before_pid"
fi
python3 - "$(nproc)" "$SECS" "$work/results" "$RATE" "$capacity" "${kinds[@]:1}" <<'PY'
import random, statistics, sys
cores, secs, rate, capacity = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[4]), int(sys.argv[5])
kinds = sys.argv[6:]
LABELS = {"one": ("nfs.ops[op]", 0.5), "four": ("4 datasets", 2.0), "keyless": ("4 keyless", None)}
rows = [l.split() for l in open(sys.argv[3])]
by = {}
for r, cfg, ops, nsop, runs, run_ns, coll_ns in rows:
    by.setdefault(int(r), {})[cfg] = dict(ops=int(ops), cpu=int(nsop), runs=int(runs), bpf=int(run_ns),
                                          coll=int(coll_ns))
rounds = sorted(by)
sides = sorted({c.split("_")[1] for c in by[rounds[0]]}, reverse=True)
rng = random.Random(1)


def interval(values, stat=statistics.median):
    """stat of values and its 95 % percentile-bootstrap interval over the rounds."""
    boot = sorted(stat(rng.choices(values, k=len(values))) for _ in range(2000))
    return stat(values), boot[50], boot[1949]


def show(x, fmt="+.0f", unit=""):
    m, lo, hi = x
    return f"{m:{fmt}}{unit} [{lo:{fmt}}, {hi:{fmt}}]"


def added(side, cfg, r):
    """The configuration's paired figures in round r against the no-dataset load."""
    a, n = by[r][f"{cfg}_{side}"], by[r][f"none_{side}"]
    ops = a["ops"] * secs
    machine = cores * 1e9 / (capacity if rate else n["ops"])  # the machine's CPU per op at full speed, ns
    engine = a["cpu"] - n["cpu"]
    bpf = a["bpf"] / ops
    return dict(loss=100 * (1 - a["ops"] / n["ops"]), engine=engine, bpf=bpf, own=engine - bpf,
                coll=100 * a["coll"] / (secs * 1e9),
                share=100 * engine / machine, hits=ops / max(a["runs"], 1))


print(f"engine randread 8k at {f'{rate} ops/s' if rate else 'full speed'}, 4 clients x 8 threads, "
      f"{len(rounds)} rounds of {secs} s per configuration, "
      f"{cores} CPUs, full speed {capacity} ops/s = {cores * 1e9 / capacity:.0f} ns of CPU per op; "
      f"medians of paired rounds [95 % bootstrap interval]")
for side in sides:
    base = [by[r][f"none_{side}"] for r in rounds]
    print(f"{side}: no datasets {statistics.median(b['ops'] for b in base):.0f} ops/s, engine CPU "
          f"{statistics.median(b['cpu'] for b in base):.0f} ns/op")
    for cfg in kinds:
        label, goal = LABELS[cfg]
        f = [added(side, cfg, r) for r in rounds]
        col = lambda k: interval([x[k] for x in f])
        print(f"  {label:12s} engine CPU {show(col('engine'))} ns/op = {show(col('share'), '+.2f', ' %')} of the "
              f"machine{f' (goal <= {goal} %)' if goal else ''}; of it BPF {show(col('bpf'), '.0f')}, engine and trap "
              f"{show(col('own'))}; collector {show(col('coll'), '.2f', ' %')} of a CPU; throughput {show(col('loss'), '+.1f', ' %')} "
              f"lost; {statistics.median(x['hits'] for x in f):.0f} ops per probe hit")
if len(sides) == 2:
    print("after against before, paired by round:")
    for cfg in kinds:
        label = LABELS[cfg][0]
        pairs = {k: [(added("after", cfg, r)[k], added("before", cfg, r)[k]) for r in rounds] for k in ("engine", "bpf")}
        diff = interval([a - b for a, b in pairs["engine"]])
        ratio = interval(pairs["bpf"], lambda p: statistics.median(a for a, _ in p) / statistics.median(b for _, b in p))
        print(f"  {label:12s} engine CPU after - before {show(diff)} ns/op; BPF after/before {show(ratio, '.3f')}")
print("rounds (ops/s):", {r: {c: v["ops"] for c, v in by[r].items()} for r in rounds})
PY
