#!/usr/bin/env python3
"""Benchmark: a scrape of `strata collect --metrics`, classic (OpenMetrics text) vs native
(protobuf), for 1, 50 and 1,000 keys.

One heat-map dataset per key count, fed 60 seconds of the seed's three latency
bands (400 events a key a second), every key shown (--metrics-top 0). Each scrape
is taken as Prometheus asks for it (gzip), text and protobuf alternating, and
timed in the collector's process: wall time and CPU time per scrape (median of
ROUNDS), bytes before and after gzip, and the series the scrape makes in
Prometheus (classic: one per bucket bound and key, plus +Inf and _created; native:
one per key). The peer of each native figure is the classic one of the same run.
Usage: .venv/bin/python bench/metrics_native.py   (ROUNDS=20 by default)
"""
import gzip
import os
import statistics
import sys
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "tests"))

from heatmaps_util import histogram, seed_latencies             # noqa: E402
from strata.datasets.archive import DatasetInfo                 # noqa: E402
from strata.prometheus.openmetrics import Exposition              # noqa: E402

SMOKE = os.environ.get("BENCH_SMOKE") == "1"   # smoke mode (bench/run.sh): 2 rounds, up to 50 keys
ROUNDS = 2 if SMOKE else int(os.environ.get("ROUNDS", "20"))


def fed(keys: int) -> Exposition:
    rng = np.random.default_rng(keys)
    info = DatasetInfo(1, "nfs.latency[client]", "nfs.latency", "client", {}, "heatmap", "ns", "", "active",
                       0, 0, None, {})
    e = Exposition(top=0)
    seconds = [{f"10.{i // 65536}.{i // 256 % 256}.{i % 256}": {str(b): c for b, c in
                                                              histogram(seed_latencies(rng, 400)).items()}
                for i in range(keys)} for _ in range(8)]
    for s in range(60):
        e.add(info, seconds[s % 8], s)
    return e


def timed(scrape) -> tuple:
    wall, cpu = time.perf_counter(), time.process_time()
    body = gzip.compress(scrape(), compresslevel=1)
    return time.perf_counter() - wall, time.process_time() - cpu, body


def main():
    print(f"{'keys':>5} {'format':>8} {'bytes':>10} {'gzipped':>9} {'series':>8} {'wall ms':>8} {'cpu ms':>7}")
    for keys in (1, 50) if SMOKE else (1, 50, 1000):
        e = fed(keys)
        runs = {"classic": [], "native": []}
        for _ in range(ROUNDS):                                    # alternating: same machine noise
            runs["classic"].append(timed(lambda: e.text().encode()))
            runs["native"].append(timed(e.protobuf))
        text, proto = e.text(), e.protobuf()
        series = {"classic": sum(1 for line in text.splitlines() if line and not line.startswith("#")),
                  "native": keys}
        raw = {"classic": len(text.encode()), "native": len(proto)}
        med = {}
        for fmt, rs in runs.items():
            med[fmt] = (statistics.median(r[0] for r in rs) * 1e3, statistics.median(r[1] for r in rs) * 1e3)
            print(f"{keys:>5} {fmt:>8} {raw[fmt]:>10} {len(rs[-1][2]):>9} {series[fmt]:>8} "
                  f"{med[fmt][0]:>8.2f} {med[fmt][1]:>7.2f}")
        print(f"{keys:>5} native/classic: bytes {raw['native'] / raw['classic']:.3f}, gzipped "
              f"{len(runs['native'][-1][2]) / len(runs['classic'][-1][2]):.3f}, series "
              f"{series['native'] / series['classic']:.4f}, cpu {med['native'][1] / med['classic'][1]:.2f}")


if __name__ == "__main__":
    main()
