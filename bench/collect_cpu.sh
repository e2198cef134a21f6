#!/usr/bin/env bash
# collect_cpu.sh — strata-collect's own CPU and peak RSS with 20 datasets enabled while the
# engine serves random reads at full speed (so every nfs dataset has keys and buckets to read).
set -euo pipefail
cd "$(dirname "$0")/.."
if [ "${BENCH_SMOKE:-}" = 1 ]; then SECS=1; fi # smoke mode (bench/run.sh)
SECS=${SECS:-10}
source bench/collectlib.sh
engine_start
load "$WARM_SECS" --setup > /dev/null
cmds=""
i=0
for stat in nfs.ops nfs.latency nfs.size; do
	for bd in - op client tier file; do cmds+="add d$((i++)) $stat $bd\n"; done
done
for ds in "arc.accesses hit/miss" "arc.accesses op" "disk.ops device" "disk.latency device" \
	"disk.size op"; do
	cmds+="add d$((i++)) $ds\n"
done
collect_start "$cmds"
ticks() { awk '{print $1}' "/proc/$collect_pid/schedstat"; } # ns on a CPU
t0=$(ticks); s0=$(date +%s.%N)
ops=$(load "$SECS")
t1=$(ticks); s1=$(date +%s.%N)
hwm=$(awk '/VmHWM/ {print $2}' "/proc/$collect_pid/status")
collect_stop
python3 - "$t0" "$t1" "$s0" "$s1" "$hwm" "$ops" "$i" <<'PY'
import sys
t0, t1, s0, s1, hwm, ops, n = (float(x) for x in sys.argv[1:8])
print(f"strata-collect with {n:.0f} datasets, engine at {ops:.0f} ops/s: "
      f"CPU {100 * (t1 - t0) / 1e9 / (s1 - s0):.3f} % of a core, peak RSS {hwm / 1024:.1f} MiB")
PY
errors=$(grep -c '"type":"error"' "$work/collect.out" || true)
[ "$errors" = 0 ] || { echo "collect_cpu: $errors datasets refused" >&2; exit 1; }
