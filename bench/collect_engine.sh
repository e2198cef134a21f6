#!/usr/bin/env bash
# collect_engine.sh — what the engine's own probes cost, all of it: the engine serving 8 KiB
# random reads from the ARC at RATE ops/s (0: full speed; by default 35 % of the full-speed
# throughput measured first, so that two paired engines keep the machine about 70 % busy:
# there a window's noise per op was half what it is at 20,000 ops/s) to 4 strata-load
# clients (8 threads each), with no datasets, with nfs.ops[op] alone ("one"), with
# nfs.ops[op], nfs.latency[client], nfs.latency[tier] and disk.latency[device] ("four"); with
# CONFIGS="none one four keyless" also with nfs.ops, nfs.latency, nfs.size and arc.accesses
# without keys (counted per batch, not per operation: bpf/nfs.bpf.c); with "sem", the engine's
# own work for one's probe, strata:nfs_keys, alone (its semaphore raised from outside: batches
# of keys filled, no uprobe, so no trap and no BPF), with "semops" the same for strata:nfs_ops
# (operations put whole), which the other configurations' datasets read. "none" is implied.
# bench/enginewindows.py runs it: one steady load per segment (ROUNDS segments of CYCLES
# cycles), each configuration switched on for WINDOW seconds per cycle between windows
# without datasets, and the CPU time of the engine's and the collector's threads read from
# schedstat around each window (the whole cost: trap, BPF, helpers, the engine's work for
# the probe, the collector's reads), per operation the engine answered, against the
# windows without datasets of the same cycle, with 95 % bootstrap intervals over cycles. A
# planted cost checks the method in the same run: more counters of keys beside nfs.ops[op]
# add BPF time only, which the kernel times exactly, and the engine's CPU must rise by it.
# Also per configuration: the engine's ns per op in probe hits (its clock across each: trap,
# dispatch, BPF; its stats socket), the kernel's BPF ns per op, the ops per hit, and the whole
# cost as a share of the machine's CPU per op (cores / the full-speed throughput).
# BEFORE_ENGINE=PATH runs a second engine (another build) beside this tree's, with a
# collector of its own: the segments alternate engines (the first swapped each round), and
# after - before of the whole cost and after/before of the BPF time are reported.
# BEFORE_COLLECT=PATH gives that second side another collector build (its BPF programs); with
# it alone, the second engine is this tree's.
# Without BEFORE_*, the run is paired (PAIRED=0: windows of one engine in turn, as with them):
# two engines of this tree ("after" and "twin"), each with its collector and load, at once; in
# each window one has a configuration's datasets and the other none, and the cost is read from
# their difference (bench/enginewindows.py, "Paired"): on this VM its interval is about half
# as wide for the same minutes.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ "${BENCH_SMOKE:-}" = 1 ]; then ROUNDS=1 CYCLES=1 WINDOW=0.2; fi # smoke mode (bench/run.sh)
ROUNDS=${ROUNDS:-4}
CYCLES=${CYCLES:-60}
WINDOW=${WINDOW:-0.3}
source bench/collectlib.sh
bpf_stats_on
engine_start
load "$WARM_SECS" --setup > /dev/null # files written, ARC warm
capacity=$(load "$([ "${BENCH_SMOKE:-}" = 1 ] && echo 1 || echo 4)") # full speed, ops/s: the machine's CPU per op is cores / capacity
RATE=${RATE:-$((capacity * 35 / 100))}
server_save after
sides=()
second=before
[ -n "${BEFORE_ENGINE:-}${BEFORE_COLLECT:-}" ] || PAIRED=${PAIRED:-1}
if [ "${PAIRED:-}" = 1 ]; then
	[ -z "${BEFORE_ENGINE:-}${BEFORE_COLLECT:-}" ] || { echo "collect_engine.sh: PAIRED=1 sets this tree's engine against itself, without BEFORE_ENGINE or BEFORE_COLLECT" >&2; exit 2; }
	second=twin
