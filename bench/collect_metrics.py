#!/usr/bin/env python3
"""Benchmark: what `strata collect --metrics` adds to the collector's Python side.

Twenty datasets (ten heat maps and ten counters, 50 keys each, the seed's three
latency bands) are fed second by second, as the collector does, to the OpenMetrics
exposition, which is also scraped once a second (Prometheus at its finest) and
gzipped as Prometheus asks. The peer,
measured in the same run on the same records, is what the collector does anyway:
archiving them (one SQLite transaction per second, with minute and hour rollups).
Usage: .venv/bin/python bench/collect_metrics.py   (SECONDS_SIMULATED=60 by default; 3 with BENCH_SMOKE=1, bench/run.sh)
"""
import gzip
import os
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "tests"))

from heatmaps_util import T0, histogram, seed_latencies     # noqa: E402
from strata.datasets.archive import Archive                  # noqa: E402
from strata.prometheus.openmetrics import Exposition           # noqa: E402

SECONDS = 3 if os.environ.get("BENCH_SMOKE") == "1" else int(os.environ.get("SECONDS_SIMULATED", "60"))
KEYS = [f"10.0.0.{i}" for i in range(50)]
OPS = ["read", "write", "getattr", "lookup", "access", "readdir", "create", "remove", "commit", "fsstat"]
HEATMAPS = [f"nfs.latency[op={op}][client]" for op in OPS]
COUNTERS = [f"nfs.ops[op={op}][client]" for op in OPS]


def records(rng):
    """32 distinct seconds of data per dataset kind, reused round-robin."""
    heat = [{k: {str(b): c for b, c in histogram(seed_latencies(rng, 40)).items()} for k in KEYS}
            for _ in range(32)]
    count = [{k: int(rng.integers(1, 500)) for k in KEYS} for _ in range(32)]
    return heat, count


def main():
    heat, count = records(np.random.default_rng(1))
    with tempfile.TemporaryDirectory(prefix="strata-bench-metrics-") as d:
        with Archive.open(str(Path(d) / "a.db"), readonly=False) as archive:
            infos = [archive.create(n, now=T0) for n in HEATMAPS + COUNTERS]
            ingest, exposition, coarse = archive.ingestor(), Exposition(), Exposition(digits=1)
            spent = {"archive": 0.0, "exposition": 0.0, "scrape": 0.0, "gzip": 0.0}
            size = 0
            for s in range(SECONDS):
                batch = [(i, heat[(s + j) % 32] if i.kind == "heatmap" else count[(s + j) % 32])
                         for j, i in enumerate(infos)]
                t = time.perf_counter()
                with archive.guard(), ingest.transaction():
                    for info, data in batch:
                        ingest.add(info.id, T0 + s, info.kind, data)
                spent["archive"] += time.perf_counter() - t
                t = time.perf_counter()
                for info, data in batch:
                    exposition.add(info, data, T0 + s)
                spent["exposition"] += time.perf_counter() - t
                for info, data in batch:
                    coarse.add(info, data, T0 + s)
                t = time.perf_counter()
                text = exposition.text()
                spent["scrape"] += time.perf_counter() - t
                t = time.perf_counter()
                packed = gzip.compress(text.encode(), compresslevel=1)
                spent["gzip"] += time.perf_counter() - t
                size, packed_size = len(text), len(packed)
    t = time.perf_counter()
    coarse_text = coarse.text()
    coarse_ms = 1000 * (time.perf_counter() - t)
    per_s = {k: 1000 * v / SECONDS for k, v in spent.items()}
    series = sum(1 for line in text.splitlines() if line and not line.startswith("#"))
    print(f"{len(infos)} datasets x {len(KEYS)} keys, {SECONDS} s: per second, archive {per_s['archive']:.1f} ms "
          f"(peer), exposition {per_s['exposition']:.1f} ms, one scrape {per_s['scrape']:.1f} ms "
          f"({size / 1024:.0f} KiB, {series} samples), gzip for Prometheus {per_s['gzip']:.1f} ms "
          f"({packed_size / 1024:.0f} KiB)")
    coarse_series = sum(1 for line in coarse_text.splitlines() if line and not line.startswith("#"))
    print(f"with --metrics-digits 1: one scrape {coarse_ms:.1f} ms ({len(coarse_text) / 1024:.0f} KiB, "
          f"{coarse_series} samples, {series / coarse_series:.1f}x fewer)")
    scrape = per_s["scrape"] + per_s["gzip"]
    print(f"metrics cost / archive cost: add {per_s['exposition'] / per_s['archive']:.2f}x, "
          f"add + a gzipped scrape a second {(per_s['exposition'] + scrape) / per_s['archive']:.2f}x")


if __name__ == "__main__":
    main()
