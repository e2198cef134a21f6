"""Helpers for the heat-map tests: golden QueryResults built by hand, and real
archives written through the datasets API (Archive.create + Ingestor)."""
import os
import subprocess
import sys
from pathlib import Path

import numpy as np

from strata.datasets import llhist
from strata.datasets.archive import Archive
from strata.datasets.query import QueryResult

T0 = 1_763_800_000          # a fixed unix second (2025-11-22 08:26:40 UTC), minute-aligned below
T0 -= T0 % 3600
REPO = Path(__file__).resolve().parent.parent
STRATA = [sys.executable, "-c", "from strata.cli.main import main; main()"]


def heatmap_result(values_by_key: dict, n: int, step: int = 1, start: int = T0,
                   name: str = "nfs.latency[client]", unit: str = "ns") -> QueryResult:
    """A heat-map QueryResult from {key: [(column, value_ns, count), ...]}."""
    keys = sorted(values_by_key)
    all_b = sorted({llhist.bucket(v) for k in keys for _, v, _ in values_by_key[k]})
    counts = np.zeros((len(keys), n, len(all_b)), dtype=np.uint64)
    for ki, k in enumerate(keys):
        for col, v, c in values_by_key[k]:
            counts[ki, col, all_b.index(llhist.bucket(v))] += c
    return QueryResult(name=name, statistic=name.split("[")[0], kind="heatmap", unit=unit, step=step,
                       times=start + step * np.arange(n, dtype=np.int64), keys=keys or [""],
                       buckets=np.array(all_b, dtype=np.int64), counts=counts)


def counter_result(values: dict, n: int, step: int = 1, start: int = T0,
                   name: str = "nfs.ops[client]") -> QueryResult:
    """A counter QueryResult from {key: array of n per-column counts}."""
    keys = sorted(values)
    return QueryResult(name=name, statistic=name.split("[")[0], kind="counter", unit="ops", step=step,
                       times=start + step * np.arange(n, dtype=np.int64), keys=keys,
                       values=np.array([values[k] for k in keys], dtype=np.int64).reshape(len(keys), n))


def seed_latencies(rng, n: int) -> list:
    """The seed's three NFS bands: DRAM 1-10 us, L2ARC 128-260 us, disk 1.9-9.7 ms."""
    out = []
    for lo, hi, share in ((1_000, 10_000, 0.5), (128_000, 260_000, 0.4), (1_900_000, 9_700_000, 0.1)):
        out.append(rng.integers(lo, hi, max(int(n * share), 1)))
    return list(np.concatenate(out))


def build_archive(path, datasets: dict, start: int = T0, seconds: int = 60):
    """Write an archive: datasets maps name -> fn(t) returning that second's record data
    ({key: {bucket: count}} for heat maps, {key: count} for counters), or None to skip."""
    with Archive.open(str(path), readonly=False) as archive:
        ids = {}
        for name in datasets:
            info = archive.create(name, now=start)
            ids[name] = (info.id, info.kind)
        ing = archive.ingestor()
        with ing.transaction():
            for t in range(start, start + seconds):
                for name, fn in datasets.items():
                    data = fn(t)
                    if data is not None:
                        ing.add(ids[name][0], t, ids[name][1], data)
    return path


def histogram(values) -> dict:
    """{bucket: count} for a list of values (a collector record's heat-map data)."""
    b, c = np.unique(llhist.buckets_of(np.asarray(values, dtype=np.uint64)), return_counts=True)
    return {int(x): int(y) for x, y in zip(b, c)}


def run_strata(args, env_extra=None, **kw):
    env = dict(os.environ, **(env_extra or {}))
    return subprocess.run(STRATA + list(args), capture_output=True, text=True, env=env, cwd=kw.pop("cwd", None),
                          timeout=kw.pop("timeout", 120), **kw)


SEED_BANDS = ((1_000, 10_000), (128_000, 260_000), (1_900_000, 9_700_000))   # DRAM, flash, disk (ns)
SLOW = (40_000_000, 240_000_000)                                              # slow outliers (ns)


def seed_with_outliers(rng, seconds: int, per_second: int, slow_share: float) -> dict:
    """{second offset: latencies}: the seed's three bands, with slow_share of the events
    (at least one every 5 s, as in the demo) slow outliers of 40-240 ms."""
    out = {}
    for t in range(seconds):
        values = seed_latencies(rng, per_second)
        slow = rng.binomial(per_second, slow_share) if slow_share else 0
        slow += 1 if t % 5 == 0 and not slow else 0
        out[t] = np.concatenate([values, rng.integers(*SLOW, slow)])
    return out


def band_rows(grid: dict, bands=SEED_BANDS) -> list:
    """For each band (lo, hi) of a heat-map JSON grid: the set of rows holding events whose
    row overlaps it."""
    edges = grid["edges"]
    busy = [r for r, row in enumerate(grid["counts"]) if any(row)]
    return [{r for r in busy if edges[r] < hi and edges[r + 1] > lo} for lo, hi in bands]


def bands_apart(grid: dict, bands=SEED_BANDS) -> bool:
    """True when every band has rows of its own: none empty, no row shared by two bands."""
    rows = band_rows(grid, bands)
    return all(rows) and all(not (a & b) for i, a in enumerate(rows) for b in rows[i + 1:])
