#!/usr/bin/env bash
# bench/tiers_l2arc.sh — seed 001's table at one-machine scale: aggregate read
# throughput of the seed's reader (strata-load seed-l2arc: 50 streams, random
# file, eight 128 KiB reads from a random aligned offset) for working sets of
# 0.5x to 3x the L2ARC, with no L2ARC, an L2ARC, and an L2ARC with LZ4.  The
# pool is four HDD-model vdevs, the cache device an SSD model; the data is
# text-like (LZ4 about 2:1).  Each point warms the caches, then measures.
# Usage: bench/tiers_l2arc.sh [MEASURE_S] [WARM_S]
set -euo pipefail
cd "$(dirname "$0")/.."
MEASURE=${1:-10}
WARM=${2:-20}
L2=${L2_SIZE:-128}          # MiB
FACTORS="0.5 1 2 3" CONFIGS="none l2arc lz4"
if [ "${BENCH_SMOKE:-}" = 1 ]; then MEASURE=1 WARM=1 L2=16 FACTORS=1 CONFIGS=lz4; fi # smoke mode (bench/run.sh)
ARC=${ARC_SIZE:-32}         # MiB
FILES=16
source bench/tierlib.sh

# text-like files (LZ4 about 2:1) written through NFS under the names strata-load
# gives its working set, mode 0666 so every client's uid may read them
put_files() { # TOTAL_MIB
	.venv/bin/python - "$NFSPORT" "$1" "$FILES" <<'PY'
import random, struct, sys
sys.path.insert(0, "tests")
from engine_util import NFS_PROG, RpcClient, commit, diropargs, write
port, total, files = int(sys.argv[1]), int(sys.argv[2]) << 20, int(sys.argv[3])
rng = random.Random(1)
words = [bytes(rng.choice(b"etaoinshrdlucmfwypvbgkqjxz") for _ in range(rng.randint(2, 9)))
         for _ in range(400)]
c = RpcClient(port, timeout=60)
root = c.mount("/bench")
mode_0666 = struct.pack(">IIIIIII", 1, 0o666, 0, 0, 0, 0, 0)
for i in range(files):
    r = c.call(NFS_PROG, 8, diropargs(root, f"load-{i:07d}") + struct.pack(">I", 0) + mode_0666)
    assert r.u32() == 0 and r.u32() == 1
    fh = r.opaque()
    buf = bytearray()
    while len(buf) < total // files:
        buf += b" ".join(rng.choice(words) for _ in range(16)) + b"\n"
    for off in range(0, total // files, 65536):
        write(c, fh, off, bytes(buf[off:off + 65536]), 0)
    assert commit(c, fh)[0] == 0
c.close()
PY
}

printf "%-8s %-10s %12s %12s %10s %10s\n" "ws/L2" "config" "MiB/s" "ops/s" "l2_hits%" "asize/size"
for factor in $FACTORS; do
	ws=$(.venv/bin/python -c "print(int($factor * $L2))")
	for config in $CONFIGS; do
		opts=(--arc-max "${ARC}M" --vdev-model hdd --workers 64)
		case $config in
			l2arc) opts+=(--cache "$WORK/run/cache:${L2}M" --cache-model ssd --l2arc-compress off) ;;
			lz4) opts+=(--cache "$WORK/run/cache:${L2}M" --cache-model ssd --l2arc-compress on) ;;
		esac
		engine_start 4 "$((ws / 2 + 64))M" "${opts[@]}"
		put_files "$ws"
		args=(--profile seed-l2arc --io-size 128k --files "$FILES" --file-size "$((ws / FILES))m" --clients 5)
		load "${args[@]}" --duration "$WARM" >/dev/null
		before=$(stats)
		report=$(load "${args[@]}" --duration "$MEASURE")
		after=$(stats)
		.venv/bin/python - "$factor" "$config" "$report" "$before" "$after" <<'PY'
import json, sys
factor, config, r, b, a = sys.argv[1], sys.argv[2], *(json.loads(x) for x in sys.argv[3:])
mib = r["bytes_per_sec"]["read"] / (1 << 20) if "read" in r["bytes_per_sec"] else r["bytes_per_sec"]["total"] / (1 << 20)
misses = a["arc"]["misses"] - b["arc"]["misses"]
l2 = a.get("l2arc", {})
hits = l2.get("l2_hits", 0) - b.get("l2arc", {}).get("l2_hits", 0)
ratio = f"{l2['l2_asize'] / l2['l2_size']:.2f}" if l2.get("l2_size") else "-"
print(f"{factor + 'x':<8} {config:<10} {mib:12.1f} {r['ops_per_sec']['total']:12.0f} "
      f"{100 * hits / max(misses, 1):9.1f}% {ratio:>10}")
PY
		engine_stop
	done
done
