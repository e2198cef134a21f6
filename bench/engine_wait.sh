#!/usr/bin/env bash
# engine_wait.sh — what a timeout adds to a condition-variable wait on this machine
# (bench/wait_cost.c): plain and timed waits in alternating runs, median of each and
# their difference. The engine's workers wait between requests; only the one keeping
# the strata:nfs_ops batch timer waits with a timeout (engine/net.c).
set -euo pipefail
cd "$(dirname "$0")/.."
if [ "${BENCH_SMOKE:-}" = 1 ]; then ROUNDS=1; fi # smoke mode (bench/run.sh)
build/bench/strata-wait-cost "${ROUNDS:-6}" | python3 -c '
import statistics, sys
by = {}
for line in sys.stdin:
    kind, ns = line.split()
    by.setdefault(kind, []).append(float(ns))
plain, timed = statistics.median(by["plain"]), statistics.median(by["timed"])
runs = len(by["plain"])
print(f"condition-variable hand-off, ns per wait (median of {runs} alternating runs): "
      f"plain {plain:.0f}, timed {timed:.0f} ({timed / plain:.2f}x, +{timed - plain:.0f} ns per wait)")'
