#!/usr/bin/env bash
# bench/arc_sim.sh — speed of `strata-engine arcsim` (ARC and LRU) on the ARC
# paper's P3 trace at 32768 pages against libCacheSim's ARC and LRU on the same
# trace, same machine, same run.  libcachesim goes into a throwaway venv under
# /tmp; if it does not install, the peer is cachetools' LRUCache (Python, LRU
# only), labelled as such.  Each side runs ARC_BENCH_RUNS times; best time kept.
# Rates are page accesses/s (a page access = one 512-byte block; libCacheSim's
# "requests"); ours also as trace requests/s.  Ours is timed end to end inside
# the process (zstd decode + parse + simulation), the peer's process_trace()
# only (its trace is pre-expanded to its binary format, untimed).
# Smoke mode (BENCH_SMOKE=1, bench/run.sh): ours only, once, on a small synthetic trace.
set -euo pipefail
cd "$(dirname "$0")/.."
TRACE=${ARC_BENCH_TRACE:-/work/shared/traces/arc/P3.lis.zst}
PAGES=${ARC_BENCH_PAGES:-32768}
RUNS=${ARC_BENCH_RUNS:-3}

OURS=(build/bin/strata-engine arcsim)
"${OURS[@]}" --help >/dev/null 2>&1 || { echo "arc_sim: build build/bin/strata-engine first" >&2; exit 1; }

work=$(mktemp -d /tmp/arc-bench.XXXXXX)
trap 'rm -rf "$work"' EXIT
if [ "${BENCH_SMOKE:-}" = 1 ]; then
  TRACE=$work/smoke.lis PAGES=1024 RUNS=1 PEER=none POLICIES="arc lru"
  python3 -c 'import random; r = random.Random(1); print("\n".join(f"{r.randrange(20000) * 8} 8 0 {i}" for i in range(20000)))' > "$TRACE"
elif python3 -m venv "$work/venv" && "$work/venv/bin/pip" install -q libcachesim numpy >"$work/pip.log" 2>&1; then
  PEER=libcachesim; POLICIES="arc lru"
else
  echo "arc_sim: libcachesim did not install ($(tail -1 "$work/pip.log")); peer is cachetools LRU (Python)"
  "$work/venv/bin/pip" install -q cachetools numpy
  PEER=cachetools; POLICIES="lru"
fi

best() {  # best(json lines..., field) -> the line with the smallest field
  python3 -c 'import json,sys; f=sys.argv[1]; rows=[json.loads(l) for l in sys.stdin if l.strip()]; print(json.dumps(min(rows, key=lambda r: r[f])))' "$1"
}

# libCacheSim at its default hash table (2^24 buckets) and at one sized like
# ours (2^ceil(log2(4 * pages))); the ratio is against the faster of the two.
HP=$(python3 -c "import math,sys; print(math.ceil(math.log2(4*int(sys.argv[1]))))" "$PAGES")
case $PEER in libcachesim) PEER_HP="default $HP" ;; none) PEER_HP="" ;; *) PEER_HP=default ;; esac

echo "trace $TRACE, $PAGES pages, best of $RUNS, $(nproc) cores"
printf '%-6s %-38s %8s %14s %14s %9s\n' policy side hit% requests/s accesses/s ratio
for pol in $POLICIES; do
  ours=$(for _ in $(seq "$RUNS"); do "${OURS[@]}" --trace "$TRACE" --pages "$PAGES" --policy "$pol" --json; done | best total_seconds)
  peers=()
  for hp in $PEER_HP; do
    hparg=(); [ "$hp" = default ] || hparg=(--hashpower "$hp")
    peers+=("$(for _ in $(seq "$RUNS"); do "$work/venv/bin/python" bench/arc_peer/replay.py --peer "$PEER" --trace "$TRACE" --pages "$PAGES" --policy "$pol" --tmp "$work/trace.bin" "${hparg[@]}"; done | best seconds)")
  done
  python3 - "$pol" "$ours" "${peers[@]}" <<'PY'
import json, sys
pol, o, peers = sys.argv[1], json.loads(sys.argv[2]), [json.loads(a) for a in sys.argv[3:]]
ref = max((p["accesses_per_s"] for p in peers), default=None)
o_aps = o["accesses"] / o["total_seconds"]
rows = [("strata arcsim (end to end)", o["hit_ratio"], o["requests"] / o["total_seconds"], o_aps),
        ("strata arcsim (simulation only)", o["hit_ratio"], o["requests_per_s"], o["accesses_per_s"])]
rows += [(p["peer"], p["hit_ratio"], None, p["accesses_per_s"]) for p in peers]
for name, hr, rps, aps in rows:
    r = "-" if rps is None else f"{rps:.0f}"
    ratio = "-" if ref is None else f"{aps / ref:.2f}x"
    print(f"{pol:<6} {name:<38} {hr:8.2f} {r:>14} {aps:14.0f} {ratio:>9}")
for p in peers:
    if p["hits"] != o["hits"]:
        print(f"{pol:<6} note: hit counts differ: strata {o['hits']}, {p['peer']} {p['hits']}")
PY
done