fi
if [ -n "${BEFORE_ENGINE:-}${BEFORE_COLLECT:-}" ] || [ "$second" = twin ]; then # started first: the after collector's fifo (fd 3) is not theirs
	ENGINE_BIN=${BEFORE_ENGINE:-${ENGINE_BIN:-build/bin/strata-engine}} engine_start _before
	load "$WARM_SECS" --setup > /dev/null
	server_save before
	rm -f "$work/ctl_before"; mkfifo "$work/ctl_before"
	"${BEFORE_COLLECT:-${COLLECT_BIN:-build/bin/strata-collect}}" --engine-pid "$engine_pid" < "$work/ctl_before" \
		> "$work/collect_before.out" 3>&- &
	before_pid=$!
	exec 4> "$work/ctl_before"
	sides+=("$second $engine_pid $before_pid $nfs_port $mount_port $work/ctl_before $work/collect_before.out")
	server_use after
fi
collect_start ''
sides=("after $engine_pid $collect_pid $nfs_port $mount_port $work/ctl $work/collect.out" "${sides[@]}")
read -ra kinds <<< "${CONFIGS:-none one four}"
spec=$(python3 - "$RATE" "$capacity" "$(nproc)" "$ROUNDS" "$CYCLES" "$WINDOW" "$WARM_SECS" "${kinds[*]}" "${PAIRED:-}" "${sides[@]}" <<'PY'
import json, sys
rate, capacity, cores, rounds, cycles, window, warm, kinds, paired = sys.argv[1:10]
datasets = {"one": "add a nfs.ops op\n",
            "four": "add a nfs.ops op\nadd b nfs.latency client\nadd c nfs.latency tier\nadd d disk.latency device\n",
            "sem": "semaphore nfs_keys\n",  # the engine's work for one's probe alone: no trap, no BPF
            "semops": "semaphore nfs_ops\n",  # the same for a reader of whole operations
            "keyless": "add a nfs.ops -\nadd b nfs.latency -\nadd c nfs.size -\nadd d arc.accesses -\n",
            # the planted cost: BPF work per hit only (the trap and the engine's work are one's:
            # every one of them reads the counting keys alone, bpf/nfs_readers.h)
            "plant": "add a nfs.ops op\n" + "".join(f"add p{i} nfs.ops {('tier', 'op', '-')[i % 3]}\n" for i in range(6))}
kinds = [k for k in kinds.split() if k != "none"]
bad = [k for k in kinds if k not in datasets]
if bad:
    sys.exit(f"collect_engine.sh: unknown configuration {bad[0]} in CONFIGS (none, one, four, keyless, sem, semops)")
if "one" in kinds:
    kinds.append("plant")
sides = []
for s in sys.argv[10:]:
    name, engine, collector, nfs, mount, ctl, replies = s.split()
    sides.append(dict(name=name, engine_pid=int(engine), collector_pid=int(collector), nfs_port=int(nfs),
                      mount_port=int(mount), stats_socket=f"/run/strata/engine-{engine}.sock", ctl=ctl, replies=replies))
print(json.dumps(dict(sides=sides, configs={k: datasets[k] for k in kinds}, segments=int(rounds), cycles=int(cycles),
                      window=float(window), settle=0.1, warm=int(warm), export="/export",
                      load_args=[] if rate == "0" else ["--rate", rate], rate=int(rate), capacity=int(capacity),
                      cores=int(cores), paired=paired == "1")))
PY
)
.venv/bin/python bench/enginewindows.py "$work/windows" "$spec"
collect_stop
if [ -n "${BEFORE_ENGINE:-}${BEFORE_COLLECT:-}" ] || [ "$second" = twin ]; then
	exec 4>&-
	wait "$before_pid"
fi
[ -z "${WINDOWS_OUT:-}" ] || cp "$work/windows" "$WINDOWS_OUT" # every window's readings, for a second look
.venv/bin/python bench/enginewindows.py report "$work/windows" "$spec"
