#!/usr/bin/env bash
# collect_engine.sh — the engine serving 8 KiB random reads from the ARC at full speed to
# 4 strata-load clients: ops/s with no datasets, with nfs.ops[op] alone (the cost of the
# probe hit itself), and with nfs.ops[op], nfs.latency[client], nfs.latency[tier] and
# disk.latency[device] enabled, in alternating rounds.
set -euo pipefail
cd "$(dirname "$0")/.."
SECS=${SECS:-10}
ROUNDS=${ROUNDS:-2}
source bench/collectlib.sh
engine_start
load 3 --setup > /dev/null # files written, ARC warm
declare -a base one four
for ((r = 0; r < ROUNDS; r++)); do
	base+=("$(load "$SECS")")
	collect_start 'add a nfs.ops op\n'
	one+=("$(load "$SECS")")
	collect_stop
	collect_start 'add a nfs.ops op\nadd b nfs.latency client\nadd c nfs.latency tier\nadd d disk.latency device\n'
	four+=("$(load "$SECS")")
	collect_stop
done
python3 - "${base[*]}" "${one[*]}" "${four[*]}" <<'PY'
import statistics, sys
b, o, f = ([int(x) for x in a.split()] for a in sys.argv[1:4])
mb, mo, mf = statistics.median(b), statistics.median(o), statistics.median(f)
print(f"engine randread 8k, 4 clients x 8 threads, median of {len(b)} rounds (ops/s): no datasets {mb:.0f}  "
      f"nfs.ops[op] alone {mo:.0f} (loss {100 * (1 - mo / mb):.1f} %)  "
      f"4 datasets {mf:.0f} (loss {100 * (1 - mf / mb):.1f} %)")
print("rounds:", {"none": b, "one": o, "four": f})
PY
