#!/usr/bin/env bash
# bench/tiers_slog.sh — seed 003's sync-write comparison: 512 B FILE_SYNC write
# latency (client side, p50/p99) with the intent log on an SSD-model SLOG
# against the log in the HDD-model pool (the region mkpool keeps on vdev 0),
# same client, same run.  Usage: bench/tiers_slog.sh [DURATION_S]
set -euo pipefail
cd "$(dirname "$0")/.."
DURATION=${1:-10}
if [ "${BENCH_SMOKE:-}" = 1 ]; then DURATION=1; fi # smoke mode (bench/run.sh)
source bench/tierlib.sh

declare -A result
for config in pool slog; do
	opts=(--vdev-model hdd)
	[[ $config == slog ]] && opts+=(--log "$WORK/run/slog:256M" --log-model ssd)
	engine_start 2 512M "${opts[@]}"
	load --profile write --stable file_sync --io-size 512 --files 8 --file-size 4m --clients 4 --threads 4 \
		--duration "$DURATION" --setup > "$WORK/$config.json"
	stats > "$WORK/$config.stats"
	engine_stop
done
.venv/bin/python - "$WORK" <<'PY'
import json, sys
w = sys.argv[1]
rows = {}
for config in ("pool", "slog"):
    r = json.load(open(f"{w}/{config}.json"))
    z = json.load(open(f"{w}/{config}.stats"))["zil"]
    lat = r["latency_ns"]["write"]
    rows[config] = (r["ops_per_sec"]["total"], lat["p50"] / 1e6, lat["p99"] / 1e6,
                    z["zil_itx_count"] / max(z["zil_commit_writes"], 1))
    print(f"log in {config:5}: {rows[config][0]:8.0f} writes/s  p50 {rows[config][1]:7.3f} ms  "
          f"p99 {rows[config][2]:7.3f} ms  {rows[config][3]:.1f} writes per log block")
p, s = rows["pool"], rows["slog"]
print(f"slog/pool: writes/s x{s[0] / p[0]:.1f}, p50 x{s[1] / p[1]:.2f}, p99 x{s[2] / p[2]:.2f}")
PY
