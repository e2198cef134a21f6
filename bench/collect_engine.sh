#!/usr/bin/env bash
# collect_engine.sh — the engine serving 8 KiB random reads from the ARC at full speed to
# 4 strata-load clients: ops/s with no datasets vs with nfs.ops[op], nfs.latency[client],
# nfs.latency[tier] and disk.latency[device] enabled, in alternating rounds.
set -euo pipefail
cd "$(dirname "$0")/.."
SECS=${SECS:-10}
ROUNDS=${ROUNDS:-2}
source bench/collectlib.sh
engine_start
load 3 --setup > /dev/null # files written, ARC warm
declare -a base strata
for ((r = 0; r < ROUNDS; r++)); do
	base+=("$(load "$SECS")")
	collect_start 'add a nfs.ops op\nadd b nfs.latency client\nadd c nfs.latency tier\nadd d disk.latency device\n'
	strata+=("$(load "$SECS")")
	collect_stop
done
python3 - "${base[*]}" "${strata[*]}" <<'PY'
import statistics, sys
b, s = ([int(x) for x in a.split()] for a in sys.argv[1:3])
mb, ms = statistics.median(b), statistics.median(s)
print(f"engine randread 8k, 4 clients x 8 threads, median of {len(b)} rounds (ops/s): "
      f"no datasets {mb:.0f}  4 datasets {ms:.0f}  loss {100 * (1 - ms / mb):.1f} %")
print("rounds:", {"none": b, "strata": s})
PY
